// Package integration_test runs the conformance suite, and the tests that
// need several packages at once, against real databases. See package
// internal/testkit/testdb for where the databases come from.
package integration_test
