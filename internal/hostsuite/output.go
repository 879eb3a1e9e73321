package hostsuite

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Status is a check's outcome.
type Status string

const (
	Pass Status = "PASS"
	Fail Status = "FAIL"
	Skip Status = "SKIP"
)

// Result is one line of the results table.
type Result struct {
	Stage  string
	Status Status
	Check  string
	Detail string
}

// Measurement is stage 5's timing of CREATE DATABASE with IFI off and on.
type Measurement struct {
	SizeMB  int
	LogMB   int
	Off, On time.Duration
	// Modelled: measured against the simulator, whose zeroing times are a model
	// (internal/winsim/FIDELITY.md), not a disk's.
	Modelled bool
}

// Ratio is Off divided by On (0 when On is 0).
func (m Measurement) Ratio() float64 {
	if m.On <= 0 {
		return 0
	}
	return float64(m.Off) / float64(m.On)
}

// String says the measurement in one line.
func (m Measurement) String() string {
	s := fmt.Sprintf("CREATE DATABASE with a %d MB data file and a %d MB log: %s with IFI off, %s with IFI on, ratio %.1f "+
		"(the article measured 10 GB: 2 min 13 s off, 13 s on, ratio 10.2)",
		m.SizeMB, m.LogMB, roundDur(m.Off), roundDur(m.On), m.Ratio())
	if m.Modelled {
		s += "; simulator: modelled, not measured"
	}
	return s
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// printer writes the suite's plain-text output.
type printer struct {
	w     io.Writer
	stage string
	res   *[]Result
}

func (p *printer) line(format string, args ...any) {
	fmt.Fprintf(p.w, format+"\n", args...)
}

// about prints what the suite is about to do, before it does it.
func (p *printer) about(format string, args ...any) {
	p.line("about to: "+format, args...)
}

func (p *printer) result(st Status, check, format string, args ...any) {
	detail := oneLine(fmt.Sprintf(format, args...))
	*p.res = append(*p.res, Result{Stage: p.stage, Status: st, Check: check, Detail: detail})
	p.line("%s %s: %s", st, check, detail)
}

func (p *printer) pass(check, format string, args ...any) { p.result(Pass, check, format, args...) }
func (p *printer) fail(check, format string, args ...any) { p.result(Fail, check, format, args...) }
func (p *printer) skip(check, format string, args ...any) { p.result(Skip, check, format, args...) }

// oneLine folds a multi-line detail (terraform's output) into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// WriteTable writes the results table as plain text.
func WriteTable(w io.Writer, results []Result, m *Measurement) {
	fmt.Fprintln(w, "== results ==")
	sw, cw := len("stage"), len("check")
	for _, r := range results {
		sw = max(sw, len(r.Stage))
		cw = max(cw, len(r.Check))
	}
	fmt.Fprintf(w, "%-*s  %-6s %-*s  %s\n", sw, "stage", "result", cw, "check", "detail")
	for _, r := range results {
		fmt.Fprintf(w, "%-*s  %-6s %-*s  %s\n", sw, r.Stage, r.Status, cw, r.Check, r.Detail)
	}
	if m != nil {
		fmt.Fprintf(w, "seed measurement: %s\n", m)
	}
	p, f, s := count(results)
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", p, f, s)
}

func count(results []Result) (p, f, s int) {
	for _, r := range results {
		switch r.Status {
		case Pass:
			p++
		case Fail:
			f++
		default:
			s++
		}
	}
	return p, f, s
}

// WriteMarkdown writes the results table (and the seed's measurement) as Markdown,
// for a CI job's summary.
func WriteMarkdown(path, header string, results []Result, m *Measurement) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### mssqlifi real-host suite\n\n%s\n\n", mdCell(header))
	b.WriteString("| stage | result | check | detail |\n|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.Stage, r.Status, mdCell(r.Check), mdCell(r.Detail))
	}
	if m != nil {
		fmt.Fprintf(&b, "\n**Seed measurement:** %s\n\n", mdCell(m.String()))
		fmt.Fprintf(&b, "| data file | IFI off | IFI on | ratio |\n|---|---|---|---|\n| %d MB | %s | %s | %.1f |\n",
			m.SizeMB, roundDur(m.Off), roundDur(m.On), m.Ratio())
	}
	p, f, s := count(results)
	fmt.Fprintf(&b, "\n%d passed, %d failed, %d skipped\n", p, f, s)
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
