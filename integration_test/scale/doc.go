// Package scale proves that every call of the repository works at 10,000
// topics (TestTopicsAtTenThousand). It is a package of its own, apart from
// integration_test, so that go test runs it beside that package from the
// start: most of its time goes to creating the topics one after another,
// which waits on the server more than it uses the machine.
package scale
