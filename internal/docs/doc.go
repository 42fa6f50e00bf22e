// Package docs holds no code: its tests keep the documentation true. Every
// Go code block of README.md and docs/*.md is found, line for line, in a
// function of examples_test.go, which the Go compiler checks with the
// rest of the tests, so that no block drifts from the API; every SQL
// block runs on a migrated database of the test's own (PostgreSQL, or
// MySQL for the MySQL grants), so that none names a table, column or
// function the schema lacks; every sh line is checked against the
// packages, tests, flags and make targets it names (the blocks of taskctl
// commands are run by cmd/taskctl's tests), and every JSON block against
// what the code writes.
package docs
