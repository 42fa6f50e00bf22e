package main

import "github.com/spf13/cobra"

func (a *app) migrateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create or update taskrepo's schema (creates an SQLite file if need be)",
		Long: `migrate applies every taskrepo migration the database does not have yet;
on an up-to-date database it does nothing. Several processes may run it at
once on PostgreSQL and MySQL (a session lock serializes them).`,
		Example: `  taskctl migrate
  taskctl migrate --database postgres://postgres@127.0.0.1:5432/app`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, from, to, err := a.openMigrated(cmd.Context())
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(map[string]any{"database": s.Shown(), "from": from, "to": to})
			}
			if from == to {
				a.printf("%s is up to date (schema version %d)\n", s.Shown(), to)
			} else {
				a.printf("migrated %s from schema version %d to %d\n", s.Shown(), from, to)
			}
			return nil
		},
	}
}
