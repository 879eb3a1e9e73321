// Command testreport reads `go test -json` on stdin and prints what a person needs
// from a long run, as it happens: a line per finished package (ok, FAIL, no tests),
// the whole output of each failed test, a "still running" line naming the running
// tests every -heartbeat when nothing else was printed (with how many tests ended
// and how many wait for a parallel slot), and at the end the slowest
// tests and the list of skipped tests with the reason each gave (its t.Skip text).
//
// It reads its input to the end (it never closes the pipe early, so go test never
// dies of SIGPIPE under `set -o pipefail`), and exits 1 when a test or a package
// failed or the input held no package's end (go test died), so the pipeline fails
// even if go test's own status were lost. -raw FILE keeps every input line there.
//
//	set -o pipefail; go test -json ./... | go run ./scripts/testreport -raw .cache/test.json
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

func main() {
	heartbeat := flag.Duration("heartbeat", 30*time.Second, "print the running tests when nothing was printed for this long")
	raw := flag.String("raw", "", "also write every input line to this file")
	slowest := flag.Int("slowest", 5, "how many of the slowest tests to list at the end (0: none)")
	summary := flag.Bool("summary", true, "end with the slowest and the skipped tests")
	replay := flag.Bool("replay", false, "read the -raw files named as arguments (not stdin) and print only their summary")
	label := flag.String("label", "", "name this run in its heartbeat lines (two runs printing side by side)")
	flag.Parse()
	if *replay {
		r := newReport(os.Stdout, time.Now)
		r.slowest, r.quiet = *slowest, true
		for _, name := range flag.Args() {
			f, err := os.Open(name)
			if err != nil {
				fmt.Fprintf(os.Stderr, "testreport: %v\n", err)
				os.Exit(2)
			}
			err = r.read(f)
			f.Close()
			if err != nil {
				fmt.Fprintf(os.Stderr, "testreport: reading %s: %v\n", name, err)
				os.Exit(2)
			}
		}
		r.quiet = false
		if !r.finish(true) {
			os.Exit(1)
		}
		return
	}
	in := io.Reader(os.Stdin)
	var rawFile *os.File // closed once the input is read: os.Exit below runs no defers
	if *raw != "" {
		f, err := os.Create(*raw)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testreport: %v\n", err)
			os.Exit(2)
		}
		rawFile = f
		in = io.TeeReader(in, f)
	}
	r := newReport(os.Stdout, time.Now)
	r.slowest, r.label = *slowest, *label
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(*heartbeat / 2)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				r.beat(*heartbeat)
			}
		}
	}()
	err := r.read(in)
	close(stop)
	<-done
	if rawFile != nil {
		rawFile.Close()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "testreport: reading go test's output: %v\n", err)
	}
	if !r.finish(*summary) || err != nil {
		os.Exit(1)
	}
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
	// ImportPath names the package of a build-output or build-fail event (go 1.24+).
	ImportPath string
}

type testKey struct{ pkg, test string }

type running struct {
	since  time.Time
	output []string
}

type finished struct {
	key     testKey
	elapsed float64
}

type skipped struct {
	key    testKey
	reason string
}

// report is the state of one run.
type report struct {
	mu        sync.Mutex
	out       io.Writer
	now       func() time.Time
	slowest   int
	label     string // names this run in its heartbeat ("" : none), when two run side by side
	quiet     bool   // print nothing until finish (replay)
	lastPrint time.Time
	tests     map[testKey]*running
	pkgOutput map[string][]string
	pkgs      int  // packages that ended
	failed    bool // a test or a package failed
	skips     []skipped
	times     []finished
	failures  []string
}

func newReport(out io.Writer, now func() time.Time) *report {
	return &report{out: out, now: now, lastPrint: now(), tests: map[testKey]*running{}, pkgOutput: map[string][]string{}}
}

func (r *report) printf(format string, args ...any) {
	if r.quiet {
		return
	}
	fmt.Fprintf(r.out, format, args...)
	r.lastPrint = r.now()
}

// read consumes go test -json lines until EOF. A line that is not JSON (a build
// error go test printed on stdout) is printed as it is.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" {
			r.mu.Lock()
			r.printf("%s\n", line)
			r.mu.Unlock()
			continue
		}
		r.handle(e)
	}
	return sc.Err()
}

func (r *report) handle(e event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Action == "build-output" || e.Action == "build-fail" {
		e.Package = e.ImportPath
	}
	k := testKey{e.Package, e.Test}
	if e.Test == "" {
		switch e.Action {
		case "output", "build-output":
			r.pkgOutput[e.Package] = append(r.pkgOutput[e.Package], e.Output)
		case "pass":
			r.pkgs++
			r.printf("ok    %s\t%.1fs\n", e.Package, e.Elapsed)
			delete(r.pkgOutput, e.Package)
		case "skip":
			r.pkgs++
			r.printf("?     %s\t[no test files]\n", e.Package)
			delete(r.pkgOutput, e.Package)
		case "fail", "build-fail":
			if e.Action == "build-fail" {
				// Its test package's "fail" follows and is counted there.
				r.printf("FAIL  %s [build failed]\n", e.Package)
				for _, l := range r.pkgOutput[e.Package] {
					r.printf("      %s", l)
				}
				r.failed = true
				delete(r.pkgOutput, e.Package)
				return
			}
			r.pkgs++
			r.failed = true
			// The package's own output holds what no test owns: a panic, a timeout, a build error.
			r.printf("FAIL  %s\t%.1fs\n", e.Package, e.Elapsed)
			for _, l := range r.pkgOutput[e.Package] {
				r.printf("      %s", l)
			}
			r.failures = append(r.failures, e.Package)
			delete(r.pkgOutput, e.Package)
			// Tests that were still running when the package ended (a timeout, a panic).
			for tk, t := range r.tests {
				if tk.pkg == e.Package {
					r.printf("      still running when %s ended: %s (%s)\n", e.Package, tk.test, r.now().Sub(t.since).Round(time.Second))
					delete(r.tests, tk)
				}
			}
		}
		return
	}
	switch e.Action {
	case "run":
		r.tests[k] = &running{since: r.now()}
	case "pause":
		// A parallel test waits for its turn: it does not count as running.
		if t := r.tests[k]; t != nil {
			t.since = time.Time{}
		}
	case "cont":
		if t := r.tests[k]; t != nil {
			t.since = r.now()
		}
	case "output":
		if t := r.tests[k]; t != nil {
			t.output = append(t.output, e.Output)
		}
	case "pass":
		r.times = append(r.times, finished{k, e.Elapsed})
		delete(r.tests, k)
	case "skip":
		var out []string
		if t := r.tests[k]; t != nil {
			out = t.output
		}
		r.skips = append(r.skips, skipped{k, skipReason(out)})
		delete(r.tests, k)
	case "fail":
		r.failed = true
		r.times = append(r.times, finished{k, e.Elapsed})
		r.printf("--- FAIL: %s (%.1fs) in %s\n", e.Test, e.Elapsed, e.Package)
		if t := r.tests[k]; t != nil {
			for _, l := range t.output {
				if !strings.HasPrefix(strings.TrimSpace(l), "=== ") {
					r.printf("    %s", l)
				}
			}
		}
		r.failures = append(r.failures, e.Package+" "+e.Test)
		delete(r.tests, k)
	}
}

// skipReason is the text a skipped test gave: its last output line that is not
// go test's own ("=== RUN", "--- SKIP"), without the file:line prefix.
func skipReason(output []string) string {
	for i := len(output) - 1; i >= 0; i-- {
		l := strings.TrimSpace(output[i])
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- ") {
			continue
		}
		if file, text, ok := strings.Cut(l, ": "); ok && strings.Contains(file, ".go:") && !strings.Contains(file, " ") {
			return text
		}
		return l
	}
	return "(no reason given)"
}

// beat prints the running tests when nothing was printed for quiet.
func (r *report) beat(quiet time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if now.Sub(r.lastPrint) < quiet {
		return
	}
	type run struct {
		name string
		dur  time.Duration
	}
	var runs []run
	waiting := 0
	for k, t := range r.tests {
		if t.since.IsZero() {
			waiting++
			continue
		}
		runs = append(runs, run{k.test, now.Sub(t.since)})
	}
	sort.Slice(runs, func(i, j int) bool {
		if runs[i].dur != runs[j].dur {
			return runs[i].dur > runs[j].dur
		}
		return runs[i].name < runs[j].name
	})
	// Parents wait for their subtests: name the innermost tests.
	var names []string
	for _, ru := range runs {
		parent := false
		for _, o := range runs {
			if strings.HasPrefix(o.name, ru.name+"/") {
				parent = true
				break
			}
		}
		if !parent {
			names = append(names, fmt.Sprintf("%s (%s)", ru.name, ru.dur.Round(time.Second)))
		}
	}
	if len(names) == 0 {
		r.printf("still running%s: compiling or starting the test binaries (%d packages done)\n", r.labelled(), r.pkgs)
		return
	}
	more := ""
	if len(names) > 6 {
		more = fmt.Sprintf(" and %d more", len(names)-6)
		names = names[:6]
	}
	// The progress so far: how many tests ended, how many parallel ones wait for a
	// slot (go test's -parallel), so a long quiet stretch shows it is moving.
	r.printf("still running%s (%d tests done, %d waiting for a slot): %s%s\n", r.labelled(), len(r.times)+len(r.skips), waiting, strings.Join(names, ", "), more)
}

// labelled is " [label]" for the heartbeat, or "" without a label.
func (r *report) labelled() string {
	if r.label == "" {
		return ""
	}
	return " [" + r.label + "]"
}

// finish prints the summary (the slowest and the skipped tests) when summary, and
// the verdict, and reports whether the run passed.
func (r *report) finish(summary bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if summary {
		r.summarize()
	}
	switch {
	case r.pkgs == 0:
		r.printf("FAIL  no package finished: go test ended before any package did\n")
		return false
	case r.failed:
		r.printf("FAIL  %d failed: %s\n", len(r.failures), strings.Join(r.failures, "; "))
		return false
	}
	return true
}

func (r *report) summarize() {
	if r.slowest > 0 && len(r.times) > 0 {
		sort.SliceStable(r.times, func(i, j int) bool { return r.times[i].elapsed > r.times[j].elapsed })
		r.printf("\nslowest tests:\n")
		n := 0
		// Subtests too: a parent whose subtests run in parallel ends before they run.
		for _, f := range r.times {
			r.printf("  %7.1fs  %s (%s)\n", f.elapsed, f.key.test, f.key.pkg)
			if n++; n == r.slowest {
				break
			}
		}
	}
	if len(r.skips) > 0 {
		// Grouped by reason: one line per reason, the tests it skipped after it.
		byReason := map[string][]string{}
		var reasons []string
		for _, s := range r.skips {
			if _, ok := byReason[s.reason]; !ok {
				reasons = append(reasons, s.reason)
			}
			name := s.key.test
			if i := strings.LastIndex(s.key.pkg, "/"); i >= 0 {
				name = s.key.pkg[i+1:] + "." + name
			}
			byReason[s.reason] = append(byReason[s.reason], name)
		}
		r.printf("\nskipped tests (%d), by reason:\n", len(r.skips))
		for _, reason := range reasons {
			names := byReason[reason]
			r.printf("  %s (%d): %s\n", reason, len(names), strings.Join(names, ", "))
		}
	} else {
		r.printf("\nskipped tests: none\n")
	}
}
