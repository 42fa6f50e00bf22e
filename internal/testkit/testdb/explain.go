package testdb

import (
	"encoding/json"
	"fmt"
)

// ExplainPrefix runs a statement under PostgreSQL's EXPLAIN with the
// measures that Pages reads.
const ExplainPrefix = "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "

// Pages reads the output of a statement run with ExplainPrefix: how many
// rows its top node returned and how many pages it touched in shared
// buffers, hit or read. The plan tests of taskpg and taskansi count pages
// with it to prove that a statement stays on its indexes.
func Pages(plan []byte) (rows, pages int64, err error) {
	var plans []struct {
		Plan struct {
			Rows int64 `json:"Actual Rows"`
			Hit  int64 `json:"Shared Hit Blocks"`
			Read int64 `json:"Shared Read Blocks"`
		}
	}
	if err := json.Unmarshal(plan, &plans); err != nil {
		return 0, 0, fmt.Errorf("read a plan: %w", err)
	}
	if len(plans) != 1 {
		return 0, 0, fmt.Errorf("read a plan: %d plans, want one", len(plans))
	}
	p := plans[0].Plan
	return p.Rows, p.Hit + p.Read, nil
}

// Compiled reads the output of a statement run with ExplainPrefix: whether
// the server compiled it with JIT (which a plan priced above
// jit_above_cost is, under the server's default jit = on), and the
// milliseconds of its execution, compilation included.
func Compiled(plan []byte) (jit bool, ms float64, err error) {
	var plans []struct {
		Execution float64 `json:"Execution Time"`
		JIT       *struct {
			Functions int `json:"Functions"`
		} `json:"JIT"`
	}
	if err := json.Unmarshal(plan, &plans); err != nil {
		return false, 0, fmt.Errorf("read a plan: %w", err)
	}
	if len(plans) != 1 {
		return false, 0, fmt.Errorf("read a plan: %d plans, want one", len(plans))
	}
	p := plans[0]
	return p.JIT != nil && p.JIT.Functions > 0, p.Execution, nil
}

// Scanned reads the output of a statement run with ExplainPrefix: how many
// rows its scans of table read in all, those they returned and those their
// filters removed, over every loop. A table is named as the plan names it:
// a partition by its own name. Unlike pages, which a scan reads once for
// many rows, it counts each row that a filter looked at.
func Scanned(plan []byte, table string) (int64, error) {
	var plans []struct {
		Plan scanNode
	}
	if err := json.Unmarshal(plan, &plans); err != nil {
		return 0, fmt.Errorf("read a plan: %w", err)
	}
	if len(plans) != 1 {
		return 0, fmt.Errorf("read a plan: %d plans, want one", len(plans))
	}
	return plans[0].Plan.scanned(table), nil
}

// scanNode is a node of a plan, as much as Scanned reads of it. The rows
// are the averages of a loop, as EXPLAIN gives them.
type scanNode struct {
	Relation string     `json:"Relation Name"`
	Rows     float64    `json:"Actual Rows"`
	Loops    float64    `json:"Actual Loops"`
	Filtered float64    `json:"Rows Removed by Filter"`
	Plans    []scanNode `json:"Plans"`
}

func (n scanNode) scanned(table string) int64 {
	var rows int64
	if n.Relation == table {
		rows = int64((n.Rows + n.Filtered) * n.Loops)
	}
	for _, c := range n.Plans {
		rows += c.scanned(table)
	}
	return rows
}
