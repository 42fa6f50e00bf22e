package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

func (a *app) topicCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "topic",
		Short: "List, add, remove, pause, resume and drain topics, and bound them with a capacity and limits",
		Example: `  taskctl topic init orders invoices
  taskctl topic pause orders     # consumers claim nothing; what they hold goes on
  taskctl topic drain orders     # consumers claim nothing and finish what they hold
  taskctl topic resume orders
  taskctl topic capacity orders 10000  # a push that would leave more READY tasks fails
  taskctl topic capacity orders        # shows it; 0 removes it
  taskctl topic limits orders --active 5 --per-identifier 2  # polls across the fleet take no more
  taskctl topic list --json`,
	}
	c.AddCommand(
		&cobra.Command{
			Use: "list", Short: "List the topics, their activation, their capacity and their limits", Args: cobra.NoArgs,
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
		a.limitsCommand(),
	)
	return c
}

// topicRow is a topic as topic list --json prints it; Capacity is null
// when the topic has no bound of its own, CapacityPerIdentifier when its
// identifiers have none, and so is each of its limits.
type topicRow struct {
	Topic                 string     `json:"topic"`
	Activation            string     `json:"activation"`
	Capacity              *int64     `json:"capacity"`
	CapacityPerIdentifier *int64     `json:"capacity_per_identifier"`
	Limits                limitsJSON `json:"limits"`
}

// topicSettings are what topic list shows of every topic besides its name.
type topicSettings struct {
	activations map[string]taskapi.Activation
	capacities  map[string]taskapi.Capacity
	limits      map[string]taskapi.Limits
}

// topicList lists every topic with its activation, its capacity and its
// limits.
func (a *app) topicList(cmd *cobra.Command) error {
	s, err := a.openReads(cmd.Context())
	if err != nil {
		return err
	}
	topics, err := s.Topics(cmd.Context())
	if err != nil {
		return err
	}
	set, err := readTopicSettings(cmd.Context(), s)
	if err != nil {
		return err
	}
	rows := make([]topicRow, 0, len(topics))
	cells := make([][]string, 0, len(topics))
	for _, t := range topics {
		activation, capacity, limits := set.activations[t].String(), set.capacities[t], set.limits[t]
		rows = append(rows, topicRow{Topic: t, Activation: activation, Capacity: optional(capacity.Ready),
			CapacityPerIdentifier: optional(capacity.PerIdentifier), Limits: limitsOf(limits)})
		cells = append(cells, []string{t, activation, capacityCell(capacity), ops.LimitsCell(limits, decimal)})
	}
	if a.json {
		return a.printJSON(rows)
	}
	if len(rows) == 0 {
		a.printf("no topics: 'taskctl topic init NAME' adds one\n")
		return nil
	}
	a.printTable([]string{"TOPIC", "ACTIVATION", "CAPACITY", "LIMITS"}, cells)
	return nil
}

// readTopicSettings reads the activations, capacities and limits of every
// topic.
func readTopicSettings(ctx context.Context, s store) (set topicSettings, err error) {
	if set.activations, err = s.Activations(ctx); err != nil {
		return set, err
	}
	if set.capacities, err = s.Capacities(ctx); err != nil {
		return set, fmt.Errorf("read the capacities: %w", err)
	}
	if set.limits, err = s.Limits(ctx); err != nil {
		return set, fmt.Errorf("read the limits: %w", err)
	}
	return set, nil
}

// capacityCell writes a capacity in a table: "-" for none, "10,000",
// "10,000, 50/identifier", "50/identifier".
func capacityCell(c taskapi.Capacity) string {
	var parts []string
	if c.Ready > 0 {
		parts = append(parts, decimal(c.Ready))
	}
	if c.PerIdentifier > 0 {
		parts = append(parts, decimal(c.PerIdentifier)+"/identifier")
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
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
