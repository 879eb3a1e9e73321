package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"regexp"
	"sort"
	"strings"
)

// The report says which commit its figures were measured at: the run's line
// ("Run on DATE at commit `SHA`, ...") for every package, and a package's own note
// when -update ran it again alone ("`PKG` was run again alone on DATE at commit `SHA`...").
var (
	runCommit  = regexp.MustCompile("(?m)^Run on [^\n]* at commit `([0-9a-f]{40})`")
	noteCommit = regexp.MustCompile("(?m)^`([^`]+)` was run again alone on [^\n]* at commit `([0-9a-f]{40})`")
)

// git runs git in dir and returns its standard output.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// changedSince lists the files (slash paths from the module root) that differ
// between commit and the work tree: changed in later commits, changed and not
// committed, deleted, or new and not ignored.
func changedSince(dir, commit string) ([]string, error) {
	diff, err := git(dir, "diff", "--name-only", "--no-renames", commit, "--")
	if err != nil {
		return nil, err
	}
	untracked, err := git(dir, "ls-files", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	return strings.Fields(diff + "\n" + untracked), nil
}

// covers says whether the file (a slash path from the module root) is one that
// mutation covers in t: one of its Files, or a non-test .go file of its package
// (even one deleted or not yet committed).
func covers(t target, f string) bool {
	if len(t.Files) > 0 {
		for _, g := range t.Files {
			if g == f {
				return true
			}
		}
		return false
	}
	return path.Dir(f) == t.Name && strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, "_test.go")
}

// measuredAt is how the report names what it measured: "commit `SHA`", with the
// decision files (of sel, or of every target) that differed from it if any did.
func measuredAt(sel map[string]bool) (string, error) {
	sha, err := git(".", "rev-parse", "HEAD")
	if err != nil {
		return "an unknown commit (not a git checkout)", nil //nolint:nilerr // not a git checkout (a source archive): the figures stand, unanchored
	}
	sha = strings.TrimSpace(sha)
	changed, err := changedSince(".", sha)
	if err != nil {
		return "", err
	}
	var dirty []string
	for _, f := range changed {
		for _, t := range targets {
			if covers(t, f) && (sel == nil || sel[f]) {
				dirty = append(dirty, f)
				break
			}
		}
	}
	at := "commit `" + sha + "`"
	if len(dirty) > 0 {
		sort.Strings(dirty)
		at += " with uncommitted changes to " + strings.Join(dirty, ", ")
	}
	return at, nil
}

// checkReport is -check (make lint's mutation-check): for each target it compares
// the work tree in dir with the commit the report's figures for that package were
// measured at, and names the decision files changed since, and how to refresh the
// figures. stale is true when a package's figures may no longer hold (a decision
// file changed, or the report names no commit this clone has).
func checkReport(w io.Writer, report string, ts []target, dir string) (stale bool, err error) {
	if _, err := git(dir, "rev-parse", "--git-dir"); err != nil {
		fmt.Fprintln(w, "mutation-check: skipped: not a git checkout, so nothing to compare with")
		return false, nil //nolint:nilerr // not a git checkout: nothing to compare with, said and skipped
	}
	raw, err := os.ReadFile(report)
	if os.IsNotExist(err) {
		fmt.Fprintf(w, "mutation-check: WARNING: there is no %s: run make mutate and commit it\n", report)
		return true, nil
	}
	if err != nil {
		return false, err
	}
	text := string(raw)
	at := map[string]string{}
	if m := runCommit.FindStringSubmatch(text); m != nil {
		for _, t := range ts {
			at[t.Name] = m[1]
		}
	}
	for _, m := range noteCommit.FindAllStringSubmatch(text, -1) {
		at[m[1]] = m[2]
	}
	var lines []string
	var pkgs []string
	if strings.Contains(text, "**Partial run") {
		lines = append(lines, fmt.Sprintf("  %s holds a partial run (-match, -files or -base): its figures are not the packages'", report))
	}
	for _, t := range ts {
		sha := at[t.Name]
		if sha == "" {
			lines = append(lines, fmt.Sprintf("  %s: %s records no commit for its figures", t.Name, report))
			pkgs = append(pkgs, t.Name)
			continue
		}
		changed, err := changedSince(dir, sha)
		if err != nil {
			lines = append(lines, fmt.Sprintf("  %s: measured at %.12s, a commit this clone does not have (%v)", t.Name, sha, err))
			pkgs = append(pkgs, t.Name)
			continue
		}
		var files []string
		for _, f := range changed {
			if covers(t, f) {
				files = append(files, f)
			}
		}
		if len(files) > 0 {
			sort.Strings(files)
			lines = append(lines, fmt.Sprintf("  %s (measured at %.12s): %s", t.Name, sha, strings.Join(files, ", ")))
			pkgs = append(pkgs, t.Name)
		}
	}
	if len(lines) == 0 {
		fmt.Fprintf(w, "mutation-check: %s is current: no decision file changed since the commit its figures were measured at\n", report)
		return false, nil
	}
	fmt.Fprintf(w, "mutation-check: WARNING: %s's kill rates may no longer hold; decision files changed since they were measured:\n", report)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w, "  to see the changed files' mutants (minutes): make mutate-changed BASE=<the commit above>")
	for _, p := range pkgs {
		fmt.Fprintf(w, "  to refresh %s's figures: make mutate MUTATE_ARGS='-only %s -update', then commit %s\n", p, p, report)
	}
	return true, nil
}
