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

// The article the project started from: a 10 GB data file created in 2 min 13 s
// without IFI, in 13 s with it (the simulator's model follows it:
// internal/winsim/tsql/zeroing.go).
const (
	articleSeedMB = 10240
	articleOff    = 133 * time.Second
	articleOn     = 13 * time.Second
)

// articleRatio is the article's ratio, 10.2.
func articleRatio() float64 { return float64(articleOff) / float64(articleOn) }

// Comparable: the data file is at least the article's size, so the ratio may be
// put beside the article's. The threshold is the article's own size because the
// ratio depends on the size: what a CREATE DATABASE costs besides writing its data
// file (the log, zeroed with IFI too; the copy of model; the metadata) weighs on
// both times, and more on the short one with IFI, so a smaller file shows a lower
// ratio than the same disk would at 10 GB, and the article measured 10 GB only.
func (m Measurement) Comparable() bool { return m.SizeMB >= articleSeedMB }

// String says the measurement in one line: its size, both times and the ratio,
// the article's beside it, and a note when the size is too small to compare.
func (m Measurement) String() string {
	s := fmt.Sprintf("CREATE DATABASE with a data file of %d MB and a log of %d MB: %s with IFI off, %s with IFI on, ratio %.1f; "+
		"the article, at %d MB: %s off, %s on, ratio %.1f",
		m.SizeMB, m.LogMB, roundDur(m.Off), roundDur(m.On), m.Ratio(),
		articleSeedMB, articleOff, articleOn, articleRatio())
	if !m.Comparable() {
		s += fmt.Sprintf("; %d MB is below the article's %d MB: what CREATE DATABASE costs besides the data file weighs more at this size, "+
			"so this ratio is lower than the article's size would give and says little beside it (%s=%d compares)",
			m.SizeMB, articleSeedMB, EnvSeedMB, articleSeedMB)
	}
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
		fmt.Fprintf(&b, "| %d MB (the article) | %s | %s | %.1f |\n", articleSeedMB, articleOff, articleOn, articleRatio())
	}
	p, f, s := count(results)
	fmt.Fprintf(&b, "\n%d passed, %d failed, %d skipped\n", p, f, s)
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
