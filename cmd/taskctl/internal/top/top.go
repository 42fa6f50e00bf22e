package top

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/output"
)

// Once prints one reading to w as a table, or as JSON when asJSON.
func Once(ctx context.Context, s Store, cfg Config, w io.Writer, asJSON bool) error {
	snap, err := takeTopSnapshot(ctx, s, cfg, time.Now())
	if err != nil {
		return fmt.Errorf("read %s: %w", s.Shown(), err)
	}
	if asJSON {
		return output.JSON(w, snap.toJSON(cfg))
	}
	if len(snap.topics) == 0 {
		fmt.Fprintf(w, "no topics: 'taskctl topic init NAME' adds one\n")
	} else {
		output.Table(w, topHeaders, snap.rows(cfg))
	}
	fmt.Fprintf(w, "%s\n", snap.ownersLine(cfg))
	return nil
}
