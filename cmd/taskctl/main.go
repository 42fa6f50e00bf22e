// Command taskctl is the operator's tool for a taskrepo database: it
// migrates the schema, manages topics, pushes, lists, counts, revives,
// reassigns, defers and purges tasks, shows owners, watches every topic
// live (top), and runs a demo of the whole system (demo).
//
// The database is chosen by the scheme of --database or
// $TASKREPO_DATABASE_URL: postgres:// (taskpg), mysql:// (taskansi on MySQL
// or MariaDB) or sqlite:PATH (taskansi on an embedded SQLite file). With
// neither, it is the SQLite file taskrepo.db in the current directory.
//
// Exit codes: 0 success; 1 the operation failed; 2 bad usage or input
// (flags, arguments, URLs, input lines); 3 the database cannot be reached
// or has no schema; 4 an unknown topic or task; 5 declined at a
// confirmation prompt; 130 interrupted.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
