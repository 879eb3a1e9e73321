package contract

import (
	"strings"
	"testing"
)

// The progress lines are the scripts' (restart_common.ps1 writes them with this
// prefix), read back exactly, and taken out of the result.
func TestProgressLines(t *testing.T) {
	if !strings.Contains(mustRead("restart_common.ps1"), "$RestartProgressPrefix = '"+ProgressPrefix+"'") {
		t.Fatalf("restart_common.ps1 does not write progress lines with %q", ProgressPrefix)
	}
	for line, want := range map[string][2]string{
		"#mssqlifi-progress prepared 0123abcd\r\n": {ProgressPrepared, "0123abcd"},
		"#mssqlifi-progress started 0123abcd\n":    {ProgressStarted, "0123abcd"},
	} {
		if ev, id, ok := ParseProgress(line); !ok || ev != want[0] || id != want[1] {
			t.Errorf("ParseProgress(%q) = %q %q %v; want %v", line, ev, id, ok, want)
		}
	}
	for _, line := range []string{"{\"found\":true}", "#mssqlifi-progress prepared", "#mssqlifi-progress  x", "#mssqlifi-progress a b c", "# mssqlifi-progress prepared x"} {
		if _, _, ok := ParseProgress(line); ok {
			t.Errorf("ParseProgress(%q) read a progress line", line)
		}
	}
	out := StripProgress([]byte("#mssqlifi-progress prepared ab\r\n#mssqlifi-progress started ab\r\n{\"found\":true}"))
	if string(out) != `{"found":true}` {
		t.Errorf("StripProgress left %q", out)
	}
	if GoLine("ab") != "go ab\n" {
		t.Errorf("GoLine = %q", GoLine("ab"))
	}
	if !strings.Contains(mustRead("restart_instance.ps1"), `$goLine -cne "go $restartId"`) {
		t.Error("restart_instance.ps1 does not wait for GoLine's line")
	}
}
