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
				return showSetting(a, cmd, args[0], capacitySetting)
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

// capacitySetting is the capacity of a topic, for showSetting and
// changeSetting.
var capacitySetting = setting[int64]{
	what: capacityArg,
	read: store.Capacities,
	set:  store.SetCapacity,
	text: capacityText,
	report: func(topic string, capacity int64) any {
		return capacityReport{Topic: topic, Capacity: optional(capacity)}
	},
	args: func(capacity int64) map[string]any { return map[string]any{capacityArg: capacity} },
}

// setCapacity sets the capacity of topic to the number given, 0 removing
// it, and records the change in the audit log.
func (a *app) setCapacity(cmd *cobra.Command, topic, given string) error {
	capacity, err := ops.ParseCapacity(capacityArg, given)
	if err != nil {
		return err
	}
	return changeSetting(a, cmd, topic, capacitySetting, func(int64) int64 { return capacity })
}

// capacityText says the capacity of topic in words.
func capacityText(topic string, capacity int64) string {
	if capacity <= 0 {
		return fmt.Sprintf("%s has no capacity: every push is admitted", topic)
	}
	return fmt.Sprintf("%s has a capacity of %d READY tasks", topic, capacity)
}
