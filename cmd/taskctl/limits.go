package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// The flags of limits, which also name its values in errors and in the
// audit log.
const (
	activeFlag        = "active"
	perIdentifierFlag = "per-identifier"
)

// limitsCommand is 'topic limits TOPIC [--active N] [--per-identifier N]':
// it shows the limits of a topic, or sets those given (0 removes one),
// keeping the other.
func (a *app) limitsCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "limits TOPIC [--active N] [--per-identifier N]",
		Short: "Show the limits of a topic (the most ACTIVE tasks across the fleet, in all and per identifier), or set them (0 removes one)",
		Long: `limits shows the limits of a topic: the most ACTIVE tasks it may have at
once across every process that polls it (--active), and the most ACTIVE
tasks of one identifier (--per-identifier), such as a tenant whose tasks
carry its name. With a flag it sets that limit and keeps the other; 0
removes it. A poll that meets a limit takes fewer tasks, or none; tasks
ACTIVE when a limit is set or lowered stay ACTIVE, and the topic takes no
more until it is below the limit.`,
		Example: `  taskctl topic limits orders --active 5 --per-identifier 2
  taskctl topic limits orders
  taskctl topic limits orders --per-identifier 0   # keeps --active, removes the other
  taskctl topic limits orders --active 0 --per-identifier 0   # no limits`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			flags := cmd.Flags()
			if !flags.Changed(activeFlag) && !flags.Changed(perIdentifierFlag) {
				return showSetting(a, cmd, args[0], limitsSetting)
			}
			to, err := limitsGiven(flags)
			if err != nil {
				return err
			}
			return changeSetting(a, cmd, args[0], limitsSetting, to)
		},
	}
	// Strings, not numbers, so that a bad value's error says what a limit
	// must be, as capacity's does.
	c.Flags().String(activeFlag, "", "at most `N` ACTIVE tasks of the topic at once across the fleet; 0 removes the limit")
	c.Flags().String(perIdentifierFlag, "", "at most `N` ACTIVE tasks of one identifier of the topic at once across the fleet; 0 removes the limit")
	return c
}

// limitFlags are the flags of limits, in the order their errors are
// said, each with the limit it sets.
var limitFlags = []struct {
	name  string
	limit func(l *taskapi.Limits) *int64
}{
	{activeFlag, func(l *taskapi.Limits) *int64 { return &l.Active }},
	{perIdentifierFlag, func(l *taskapi.Limits) *int64 { return &l.PerIdentifier }},
}

// limitsGiven reads the limits given as flags and returns what they make
// of a topic's limits: a limit not given is kept.
func limitsGiven(flags *pflag.FlagSet) (func(taskapi.Limits) taskapi.Limits, error) {
	var given []func(*taskapi.Limits)
	for _, f := range limitFlags {
		if !flags.Changed(f.name) {
			continue
		}
		n, err := ops.ParseLimit("--"+f.name, flags.Lookup(f.name).Value.String())
		if err != nil {
			return nil, err
		}
		given = append(given, func(l *taskapi.Limits) { *f.limit(l) = n })
	}
	return func(l taskapi.Limits) taskapi.Limits {
		for _, set := range given {
			set(&l)
		}
		return l
	}, nil
}

// limitsJSON is the limits of a topic for scripts: null for none.
type limitsJSON struct {
	Active        *int64 `json:"active"`
	PerIdentifier *int64 `json:"per_identifier"`
}

// limitsOf writes l for JSON.
func limitsOf(l taskapi.Limits) limitsJSON {
	return limitsJSON{Active: optional(l.Active), PerIdentifier: optional(l.PerIdentifier)}
}

// limitsReport is limits' output for scripts.
type limitsReport struct {
	Topic string `json:"topic"`
	limitsJSON
}

// limitsSetting is the limits of a topic, for showSetting and
// changeSetting.
var limitsSetting = setting[taskapi.Limits]{
	what:   "limits",
	read:   store.Limits,
	set:    store.SetLimits,
	text:   limitsText,
	report: func(topic string, l taskapi.Limits) any { return limitsReport{Topic: topic, limitsJSON: limitsOf(l)} },
	args: func(l taskapi.Limits) map[string]any {
		return map[string]any{activeFlag: l.Active, perIdentifierFlag: l.PerIdentifier}
	},
}

// limitsText says the limits of topic in words.
func limitsText(topic string, l taskapi.Limits) string {
	if words := ops.LimitsWords(l, decimal); words != "" {
		return fmt.Sprintf("%s: %s", topic, words)
	}
	return fmt.Sprintf("%s has no limits: its polls take any number of tasks", topic)
}

// decimal writes n as taskctl's tables and messages do, without
// separators.
func decimal(n int64) string { return strconv.FormatInt(n, 10) }
