package main

import (
	"strings"
	"testing"
	"time"
)

const fullReport = "# Mutation testing\n\nRun on 2026-12-01, 30m0s.\n\n## Kill rate\n\n| package | files |\n|---|---|\n" +
	"| `internal/a` | all | 9 |\n| `internal/a/b` | all | 5 |\n\n## Surviving and hung mutants\n\n" +
	"- survived `internal/a/x.go:3` f: 0 → 1\n- hung `internal/a/b/y.go:4` g: drop !\n"

// -update replaces one package's row and mutants and keeps the others'.
func TestUpdateReport(t *testing.T) {
	fresh := []byte("| `internal/a/b` | all | 6 |\n\n## Surviving and hung mutants\n\n- survived `internal/a/b/y.go:9` h: true → false\n")
	got := string(updateReport([]byte(fullReport), "internal/a/b", fresh, time.Minute, "commit `abc`"))
	for _, want := range []string{"| `internal/a` | all | 9 |\n| `internal/a/b` | all | 6 |\n",
		"- survived `internal/a/x.go:3` f: 0 → 1\n- survived `internal/a/b/y.go:9` h: true → false\n",
		"Run on 2026-12-01, 30m0s.\n\n`internal/a/b` was run again alone on "} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "drop !") {
		t.Errorf("the package's old mutant is kept:\n%s", got)
	}
	// Again, with no mutant left: the note is not repeated, and the others' stay.
	got = string(updateReport([]byte(got), "internal/a/b", []byte("| `internal/a/b` | all | 7 |\n\nNone.\n"), time.Minute, "commit `abc`"))
	if strings.Count(got, "was run again alone") != 1 || strings.Contains(got, "h: true") || !strings.Contains(got, "f: 0 → 1") {
		t.Errorf("second update:\n%s", got)
	}
	got = string(updateReport([]byte(got), "internal/a", []byte("| `internal/a` | all | 9 |\n\nNone.\n"), time.Minute, "commit `abc`"))
	if strings.Contains(got, "\n\n\n") {
		t.Errorf("two blank lines in a row:\n%s", got)
	}
	if !strings.Contains(got, "## Surviving and hung mutants\n\nNone.\n") {
		t.Errorf("no mutant left at all:\n%s", got)
	}
}

// -survivors reads the survived and hung mutants from a report and from a run's
// output alike, and nothing else.
func TestSurvivorKeys(t *testing.T) {
	raw := "- survived `internal/a/x.go:3` T.f: `a == b`: == → !=\n- hung `internal/a/x.go:9` g: drop !\n" +
		"  [7/362] survived internal/a/y.go:116 false → true\n  [8/362] killed   internal/a/y.go:118 delete assignment `x = 1`\n" +
		"  [9/362] hung     internal/a/y.go:120 delete early `return nil`\n"
	got := survivorKeys([]byte(raw))
	want := []string{"internal/a/x.go `a == b`: == → !=", "internal/a/x.go drop !", "internal/a/y.go false → true", "internal/a/y.go delete early `return nil`"}
	if len(got) != len(want) {
		t.Errorf("keys %v; want %q", got, want)
	}
	for _, k := range want {
		if !got[k] {
			t.Errorf("keys %v lack %q", got, k)
		}
	}
}
