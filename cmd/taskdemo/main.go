// Command taskdemo shows taskrepo's three roles on a real database: a
// producer that pushes tasks inside its own business transactions, consumers
// that poll and complete them concurrently, and an operator that counts,
// revives and purges.
//
// By default it runs on an embedded SQLite database (taskansi) in a
// temporary file, so it needs nothing installed. With --postgres URL, or
// $TASK_DATABASE_URL, it runs taskpg on that PostgreSQL database, brings the
// schema up to date there and leaves its tables behind.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
)

func main() {
	postgres := flag.String("postgres", os.Getenv("TASK_DATABASE_URL"),
		"PostgreSQL URL to run taskpg on (default: embedded SQLite)")
	flag.Parse()
	ctx := context.Background()
	var err error
	if *postgres != "" {
		fmt.Println("taskpg on PostgreSQL")
		err = runPostgres(ctx, *postgres)
	} else {
		fmt.Println("taskansi on an embedded SQLite database")
		err = runSQLite(ctx)
	}
	if err != nil {
		log.Fatal(err)
	}
}
