// Command mutate is `make mutate`: mutation testing of the decision code. Run from
// the module root:
//
//	go run ./internal/mutate/cmd/mutate [-out MUTATION.md] [-only internal/ifi] [-list]
//	go run ./internal/mutate/cmd/mutate -files internal/converge/cluster.go,internal/ifi/plan.go -out /tmp/m.md
//	go run ./internal/mutate/cmd/mutate -base main -out /tmp/m.md   (the decision files changed since main)
//	go run ./internal/mutate/cmd/mutate -check [-strict]   (make lint: are MUTATION.md's figures current?)
//
// For each target package it builds the test binary once unchanged (its tests must
// pass), then once per mutant with the mutated file given to the compiler as an
// overlay (go test -overlay: no file in the work tree changes), runs it with a
// deadline and records the mutant as killed, survived, hung or invalid (does not
// compile). Mutants listed in internal/mutate/ignored.txt (equivalent to the
// original, or changing only a log line, each with its reason) are left out.
// It writes the kill rate of each package and the surviving mutants to MUTATION.md,
// with the commit they were measured at; -check (check.go) names the decision files
// changed since that commit.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/mutate"
)

// target is one package under mutation.
type target struct {
	Name  string   // the package as the report names it
	Files []string // the files mutated; empty: every non-test .go file of the package
	Run   string   // the tests run (-test.run); empty: all
	// Wait is the least time a mutant's tests get before they count as hung: more
	// than the longest bound a test of the package puts on its own waits.
	Wait time.Duration
}

// targets are the decision core of issue 19: the IFI rules, the converge loop, the
// operation contract, and the sealing of WinRM messages (for internal/remote only
// the tests of the sealing, to keep the run short).
var targets = []target{
	{Name: "internal/ifi"},
	{Name: "internal/contract"},
	{Name: "internal/remote/krb", Files: []string{"internal/remote/krb/wrap.go"}},
	{Name: "internal/remote", Files: []string{"internal/remote/encryption.go"},
		Run: "^(TestUnwrapBody|TestWrapBody|TestIsEncryptedType|TestEncrypted|TestNTLMOverHTTPEncryptsEveryBody|TestKerberosHostWithFillerAndAcceptorSubkey|FuzzUnwrapBody)"},
	// Last: the slowest (its tests wait on real deadlines for about 11 s, and some
	// bound a wait by 30 s, which a mutant may use up).
	{Name: "internal/converge", Wait: 90 * time.Second},
}

func main() {
	out := flag.String("out", "MUTATION.md", "the report to write")
	ignoreFile := flag.String("ignore", "internal/mutate/ignored.txt", "mutants left out, with the reason of each")
	only := flag.String("only", "", "run only this package (e.g. internal/ifi); the report then covers only it")
	list := flag.Bool("list", false, "list the mutants and their IDs; run nothing")
	match := flag.String("match", "", "run only the mutants whose \"file:line description\" matches this regular expression (a partial run; checking tests)")
	update := flag.Bool("update", false, "with -only: re-run that package and replace its row and mutants in the existing report, keeping the others")
	jobs := flag.Int("j", 4, "mutants whose tests run at once (they mostly wait; one builds at a time)")
	files := flag.String("files", "", "run only the mutants of these decision files (comma-separated, from the module root); a partial run")
	base := flag.String("base", "", "run only the mutants of the decision files changed since this commit or branch's merge base with HEAD (committed, uncommitted or new); a partial run")
	survivors := flag.String("survivors", "", "run only the mutants a report (or a run's output) lists as survived or hung: a quick check that new tests kill them; a partial run")
	check := flag.Bool("check", false, "run nothing: say which decision files changed since the commit the report's figures were measured at")
	strict := flag.Bool("strict", false, "with -check: exit 1 when some did")
	flag.Parse()
	if *check {
		stale, err := checkReport(os.Stdout, *out, targets, ".")
		if err != nil {
			fmt.Fprintln(os.Stderr, "mutate -check:", err)
			os.Exit(1)
		}
		if stale && *strict {
			os.Exit(1)
		}
		return
	}
	re, err := regexp.Compile(*match)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate: -match:", err)
		os.Exit(2)
	}
	var again map[string]bool
	if *survivors != "" {
		raw, err := os.ReadFile(*survivors)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mutate: -survivors:", err)
			os.Exit(2)
		}
		again = survivorKeys(raw)
		if *update {
			fmt.Fprintln(os.Stderr, "mutate: -update runs a whole package: not with -survivors")
			os.Exit(2)
		}
	}
	if *update && (*only == "" || *match != "") {
		fmt.Fprintln(os.Stderr, "mutate: -update needs -only and no -match")
		os.Exit(2)
	}
	sel, err := selectFiles(*files, *base)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(2)
	}
	if *update && sel != nil {
		fmt.Fprintln(os.Stderr, "mutate: -update runs a whole package: not with -files or -base")
		os.Exit(2)
	}
	if sel != nil && len(sel) == 0 {
		fmt.Println("mutate: no decision file changed since", *base, "(nothing to run)")
		return
	}
	if err := run(*out, *ignoreFile, *only, *list, max(*jobs, 1), re, *update, sel, again); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

// selectFiles is the set of decision files -files and -base name: nil when neither
// is given (every file), empty when -base finds no decision file changed.
func selectFiles(files, base string) (map[string]bool, error) {
	if files == "" && base == "" {
		return nil, nil
	}
	covered := map[string]bool{}
	for _, t := range targets {
		fs, err := decisionFiles(t)
		if err != nil {
			return nil, err
		}
		for _, f := range fs {
			covered[f] = true
		}
	}
	sel := map[string]bool{}
	for _, f := range strings.FieldsFunc(files, func(r rune) bool { return r == ',' || r == ' ' }) {
		f = filepath.ToSlash(filepath.Clean(f))
		if !covered[f] {
			return nil, fmt.Errorf("-files: %s is not a file mutation covers (a non-test .go file of a target package)", f)
		}
		sel[f] = true
	}
	if base != "" {
		mb, err := git(".", "merge-base", base, "HEAD")
		if err != nil {
			return nil, fmt.Errorf("-base %s: %w", base, err)
		}
		changed, err := changedSince(".", strings.TrimSpace(mb))
		if err != nil {
			return nil, err
		}
		for _, f := range changed {
			if covered[f] {
				sel[f] = true
			}
		}
	}
	return sel, nil
}

func run(out, ignoreFile, only string, list bool, jobs int, match *regexp.Regexp, update bool, sel, again map[string]bool) error {
	if _, err := os.Stat("go.mod"); err != nil {
		return errors.New("run from the module root (where go.mod is)")
	}
	raw, err := os.ReadFile(ignoreFile)
	if err != nil {
		return err
	}
	ignored, err := mutate.ParseIgnored(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", ignoreFile, err)
	}
	tmp, err := os.MkdirTemp("", "mutate-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()

	used := map[string]bool{}
	var tallies []mutate.Tally
	results := map[string][]mutate.Result{}
	started := time.Now()
	for _, t := range targets {
		if only != "" && t.Name != only {
			continue
		}
		all, err := mutants(t, sel)
		if err != nil {
			return err
		}
		if len(all) == 0 && sel != nil {
			continue // none of the files chosen is this package's
		}
		var ms []mutate.Mutant
		for _, m := range all {
			if again != nil && !again[m.File+" "+m.Desc] {
				continue
			}
			if match.MatchString(fmt.Sprintf("%s:%d %s", m.File, m.Line, m.Desc)) {
				ms = append(ms, m)
			}
		}
		if list {
			for _, m := range ms {
				fmt.Printf("%s:%d\t%s\n", m.File, m.Line, m.ID)
			}
			continue
		}
		began := time.Now()
		rs, err := runTarget(t, ms, ignored, used, tmp, jobs)
		if err != nil {
			return err
		}
		tally := mutate.Count(t.Name, rs)
		fmt.Printf("%s: %d valid, %d killed, %d survived, %d hung, %d invalid, %d ignored: %.1f %% (%s)\n",
			t.Name, tally.Valid(), tally.Killed, tally.Survived, tally.Hung, tally.Invalid, tally.Ignored, tally.Rate(),
			time.Since(began).Round(time.Second))
		tallies = append(tallies, tally)
		results[t.Name] = rs
	}
	if list {
		return nil
	}
	at, err := measuredAt(sel)
	if err != nil {
		return err
	}
	partial := match.String()
	if again != nil {
		partial = strings.TrimSpace("the survivors of an earlier run " + partial)
	}
	if sel != nil {
		names := make([]string, 0, len(sel))
		for f := range sel {
			names = append(names, f)
		}
		sort.Strings(names)
		partial = strings.TrimSpace("the files " + strings.Join(names, ", ") + " " + partial)
	}
	var stale []string
	for _, id := range ignored.Entries() {
		if !used[id] && only == "" && partial == "" {
			stale = append(stale, id)
		}
	}
	sort.Strings(stale)
	for _, id := range stale {
		fmt.Fprintf(os.Stderr, "mutate: %s lists a mutant that no longer exists: %s\n", ignoreFile, id)
	}
	if update {
		old, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		rep := updateReport(old, only, report(tallies, results, nil, time.Since(started), only, "", at), time.Since(started), at)
		return os.WriteFile(out, rep, 0o644)
	}
	return os.WriteFile(out, report(tallies, results, stale, time.Since(started), only, partial, at), 0o644)
}

// survivorLine is a survived or hung mutant as a report lists it
// ("- survived `file:line` Func: desc") or as a run prints it ("[3/9] survived file:line desc").
var survivorLine = regexp.MustCompile("(?:survived|hung)\\s+`?([^\\s`:]+\\.go):\\d+`?\\s+(?:[A-Za-z0-9_.()]+: )?(.+)$")

// survivorKeys are the "file desc" of the mutants a report or a run's output lists
// as survived or hung. Line numbers are left out, so that the keys still name the
// mutants after edits elsewhere in the file (a few others with the same
// description in the same file may run too).
func survivorKeys(raw []byte) map[string]bool {
	keys := map[string]bool{}
	for _, l := range strings.Split(string(raw), "\n") {
		if m := survivorLine.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			keys[m[1]+" "+m[2]] = true
		}
	}
	return keys
}

// decisionFiles are the files mutation covers in t: its Files, or every non-test
// .go file of the package.
func decisionFiles(t target) ([]string, error) {
	if len(t.Files) > 0 {
		return t.Files, nil
	}
	all, err := filepath.Glob(filepath.Join(filepath.FromSlash(t.Name), "*.go"))
	if err != nil {
		return nil, err
	}
	var files []string
	for _, f := range all {
		if !strings.HasSuffix(f, "_test.go") {
			files = append(files, filepath.ToSlash(f))
		}
	}
	return files, nil
}

// mutants are the mutants of t's decision files (only those in sel, unless nil).
func mutants(t target, sel map[string]bool) ([]mutate.Mutant, error) {
	files, err := decisionFiles(t)
	if err != nil {
		return nil, err
	}
	var ms []mutate.Mutant
	for _, f := range files {
		if sel != nil && !sel[f] {
			continue
		}
		src, err := os.ReadFile(filepath.FromSlash(f))
		if err != nil {
			return nil, err
		}
		fm, err := mutate.Generate(f, src)
		if err != nil {
			return nil, err
		}
		ms = append(ms, fm...)
	}
	return ms, nil
}

// runTarget builds and runs the package's tests unchanged, then under each mutant.
func runTarget(t target, ms []mutate.Mutant, ignored *mutate.Ignored, used map[string]bool, tmp string, jobs int) ([]mutate.Result, error) {
	pkg := "./" + t.Name
	bin := filepath.Join(tmp, "pkg.test")
	if out, err := build(pkg, bin, ""); err != nil {
		return nil, fmt.Errorf("%s does not build: %v\n%s", t.Name, err, out)
	}
	began := time.Now()
	if failed, timedOut, out := runTests(bin, t, 10*time.Minute); failed || timedOut {
		return nil, fmt.Errorf("%s: the tests fail without any mutant; fix them first:\n%s", t.Name, out)
	}
	// A mutant's run gets twice the unchanged run and 20 s more (at least the
	// target's Wait) before it counts as hung.
	deadline := max(2*time.Since(began)+20*time.Second, t.Wait)
	fmt.Printf("%s: %d mutants; the unchanged tests took %s, a mutant's deadline is %s\n",
		t.Name, len(ms), time.Since(began).Round(time.Millisecond), deadline.Round(time.Second))

	// One builder (compiling is what takes the CPU) feeds jobs test runners (the
	// tests mostly wait on their own deadlines).
	rs := make([]mutate.Result, len(ms))
	type built struct {
		i   int
		bin string
	}
	queue := make(chan built, jobs)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for w := 0; w < jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range queue {
				failed, timedOut, out := runTests(b.bin, t, deadline)
				_ = os.Remove(b.bin)
				record(&mu, &done, rs, b.i, ms, mutate.Classify(failed, timedOut, out))
			}
		}()
	}
	var buildErr error
	for i, m := range ms {
		if entry, reason, ok := ignored.Lookup(m.ID); ok {
			used[entry] = true
			rs[i] = mutate.Result{Mutant: m, Outcome: mutate.Skipped, Reason: reason}
			record(&mu, &done, rs, i, ms, mutate.Skipped)
			continue
		}
		bin := filepath.Join(tmp, fmt.Sprintf("m%d.test", i))
		ok, err := buildMutant(t, m, bin, filepath.Join(tmp, fmt.Sprintf("m%d", i)))
		if err != nil {
			buildErr = err
			break
		}
		if !ok {
			record(&mu, &done, rs, i, ms, mutate.Invalid)
			continue
		}
		queue <- built{i, bin}
	}
	close(queue)
	wg.Wait()
	return rs, buildErr
}

func record(mu *sync.Mutex, done *int, rs []mutate.Result, i int, ms []mutate.Mutant, o mutate.Outcome) {
	mu.Lock()
	defer mu.Unlock()
	*done++
	rs[i].Mutant, rs[i].Outcome = ms[i], o
	m := ms[i]
	fmt.Printf("  [%d/%d] %-8s %s:%d %s\n", *done, len(ms), o, m.File, m.Line, m.Desc)
}

// buildMutant compiles the package's test binary with the mutant in place of its
// file; false when it does not compile.
func buildMutant(t target, m mutate.Mutant, bin, stem string) (bool, error) {
	orig, err := filepath.Abs(filepath.FromSlash(m.File))
	if err != nil {
		return false, err
	}
	src, err := os.ReadFile(orig)
	if err != nil {
		return false, err
	}
	mutated := stem + ".go"
	if err := os.WriteFile(mutated, m.Apply(src), 0o600); err != nil {
		return false, err
	}
	defer func() { _ = os.Remove(mutated) }()
	overlay := stem + ".json"
	js, err := json.Marshal(map[string]map[string]string{"Replace": {orig: mutated}})
	if err != nil {
		return false, err
	}
	if err := os.WriteFile(overlay, js, 0o600); err != nil {
		return false, err
	}
	defer func() { _ = os.Remove(overlay) }()
	_, err = build("./"+t.Name, bin, overlay)
	return err == nil, nil
}

// build compiles the package's test binary (vet off: a mutant is judged by the tests).
func build(pkg, bin, overlay string) ([]byte, error) {
	args := []string{"test", "-c", "-vet=off", "-ldflags=-w", "-o", bin}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	return exec.Command("go", append(args, pkg)...).CombinedOutput()
}

// runTests runs a test binary in its package's folder, as go test does.
func runTests(bin string, t target, deadline time.Duration) (failed, timedOut bool, out []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline+15*time.Second)
	defer cancel()
	args := []string{"-test.count=1", "-test.failfast", "-test.timeout=" + deadline.String()}
	if t.Run != "" {
		args = append(args, "-test.run="+t.Run)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = filepath.FromSlash(t.Name)
	cmd.Env = append(os.Environ(), "TF_ACC=")
	out, err := cmd.CombinedOutput()
	return err != nil, ctx.Err() != nil, out
}

func report(tallies []mutate.Tally, results map[string][]mutate.Result, stale []string, took time.Duration, only, partial, at string) []byte {
	var b strings.Builder
	b.WriteString("# Mutation testing\n\n")
	b.WriteString("Written by `make mutate` (internal/mutate/cmd/mutate); do not edit by hand. Run it\n")
	b.WriteString("before each release and commit the result. Each mutant is one small change to the\n")
	b.WriteString("decision code (a comparison or `&&`/`||` flipped, a `!` dropped, `true`/`false` or\n")
	b.WriteString("`0`/`1` swapped, a call, an assignment or an early return deleted), compiled as an\n")
	b.WriteString("overlay and run against the package's tests. The kill rate counts valid mutants:\n")
	b.WriteString("killed, survived or hung (a hang is not a kill). Mutants that do not compile are\n")
	b.WriteString("invalid; those in internal/mutate/ignored.txt (equivalent or logging-only, each\n")
	b.WriteString("with its reason) are not run. The figures are of the commit named below (a package\n")
	b.WriteString("run again alone names its own); `make lint` (mutation-check) names the decision\n")
	b.WriteString("files changed since, and `make mutate-changed` runs only their mutants.\n\n")
	if only != "" || partial != "" {
		fmt.Fprintf(&b, "**Partial run: only %s.**\n\n", strings.TrimSpace(only+" "+partial))
	}
	fmt.Fprintf(&b, "Run on %s at %s, %s.\n\n", time.Now().UTC().Format("2006-01-02"), at, took.Round(time.Second))
	b.WriteString("## Kill rate\n\n")
	b.WriteString("| package | files | valid | killed | survived | hung | invalid | ignored | kill rate |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, t := range tallies {
		files := "all"
		for _, tg := range targets {
			if tg.Name == t.Package && len(tg.Files) > 0 {
				files = strings.Join(tg.Files, ", ")
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %d | %d | %d | %d | %d | %d | %.1f %% |\n",
			t.Package, files, t.Valid(), t.Killed, t.Survived, t.Hung, t.Invalid, t.Ignored, t.Rate())
	}
	b.WriteString("\n## Surviving and hung mutants\n\n")
	any := false
	for _, t := range tallies {
		for _, r := range results[t.Package] {
			if r.Outcome == mutate.Survived || r.Outcome == mutate.Hung {
				any = true
				fmt.Fprintf(&b, "- %s `%s:%d` %s: %s\n", r.Outcome, r.Mutant.File, r.Mutant.Line, r.Mutant.Func, r.Mutant.Desc)
			}
		}
	}
	if !any {
		b.WriteString("None.\n")
	}
	if len(stale) > 0 {
		b.WriteString("\n## Ignore-file entries that match no mutant\n\n")
		for _, id := range stale {
			fmt.Fprintf(&b, "- %s\n", id)
		}
	}
	return []byte(b.String())
}

// updateReport replaces pkg's row and surviving mutants in a full run's report old
// with those of fresh (a report of pkg alone), and says so under the run's date.
func updateReport(old []byte, pkg string, fresh []byte, took time.Duration, at string) []byte {
	rowPrefix := "| `" + pkg + "` |"
	ofPkg := func(l string) bool {
		for _, o := range []mutate.Outcome{mutate.Survived, mutate.Hung} {
			if rest, ok := strings.CutPrefix(l, "- "+string(o)+" `"); ok {
				file, _, _ := strings.Cut(rest, ":")
				return path.Dir(file) == pkg
			}
		}
		return false
	}
	var row string
	var mutants []string
	for _, l := range strings.Split(string(fresh), "\n") {
		if strings.HasPrefix(l, rowPrefix) {
			row = l
		} else if ofPkg(l) {
			mutants = append(mutants, l)
		}
	}
	note := "`" + pkg + "`" + fmt.Sprintf(" was run again alone on %s at %s, %s (`-only %s -update`): its row and mutants are from that run.",
		time.Now().UTC().Format("2006-01-02"), at, took.Round(time.Second), pkg)
	var out []string
	section := ""
	for _, l := range strings.Split(string(old), "\n") {
		switch {
		case strings.HasPrefix(l, "## "):
			if section == "## Surviving and hung mutants" {
				out = appendMutants(out, mutants)
				mutants = nil
			}
			section = l
		case strings.HasPrefix(l, "`"+pkg+"` was run again alone"):
			if len(out) > 0 && out[len(out)-1] == "" {
				out = out[:len(out)-1] // the blank line before the old note
			}
			continue
		case strings.HasPrefix(l, rowPrefix):
			l = row
		case ofPkg(l), section == "## Surviving and hung mutants" && l == "None.":
			continue
		}
		out = append(out, l)
		if strings.HasPrefix(l, "Run on ") {
			out = append(out, "", note)
		}
	}
	if mutants != nil || section == "## Surviving and hung mutants" {
		out = appendMutants(out, mutants)
	}
	return []byte(strings.Join(out, "\n"))
}

// appendMutants puts mutant lines at the end of the surviving-mutants section that
// out ends with (before its trailing blank lines), or "None." when it has none.
func appendMutants(out, mutants []string) []string {
	end := len(out)
	for end > 0 && out[end-1] == "" {
		end--
	}
	tail := slices.Clone(out[end:])
	out = out[:end]
	if len(mutants) == 0 && !strings.HasPrefix(out[len(out)-1], "- ") {
		mutants = []string{"None."}
	}
	if strings.HasPrefix(out[len(out)-1], "## ") {
		out = append(out, "")
	}
	out = append(out, mutants...)
	return append(out, tail...)
}
