package main

import (
	"bufio"
	"fmt"
	"strings"
)

// confirm asks the question on the terminal and goes on only on "y" or
// "yes". Without a terminal to ask on, only --yes goes on.
func (a *app) confirm(yes bool, format string, args ...any) error {
	if yes {
		return nil
	}
	if !isTerminal(a.stdin) {
		return usagef("this changes data and there is no terminal to ask on: pass --yes to go on")
	}
	fmt.Fprintf(a.stderr, format+" [y/N] ", args...)
	line, _ := bufio.NewReader(a.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return errDeclined
}
