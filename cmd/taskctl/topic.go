package main

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/taskrepo/taskrepo/taskapi"
)

func (a *app) topicCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "topic",
		Short: "List, add, remove, pause, resume and drain topics, and bound them with a capacity",
		Example: `  taskctl topic init orders invoices
  taskctl topic pause orders     # consumers claim nothing; what they hold goes on
  taskctl topic drain orders     # consumers claim nothing and finish what they hold
  taskctl topic resume orders
  taskctl topic capacity orders 10000  # a push that would leave more READY tasks fails
  taskctl topic capacity orders        # shows it; 0 removes it
  taskctl topic list --json`,
	}
	c.AddCommand(
		&cobra.Command{
			Use: "list", Short: "List the topics, their activation and their capacity", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return a.topicList(cmd) },
		},
		&cobra.Command{
			Use: "init TOPIC...", Short: "Add topics (one partition each on PostgreSQL)", Args: cobra.MinimumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error { return a.topicInit(cmd, args) },
		},
		a.topicDestroyCommand(),
		a.activationCommand("pause", "Stop consumers claiming tasks of topics; what they hold goes on", taskapi.Paused),
		a.activationCommand("drain", "Stop consumers claiming tasks of topics and let them finish what they hold", taskapi.Draining),
		a.activationCommand("resume", "Let consumers claim tasks of topics again", taskapi.Running),
		a.capacityCommand(),
	)
	return c
}

// topicRow is a topic as topic list --json prints it; Capacity is null
// when the topic has none.
type topicRow struct {
	Topic      string `json:"topic"`
	Activation string `json:"activation"`
	Capacity   *int64 `json:"capacity"`
}

// topicList lists every topic with its activation and its capacity.
func (a *app) topicList(cmd *cobra.Command) error {
	s, err := a.open(cmd.Context())
	if err != nil {
		return err
	}
	topics, err := s.Topics(cmd.Context())
	if err != nil {
		return err
	}
	activations, err := s.Activations(cmd.Context())
	if err != nil {
		return err
	}
	capacities, err := s.Capacities(cmd.Context())
	if err != nil {
		return fmt.Errorf("read the capacities: %w", err)
	}
	rows := make([]topicRow, 0, len(topics))
	cells := make([][]string, 0, len(topics))
	for _, t := range topics {
		rows = append(rows, topicRow{Topic: t, Activation: activations[t].String(), Capacity: optionalCapacity(capacities[t])})
		cells = append(cells, []string{t, activations[t].String(), capacityCell(capacities[t])})
	}
	if a.json {
		return a.printJSON(rows)
	}
	if len(rows) == 0 {
		a.printf("no topics: 'taskctl topic init NAME' adds one\n")
		return nil
	}
	a.printTable([]string{"TOPIC", "ACTIVATION", "CAPACITY"}, cells)
	return nil
}

// capacityCell writes a capacity in a table: "-" for none.
func capacityCell(capacity int64) string {
	if capacity <= 0 {
		return "-"
	}
	return strconv.FormatInt(capacity, 10)
}

// optionalCapacity is a capacity for JSON: nil, null, for none.
func optionalCapacity(capacity int64) *int64 {
	if capacity <= 0 {
		return nil
	}
	return &capacity
}

func (a *app) topicInit(cmd *cobra.Command, topics []string) error {
	s, err := a.open(cmd.Context())
	if err != nil {
		return err
	}
	var added []string
	for _, t := range topics {
		created, err := s.Initialize(cmd.Context(), t)
		if err != nil {
			a.audited(s, change{cmd: cmd, topics: topics, changed: int64(len(added)), outcome: fmt.Sprintf("added %q", added)}, err)
			return err
		}
		if created {
			added = append(added, t)
		}
	}
	a.audited(s, change{cmd: cmd, topics: topics, changed: int64(len(added)), outcome: fmt.Sprintf("added %q", nonNil(added))}, nil)
	if a.json {
		return a.printJSON(map[string][]string{"added": nonNil(added)})
	}
	for _, t := range topics {
		if slices.Contains(added, t) {
			a.printf("added topic %q\n", t)
		} else {
			a.printf("topic %q exists already\n", t)
		}
	}
	return nil
}

func (a *app) topicDestroyCommand() *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "destroy TOPIC...",
		Short: "Remove topics with every task in them (asks first on a terminal unless --yes)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, topics []string) error {
			s, err := a.openTopics(cmd.Context(), topics...)
			if err != nil {
				return err
			}
			if err := a.confirm(cmd.Context(), yes, "Destroy %d topic(s) with every task in them: %q?", len(topics), topics); err != nil {
				return err
			}
			var destroyed []string
			for _, t := range topics {
				if _, err := s.Destroy(cmd.Context(), t); err != nil {
					a.audited(s, change{cmd: cmd, topics: topics, changed: int64(len(destroyed)), outcome: fmt.Sprintf("destroyed %q", destroyed)}, err)
					return err
				}
				destroyed = append(destroyed, t)
			}
			a.audited(s, change{cmd: cmd, topics: topics, changed: int64(len(destroyed)), outcome: fmt.Sprintf("destroyed %q", destroyed)}, nil)
			if a.json {
				return a.printJSON(map[string][]string{"destroyed": topics})
			}
			a.printf("destroyed %q\n", topics)
			return nil
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return c
}

func (a *app) activationCommand(name, short string, activation taskapi.Activation) *cobra.Command {
	return &cobra.Command{
		Use: name + " TOPIC...", Short: short, Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, topics []string) error {
			s, err := a.openTopics(cmd.Context(), topics...)
			if err != nil {
				return err
			}
			for i, t := range topics {
				if err := s.SetActivation(cmd.Context(), t, activation); err != nil {
					a.audited(s, change{cmd: cmd, topics: topics, changed: int64(i), outcome: fmt.Sprintf("set %q %s", topics[:i], activation)}, err)
					return err
				}
			}
			a.audited(s, change{cmd: cmd, topics: topics, changed: int64(len(topics)), outcome: fmt.Sprintf("set %q %s", topics, activation)}, nil)
			if a.json {
				return a.printJSON(map[string]any{"topics": topics, "activation": activation.String()})
			}
			for _, t := range topics {
				a.printf("%s is %s\n", t, activation)
			}
			return nil
		},
	}
}

// nonNil makes a nil slice an empty one, so that JSON shows [] not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
