// Package scale proves that every call of the repository works at 10,000
// topics (TestTopicsAtTenThousand). The test takes about ten minutes, so
// it is built only with the tag heavy: go test -tags heavy
// ./integration_test/scale (.ci/run runs it as a step of its own after
// README's test command).
package scale
