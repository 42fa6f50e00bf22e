package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// The exit codes, documented in the package comment and in docs/taskctl.md.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitUnreachable = 3
	exitNotFound    = 4
	exitDeclined    = 5
	exitInterrupted = 130
)

// exitError carries the exit code of an error that taskctl classified
// itself; every other error is classified by exitCode.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usagef reports bad usage: a flag, an argument or an input line.
func usagef(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// notFoundf reports an unknown topic or task.
func notFoundf(format string, args ...any) error {
	return &exitError{code: exitNotFound, err: fmt.Errorf(format, args...)}
}

// unreachable reports a database that cannot be used at all.
func unreachable(err error) error { return &exitError{code: exitUnreachable, err: err} }

// errDeclined is the answer "no" at a confirmation prompt.
var errDeclined = &exitError{code: exitDeclined, err: errors.New("not confirmed: nothing changed")}

// exitCode maps err to the exit code the user sees.
func exitCode(err error) int {
	var e *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &e):
		return e.code
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.Is(err, taskapi.ErrInvalidArgument), errors.Is(err, ops.ErrUsage):
		return exitUsage
	case errors.Is(err, taskapi.ErrUnknownTopic), errors.Is(err, ops.ErrNotFound):
		return exitNotFound
	}
	return exitFailure
}
