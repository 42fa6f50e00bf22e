package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// regression is how much worse than the baseline a taskrepo figure may get.
const regression = 0.10

// compareBaseline compares taskrepo's figures with those of the baseline
// file and reports every figure more than 10% worse. It fails only with
// --strict, since a shared machine is noisy. Runs of different scales
// (--quick against a full run) are not compared.
func compareBaseline(w io.Writer, cfg config, current *Report) error {
	if cfg.baseline == "" {
		return nil
	}
	data, err := os.ReadFile(cfg.baseline)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(w, "baseline %s: none, nothing compared\n", cfg.baseline)
		return nil
	}
	if err != nil {
		return err
	}
	var base Report
	if err := json.Unmarshal(data, &base); err != nil {
		return fmt.Errorf("baseline %s: %w", cfg.baseline, err)
	}
	if base.Quick != current.Quick {
		fmt.Fprintf(w, "baseline %s: quick=%v, this run quick=%v: scales differ, nothing compared\n", cfg.baseline, base.Quick, current.Quick)
		return nil
	}
	worse := regressions(&base, current)
	fmt.Fprintf(w, "baseline %s (%s): %d taskrepo figures more than %.0f%% worse\n", cfg.baseline, base.Date, len(worse), regression*100)
	for _, line := range worse {
		fmt.Fprintln(w, "  "+line)
	}
	if cfg.strict && len(worse) > 0 {
		return fmt.Errorf("%d figures regressed against %s", len(worse), cfg.baseline)
	}
	return nil
}

// regressions lists the taskrepo figures of current that are more than 10%
// worse than in base.
func regressions(base, current *Report) []string {
	before := map[string]Figure{}
	for _, f := range base.Figures {
		before[f.Key] = f
	}
	var worse []string
	for _, f := range current.Figures {
		b, ok := before[f.Key]
		if !ok || f.Taskrepo == nil || b.Taskrepo == nil || *f.Taskrepo <= 0 || *b.Taskrepo <= 0 {
			continue
		}
		change := *f.Taskrepo / *b.Taskrepo // above 1: better when higher is better
		if f.Lower {
			change = 1 / change
		}
		if change < 1-regression {
			worse = append(worse, fmt.Sprintf("%s: %s %s, was %s (%.0f%% worse)",
				f.Name, number(f.Taskrepo), f.Unit, number(b.Taskrepo), (1-change)*100))
		}
	}
	return worse
}
