package main

import (
	"errors"
	"fmt"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// capacityArg names capacity's N in its errors and in the audit log.
const capacityArg = "capacity"

// capacityCommand is 'topic capacity TOPIC [N] [--per-identifier M]': it
// shows the capacity of a topic, or sets what is given (0 removes a
// bound), keeping the rest.
func (a *app) capacityCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "capacity TOPIC [N] [--per-identifier M]",
		Short: "Show the capacity of a topic (the most READY tasks a push may leave in it, in all and per identifier), or set it (0 removes a bound)",
		Long: `capacity shows the capacity of a topic: the most READY tasks (deferred ones
included) that pushes may leave in it (N), and the most READY tasks of one
identifier (--per-identifier), such as a tenant whose tasks carry its name.
With N or the flag it sets that bound and keeps the other; 0 removes it. A
push that would leave more READY tasks in the topic, or of one identifier,
fails and changes nothing; a topic (an identifier) that holds more already
keeps them, and refuses pushes until consumers take it below its bound.`,
		Example: `  taskctl topic capacity orders 10000
  taskctl topic capacity orders --per-identifier 50   # one tenant's pushes fail, the others' do not
  taskctl topic capacity orders
  taskctl topic capacity orders 0 --per-identifier 0   # no capacity: every push is admitted`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && !cmd.Flags().Changed(perIdentifierFlag) {
				return showSetting(a, cmd, args[0], capacitySetting)
			}
			return a.setCapacity(cmd, args)
		},
	}
	c.Flags().String(perIdentifierFlag, "", "at most `M` READY tasks of one identifier of the topic; 0 removes the bound")
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
// the topic has no bound of its own, PerIdentifier when its identifiers
// have none.
type capacityReport struct {
	Topic         string `json:"topic"`
	Capacity      *int64 `json:"capacity"`
	PerIdentifier *int64 `json:"per_identifier"`
}

// capacitySetting is the capacity of a topic, for showSetting and
// changeSetting.
var capacitySetting = setting[taskapi.Capacity]{
	what: capacityArg,
	read: store.Capacities,
	set:  store.SetCapacity,
	text: capacityText,
	report: func(topic string, c taskapi.Capacity) any {
		return capacityReport{Topic: topic, Capacity: optional(c.Ready), PerIdentifier: optional(c.PerIdentifier)}
	},
	args: func(c taskapi.Capacity) map[string]any {
		return map[string]any{capacityArg: c.Ready, perIdentifierFlag: c.PerIdentifier}
	},
}

// setCapacity sets the bounds given of the capacity of topic (args[0]):
// N (args[1]) and --per-identifier, 0 removing one, and keeps the other;
// it records the change in the audit log.
func (a *app) setCapacity(cmd *cobra.Command, args []string) error {
	var given []func(*taskapi.Capacity)
	if len(args) == 2 {
		n, err := ops.ParseCapacity(capacityArg, args[1])
		if err != nil {
			return err
		}
		given = append(given, func(c *taskapi.Capacity) { c.Ready = n })
	}
	if flags := cmd.Flags(); flags.Changed(perIdentifierFlag) {
		n, err := ops.ParseCapacity("--"+perIdentifierFlag, flags.Lookup(perIdentifierFlag).Value.String())
		if err != nil {
			return err
		}
		given = append(given, func(c *taskapi.Capacity) { c.PerIdentifier = n })
	}
	return changeSetting(a, cmd, args[0], capacitySetting, func(c taskapi.Capacity) taskapi.Capacity {
		for _, set := range given {
			set(&c)
		}
		return c
	})
}

// capacityText says the capacity of topic in words.
func capacityText(topic string, c taskapi.Capacity) string {
	switch {
	case c.Ready <= 0 && c.PerIdentifier <= 0:
		return fmt.Sprintf("%s has no capacity: every push is admitted", topic)
	case c.PerIdentifier <= 0:
		return fmt.Sprintf("%s has a capacity of %d READY tasks", topic, c.Ready)
	case c.Ready <= 0:
		return fmt.Sprintf("%s has a capacity of %d READY tasks per identifier", topic, c.PerIdentifier)
	}
	return fmt.Sprintf("%s has a capacity of %d READY tasks, %d per identifier", topic, c.Ready, c.PerIdentifier)
}
