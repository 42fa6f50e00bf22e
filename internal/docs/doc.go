// Package docs holds no code: its tests keep the documentation true. Every
// Go code block of README.md and docs/*.md is found, line for line, in a
// function of examples_test.go, which the Go compiler checks with the
// rest of the tests, so that no block drifts from the API.
package docs
