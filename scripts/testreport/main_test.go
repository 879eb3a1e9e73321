package main

import (
	"strings"
	"testing"
	"time"
)

// clock is a settable time for the report.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

const run = `{"Action":"start","Package":"ex/a"}
{"Action":"run","Package":"ex/a","Test":"TestSkipped"}
{"Action":"output","Package":"ex/a","Test":"TestSkipped","Output":"=== RUN   TestSkipped\n"}
{"Action":"output","Package":"ex/a","Test":"TestSkipped","Output":"    a_test.go:12: acceptance test: set TF_ACC=1 to run terraform\n"}
{"Action":"output","Package":"ex/a","Test":"TestSkipped","Output":"--- SKIP: TestSkipped (0.00s)\n"}
{"Action":"skip","Package":"ex/a","Test":"TestSkipped","Elapsed":0}
{"Action":"run","Package":"ex/a","Test":"TestAlsoSkipped"}
{"Action":"output","Package":"ex/a","Test":"TestAlsoSkipped","Output":"    a_test.go:40: acceptance test: set TF_ACC=1 to run terraform\n"}
{"Action":"skip","Package":"ex/a","Test":"TestAlsoSkipped","Elapsed":0}
{"Action":"run","Package":"ex/a","Test":"TestFails"}
{"Action":"output","Package":"ex/a","Test":"TestFails","Output":"=== RUN   TestFails\n"}
{"Action":"output","Package":"ex/a","Test":"TestFails","Output":"    a_test.go:20: want 2, got 3\n"}
{"Action":"fail","Package":"ex/a","Test":"TestFails","Elapsed":1.5}
{"Action":"run","Package":"ex/a","Test":"TestSlow"}
{"Action":"pass","Package":"ex/a","Test":"TestSlow","Elapsed":9}
{"Action":"output","Package":"ex/a","Output":"FAIL\n"}
{"Action":"fail","Package":"ex/a","Elapsed":10.5}
{"Action":"skip","Package":"ex/b","Elapsed":0}
`

// The report names each package's end, prints a failed test's output, lists the
// skipped tests grouped by their reason, and fails the run.
func TestReportFailuresAndSkips(t *testing.T) {
	var out strings.Builder
	c := &clock{time.Unix(0, 0)}
	r := newReport(&out, c.now)
	r.slowest = 5
	if err := r.read(strings.NewReader(run)); err != nil {
		t.Fatal(err)
	}
	if r.finish(true) {
		t.Errorf("finish reported a pass for a run with a failed test")
	}
	got := out.String()
	for _, want := range []string{
		"--- FAIL: TestFails (1.5s) in ex/a\n    " + "    a_test.go:20: want 2, got 3\n",
		"FAIL  ex/a\t10.5s\n",
		"?     ex/b\t[no test files]\n",
		"  acceptance test: set TF_ACC=1 to run terraform (2): a.TestSkipped, a.TestAlsoSkipped\n",
		"skipped tests (2), by reason:",
		"      9.0s  TestSlow (ex/a)\n",
		"FAIL  2 failed: ex/a TestFails; ex/a",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "=== RUN   TestFails") {
		t.Errorf("the report repeats go test's own lines of a failed test:\n%s", got)
	}
}

// A run whose input ends before any package ended (go test killed, or a build
// that printed only text) fails.
func TestReportNoPackageFails(t *testing.T) {
	var out strings.Builder
	r := newReport(&out, time.Now)
	if err := r.read(strings.NewReader("# ex/a\na.go:3:1: syntax error\n")); err != nil {
		t.Fatal(err)
	}
	if r.finish(true) {
		t.Errorf("finish passed a run in which no package ended")
	}
	if !strings.Contains(out.String(), "a.go:3:1: syntax error") || !strings.Contains(out.String(), "no package finished") {
		t.Errorf("want the text line and the reason:\n%s", out.String())
	}
}

// After quiet time with nothing printed, the heartbeat names the innermost running
// tests, longest first, after how many ended and how many wait for a slot; a paused
// parallel test is not named; and it stays silent
// while lines are being printed.
func TestReportHeartbeat(t *testing.T) {
	var out strings.Builder
	c := &clock{time.Unix(0, 0)}
	r := newReport(&out, c.now)
	r.handle(event{Action: "run", Package: "ex/p", Test: "TestMatrix"})
	r.handle(event{Action: "run", Package: "ex/p", Test: "TestMatrix/row_a"})
	c.t = c.t.Add(10 * time.Second)
	r.handle(event{Action: "run", Package: "ex/p", Test: "TestOther"})
	r.handle(event{Action: "run", Package: "ex/p", Test: "TestWaiting"})
	r.handle(event{Action: "pause", Package: "ex/p", Test: "TestWaiting"})
	c.t = c.t.Add(20 * time.Second)
	r.beat(30 * time.Second)
	if got := out.String(); got != "still running (0 tests done, 1 waiting for a slot): TestMatrix/row_a (30s), TestOther (20s)\n" {
		t.Errorf("heartbeat %q", got)
	}
	out.Reset()
	c.t = c.t.Add(15 * time.Second)
	r.beat(30 * time.Second)
	if out.Len() != 0 {
		t.Errorf("a heartbeat 15 s after the last line: %q", out.String())
	}
	r.handle(event{Action: "pass", Package: "ex/p", Test: "TestMatrix/row_a"})
	r.handle(event{Action: "pass", Package: "ex/p", Test: "TestMatrix"})
	r.handle(event{Action: "pass", Package: "ex/p", Test: "TestOther"})
	r.handle(event{Action: "pass", Package: "ex/p", Test: "TestWaiting"})
	c.t = c.t.Add(time.Minute)
	r.beat(30 * time.Second)
	if got := out.String(); !strings.HasPrefix(got, "still running: compiling or starting the test binaries") {
		t.Errorf("heartbeat with no test running: %q", got)
	}
	// With a label (two runs side by side), the heartbeat names its run.
	out.Reset()
	r.label = "provider"
	c.t = c.t.Add(time.Minute)
	r.beat(30 * time.Second)
	if got := out.String(); !strings.HasPrefix(got, "still running [provider]: compiling or starting") {
		t.Errorf("labelled heartbeat: %q", got)
	}
}
