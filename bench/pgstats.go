package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// clockTicks is the unit of utime and stime in /proc/<pid>/stat
// (sysconf(_SC_CLK_TCK), 100 on every common Linux build).
const clockTicks = 100

// cost is what the server spent on a measured phase.
type cost struct {
	CPUSeconds float64 // CPU of the backends of the scenario's database; NaN when unknown
	WALBytes   float64 // WAL written by the whole server
}

// costMeter reads the server's counters at the start of a phase.
type costMeter struct {
	pool *pgxpool.Pool
	wal  float64
	cpu  map[int]float64 // seconds by backend pid
}

// startCost takes the first reading. The CPU is that of the server processes
// serving the scenario's database (pg_stat_activity), read from /proc, so it
// works only when the server runs on this machine. The WAL is the advance of
// the server's insert position (pg_stat_wal lags by up to a second, since
// backends report to it in batches), so whatever else writes at the same
// time is counted too.
func startCost(ctx context.Context, pool *pgxpool.Pool) (*costMeter, error) {
	m := &costMeter{pool: pool}
	var err error
	if m.wal, err = walBytes(ctx, pool); err != nil {
		return nil, err
	}
	m.cpu, err = backendCPU(ctx, pool)
	return m, err
}

// stop takes the second reading and returns the difference.
func (m *costMeter) stop(ctx context.Context) (cost, error) {
	wal, err := walBytes(ctx, m.pool)
	if err != nil {
		return cost{}, err
	}
	cpu, err := backendCPU(ctx, m.pool)
	if err != nil {
		return cost{}, err
	}
	c := cost{WALBytes: wal - m.wal, CPUSeconds: math.NaN()}
	if len(cpu) > 0 {
		c.CPUSeconds = 0
		for pid, seconds := range cpu {
			c.CPUSeconds += seconds - m.cpu[pid] // a new backend started at zero
		}
	}
	return c, nil
}

func walBytes(ctx context.Context, pool *pgxpool.Pool) (float64, error) {
	var bytes float64
	if err := pool.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::float8").Scan(&bytes); err != nil {
		return 0, fmt.Errorf("read the WAL position: %w", err)
	}
	return bytes, nil
}

// backendCPU returns the CPU seconds used so far by each server process of
// the pool's database, or nothing when /proc does not show them.
func backendCPU(ctx context.Context, pool *pgxpool.Pool) (map[int]float64, error) {
	// Client backends only: an autovacuum worker of the database is the
	// server's housekeeping, started and ended at random between readings.
	rows, err := pool.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'")
	if err != nil {
		return nil, fmt.Errorf("list backends: %w", err)
	}
	defer rows.Close()
	cpu := map[int]float64{}
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			return nil, err
		}
		if seconds, ok := processCPU(pid); ok {
			cpu[pid] = seconds
		}
	}
	return cpu, rows.Err()
}

// processCPU returns utime+stime of a process in seconds.
func processCPU(pid int) (float64, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces; the fields after it
	// do not. utime and stime are the 14th and 15th fields.
	text := string(stat)
	open, end := strings.IndexByte(text, '('), strings.LastIndexByte(text, ')')
	if open < 0 || end < open || text[open+1:end] != "postgres" {
		return 0, false
	}
	fields := strings.Fields(text[end+1:])
	if len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return (utime + stime) / clockTicks, true
}
