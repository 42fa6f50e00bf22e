// Package faults proves taskrepo's durability under the faults
// production brings: consumer processes killed mid-batch, and more (see
// docs/guarantees.md). Its tests start real child processes (./worker)
// against a real PostgreSQL.
package faults
