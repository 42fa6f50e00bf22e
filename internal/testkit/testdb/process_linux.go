//go:build linux

package testdb

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// ownServersSupported says whether testdb runs servers of its own here: on
// Linux, where a server can be made to end with the test process.
const ownServersSupported = true

// processAttr returns the attributes of a server process, or of one of its
// tools, run as a (nil: the current user). It gets a process group of its
// own, so that a Ctrl-C meant for the tests reaches it only through the
// tests' end, and deathSignal (0: none) when the thread that started it
// ends. Go ends a thread only when a goroutine locked to it returns, which
// neither testdb nor the code it serves does, so the signal comes when the
// test process ends, however it ends.
func processAttr(a *account, deathSignal syscall.Signal) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: deathSignal}
	if a != nil {
		attr.Credential = &syscall.Credential{Uid: a.uid, Gid: a.gid}
	}
	return attr
}

// pidAlive reports whether a process with pid exists (a zombie counts).
func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// reaped reports whether the child process pid has ended, collecting its
// exit status if so, without waiting. testdb reaps its servers this way
// instead of with exec.Cmd.Wait, which would need a goroutine per server
// for as long as it runs, and goleak counts goroutines.
func reaped(pid int) (bool, error) {
	for {
		var status syscall.WaitStatus
		got, err := syscall.Wait4(pid, &status, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.ECHILD):
			return true, nil
		case err != nil:
			return false, fmt.Errorf("wait for process %d: %w", pid, err)
		}
		return got == pid, nil
	}
}

// removeSharedMemory removes the System V shared memory segments that one
// of the processes pids created and that no process attaches any more: a
// PostgreSQL killed with SIGKILL leaves its small segment behind, which
// nothing else removes (the kernel keeps it until the machine stops).
func removeSharedMemory(pids []int) {
	table, err := os.ReadFile("/proc/sysvipc/shm")
	if err != nil {
		return
	}
	lines := strings.Split(string(table), "\n")
	for _, line := range lines[min(1, len(lines)):] {
		// key shmid perms size cpid lpid nattch ...
		fields := strings.Fields(line)
		if len(fields) < 7 {
			continue
		}
		id, errID := strconv.Atoi(fields[1])
		creator, errCreator := strconv.Atoi(fields[4])
		if errID != nil || errCreator != nil || fields[6] != "0" || !slices.Contains(pids, creator) {
			continue
		}
		const ipcRMID = 0
		_, _, _ = syscall.Syscall(syscall.SYS_SHMCTL, uintptr(id), ipcRMID, 0)
	}
}
