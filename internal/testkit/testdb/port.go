package testdb

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowestPort is the lowest port freePort picks at random.
const lowestPort = 10000

// freePort returns a TCP port on 127.0.0.1 that nothing listens on. It
// picks one at random below the kernel's range of ephemeral ports, from
// which outgoing connections take theirs, so that a server stopped and
// started again does not find its port taken by some test's client in
// between; it asks the kernel for an ephemeral one (":0") when that range
// is unknown. Another process may still take the port before the server
// listens on it: the caller retries with another.
func freePort() (int, error) {
	if high := ephemeralLow(); high > lowestPort+1000 {
		for range 20 {
			port := lowestPort + rand.IntN(high-lowestPort)
			if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
				l.Close()
				return port, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ephemeralLow returns the lowest ephemeral port of Linux, 0 when unknown.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return 0
	}
	low, _ := strconv.Atoi(fields[0])
	return low
}
