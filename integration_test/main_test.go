package integration_test

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// parallelCases is how many cases of this package run at once unless
// -parallel says otherwise. Its cases wait on the servers (commits, lock
// waits, deadlines, sessions being cut) far more than they compute, so the
// default of go test, one per core, would leave the run waiting: the five
// conformance suites alone took nine minutes one after the other on two
// cores, a little over five side by side.
const parallelCases = 6

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", fmt.Sprint(parallelCases)); err != nil {
			fmt.Fprintln(os.Stderr, "integration_test:", err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}
