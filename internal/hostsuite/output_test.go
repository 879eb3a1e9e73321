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
