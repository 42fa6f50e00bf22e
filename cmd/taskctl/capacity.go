package main

import (
	"errors"
	"fmt"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
)

// capacityArg names capacity's N in its errors and in the audit log.
const capacityArg = "capacity"

// capacityCommand is 'topic capacity TOPIC [N]': it shows the capacity of
// a topic, or sets it (0 removes it).
func (a *app) capacityCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "capacity TOPIC [N]",
		Short: "Show the capacity of a topic (the most READY tasks a push may leave in it), or set it to N (0 removes it)",
		Long: `capacity shows the capacity of a topic: the most READY tasks (deferred ones
included) that pushes may leave in it. With N it sets the capacity, and 0
removes it. A push that would leave more READY tasks in the topic fails and
changes nothing; a topic that holds more already keeps them, and refuses
pushes until consumers take it below its capacity.`,
		Example: `  taskctl topic capacity orders 10000
  taskctl topic capacity orders
  taskctl topic capacity orders 0   # no capacity: every push is admitted`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				return a.showCapacity(cmd, args[0])
			}
			return a.setCapacity(cmd, args[0], args[1])
		},
	}
	c.SetFlagErrorFunc(capacityFlagError)
	return c
}

// capacityFlagError is capacity's flag error: a negative N ("-1") reads as
// a flag, and its error would name an unknown shorthand flag; it says
// instead what N must be.
func capacityFlagError(_ *cobra.Command, err error) error {
	var unknown *pflag.NotExistError
	if errors.As(err, &unknown) {
		if given := unknown.GetSpecifiedShortnames(); given != "" && unicode.IsDigit(rune(given[0])) {
			_, err = ops.ParseCapacity(capacityArg, "-"+given)
		}
	}
	return usagef("%v", err)
}

// capacityReport is capacity's output for scripts; Capacity is null when
// the topic has none.
type capacityReport struct {
	Topic    string `json:"topic"`
	Capacity *int64 `json:"capacity"`
}

// showCapacity prints the capacity of topic.
func (a *app) showCapacity(cmd *cobra.Command, topic string) error {
	s, err := a.openTopics(cmd.Context(), topic)
	if err != nil {
		return err
	}
	capacities, err := s.Capacities(cmd.Context())
	if err != nil {
		return fmt.Errorf("read the capacity of %q: %w", topic, err)
	}
	return a.reportCapacity(topic, capacities[topic])
}

// setCapacity sets the capacity of topic to the number given, 0 removing
// it, and records the change in the audit log.
func (a *app) setCapacity(cmd *cobra.Command, topic, given string) error {
	capacity, err := ops.ParseCapacity(capacityArg, given)
	if err != nil {
		return err
	}
	s, err := a.openTopics(cmd.Context(), topic)
	if err != nil {
		return err
	}
	if err := s.SetCapacity(cmd.Context(), topic, capacity); err != nil {
		return err // a failed SetCapacity changed nothing: nothing to audit
	}
	a.audited(s, change{cmd: cmd, topics: []string{topic}, args: map[string]any{capacityArg: capacity},
		changed: 1, outcome: capacityText(topic, capacity)}, nil)
	return a.reportCapacity(topic, capacity)
}

// reportCapacity prints the capacity of topic, as set or as read.
func (a *app) reportCapacity(topic string, capacity int64) error {
	if a.json {
		return a.printJSON(capacityReport{Topic: topic, Capacity: optionalCapacity(capacity)})
	}
	a.printf("%s\n", capacityText(topic, capacity))
	return nil
}

// capacityText says the capacity of topic in words.
func capacityText(topic string, capacity int64) string {
	if capacity <= 0 {
		return fmt.Sprintf("%s has no capacity: every push is admitted", topic)
	}
	return fmt.Sprintf("%s has a capacity of %d READY tasks", topic, capacity)
}
