package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/output"
)

// confirm asks the question on the terminal and goes on only on "y" or
// "yes". Without a terminal to ask on, only --yes goes on. Ctrl-C at the
// prompt ends the wait (the read itself cannot be interrupted, so it is
// left to the process's end).
func (a *app) confirm(ctx context.Context, yes bool, format string, args ...any) error {
	if yes {
		return nil
	}
	if !output.IsTerminal(a.stdin) {
		return usagef("this changes data and there is no terminal to ask on: pass --yes to go on")
	}
	fmt.Fprintf(a.stderr, format+" [y/N] ", args...)
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(a.stdin).ReadString('\n')
		answer <- line
	}()
	select {
	case line := <-answer:
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return nil
		}
		return errDeclined
	case <-ctx.Done():
		fmt.Fprintln(a.stderr)
		return ctx.Err()
	}
}
