package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// checkRepo is a git repository with two target packages, internal/a (every file)
// and internal/b (b.go only), committed once; it returns the directory and the commit.
func checkRepo(t *testing.T) (string, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	dir := t.TempDir()
	for name, body := range map[string]string{
		"internal/a/x.go": "package a\n", "internal/a/x_test.go": "package a\n",
		"internal/b/b.go": "package b\n", "internal/b/other.go": "package b\n",
	} {
		writeFile(t, dir, name, body)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "one"}} {
		if _, err := git(dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	sha, err := git(dir, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	return dir, strings.TrimSpace(sha)
}

func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

var checkTargets = []target{{Name: "internal/a"}, {Name: "internal/b", Files: []string{"internal/b/b.go"}}}

func runCheck(t *testing.T, dir, report string) (bool, string) {
	t.Helper()
	writeFile(t, dir, "MUTATION.md", report)
	var out strings.Builder
	stale, err := checkReport(&out, filepath.Join(dir, "MUTATION.md"), checkTargets, dir)
	if err != nil {
		t.Fatal(err)
	}
	return stale, out.String()
}

// The check is quiet while no decision file changed since the recorded commit, and
// names each one that did (changed, committed or not, or new; not tests, not files
// mutation does not cover) with the commands that refresh the figures.
func TestCheckNamesTheDecisionFilesChangedSinceTheRecordedCommit(t *testing.T) {
	dir, sha := checkRepo(t)
	report := "# Mutation testing\n\nRun on 2026-12-02 at commit `" + sha + "`, 1m0s.\n"
	if stale, out := runCheck(t, dir, report); stale || !strings.Contains(out, "is current") {
		t.Fatalf("nothing changed: stale %v\n%s", stale, out)
	}
	writeFile(t, dir, "internal/a/x_test.go", "package a // a test changed\n")
	writeFile(t, dir, "internal/b/other.go", "package b // not covered\n")
	if stale, out := runCheck(t, dir, report); stale {
		t.Fatalf("only a test and an uncovered file changed: stale\n%s", out)
	}
	writeFile(t, dir, "internal/a/x.go", "package a // changed\n")
	writeFile(t, dir, "internal/a/new.go", "package a\n")
	stale, out := runCheck(t, dir, report)
	if !stale {
		t.Fatalf("decision files changed: not stale\n%s", out)
	}
	for _, want := range []string{"WARNING", "internal/a (measured at " + sha[:12] + "): internal/a/new.go, internal/a/x.go\n",
		"make mutate MUTATE_ARGS='-only internal/a -update'", "make mutate-changed BASE="} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "x_test.go") || strings.Contains(out, "other.go") || strings.Contains(out, "internal/b") {
		t.Errorf("output names a file mutation does not cover:\n%s", out)
	}
}

// A package run again alone (-update) is measured at its note's commit; a report
// with no commit, or one this clone lacks, is stale.
func TestCheckUsesEachPackagesOwnCommit(t *testing.T) {
	dir, first := checkRepo(t)
	writeFile(t, dir, "internal/b/b.go", "package b // changed\n")
	if _, err := git(dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-am", "two"); err != nil {
		t.Fatal(err)
	}
	second, _ := git(dir, "rev-parse", "HEAD")
	report := "Run on 2026-12-01 at commit `" + first + "`, 1m0s.\n\n`internal/b` was run again alone on 2026-12-02 at commit `" +
		strings.TrimSpace(second) + "`, 1m (`-only internal/b -update`): its row and mutants are from that run.\n"
	if stale, out := runCheck(t, dir, report); stale {
		t.Fatalf("b was measured again after its change: stale\n%s", out)
	}
	stale, out := runCheck(t, dir, "Run on 2026-12-01, 1m0s.\n")
	if !stale || !strings.Contains(out, "internal/a: "+filepath.Join(dir, "MUTATION.md")+" records no commit") {
		t.Errorf("no commit recorded: stale %v\n%s", stale, out)
	}
	stale, out = runCheck(t, dir, "Run on 2026-12-01 at commit `"+strings.Repeat("0", 40)+"`, 1m0s.\n")
	if !stale || !strings.Contains(out, "a commit this clone does not have") {
		t.Errorf("unknown commit: stale %v\n%s", stale, out)
	}
}
