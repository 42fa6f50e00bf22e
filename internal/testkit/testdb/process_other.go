//go:build !linux

package testdb

import "syscall"

// ownServersSupported says whether testdb runs servers of its own here:
// only on Linux, where a server can be made to end with the test process.
const ownServersSupported = false

// processAttr is never called where servers of testdb's own do not run.
func processAttr(*account, syscall.Signal) *syscall.SysProcAttr { return nil }

// pidAlive is never called where servers of testdb's own do not run.
func pidAlive(int) bool { return true }

// reaped is never called where servers of testdb's own do not run.
func reaped(int) (bool, error) { return true, nil }

// removeSharedMemory is never called where servers of testdb's own do not
// run.
func removeSharedMemory([]int) {}
