package hostsuite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWriteMarkdown: the summary holds every result as a table row (a "|" in a
// detail escaped, so the row keeps its columns) and the seed's measurement.
func TestWriteMarkdown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "summary.md")
	results := []Result{
		{Stage: StagePreflight, Status: Pass, Check: "winrm", Detail: "reached a|b"},
		{Stage: StageSeed, Status: Fail, Check: "drop database", Detail: "permission denied"},
	}
	m := &Measurement{SizeMB: 10240, LogMB: 8, Off: 133 * time.Second, On: 13 * time.Second}
	if err := WriteMarkdown(path, "hostsuite: host sql01", results, m); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{
		"| preflight | PASS | winrm | reached a\\|b |",
		"| seed | FAIL | drop database | permission denied |",
		"| 10240 MB | 2m13s | 13s | 10.2 |",
		"| 10240 MB (the article) | 2m13s | 13s | 10.2 |",
		"1 passed, 1 failed, 0 skipped",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "modelled") {
		t.Errorf("a measurement from a real host is called modelled:\n%s", got)
	}
}

// TestMeasurementBesideTheArticle: the seed's line says the size and puts the
// article's figure beside the ratio; below the article's size it says the ratio
// says little beside it; against the simulator it says modelled.
func TestMeasurementBesideTheArticle(t *testing.T) {
	article := "the article, at 10240 MB: 2m13s off, 13s on, ratio 10.2"
	at := Measurement{SizeMB: 10240, LogMB: 8, Off: 13310 * time.Millisecond, On: 1310 * time.Millisecond, Modelled: true}
	got := at.String()
	for _, want := range []string{"a data file of 10240 MB and a log of 8 MB", "13.3s with IFI off, 1.31s with IFI on, ratio 10.2; " + article, "simulator: modelled, not measured"} {
		if !strings.Contains(got, want) {
			t.Errorf("the line at the article's size lacks %q:\n%s", want, got)
		}
	}
	if !at.Comparable() || strings.Contains(got, "below the article's") {
		t.Errorf("at the article's size the line says the ratio does not compare:\n%s", got)
	}
	small := Measurement{SizeMB: 1024, LogMB: 8, Off: 1340 * time.Millisecond, On: 140 * time.Millisecond}
	got = small.String()
	for _, want := range []string{"a data file of 1024 MB", "ratio 9.6; " + article, "1024 MB is below the article's 10240 MB", EnvSeedMB + "=10240 compares"} {
		if !strings.Contains(got, want) {
			t.Errorf("the line at 1 GB lacks %q:\n%s", want, got)
		}
	}
	if small.Comparable() || strings.Contains(got, "modelled") {
		t.Errorf("a real host's 1 GB measurement is called comparable or modelled:\n%s", got)
	}
}
