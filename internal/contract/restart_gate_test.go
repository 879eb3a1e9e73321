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

// The guard's prepared phase (design/restart.md, "A slot held for the outage"):
// the guard starts before the prepared line and does nothing until the runner
// records its go; without it, nothing is changed. The rules, where the scripts
// keep them.
func TestGuardPreparedPhaseInTheScripts(t *testing.T) {
	w := mustRead("restart_worker.ps1")
	// The guard's wait comes before anything it could change, and ends it (return)
	// when the marker is gone or another request's, the runner ended without its
	// go, or its deadline passed (giving up under the lock: GuardProcessId 0).
	order := []string{"GetValue('GoSeconds', 0)", "-cne $Token) {\n                return", ".phase -cne '" + PhasePrepared + "'",
		"$runner.HasExited", "[System.IO.FileShare]::None", "-Name 'GuardProcessId' -Value 0", "$null = $runner.WaitForExit(250)",
		"# The runner let it go", "$resume = $true", "$dependent.Status -eq 'Running' -or $dependent.Status -eq 'Paused'"}
	wantInOrder(t, "restart_worker.ps1", w, order)
	c := mustRead("restart_common.ps1")
	for _, want := range []string{
		// The go is recorded under the lock, only for this request's marker and a live guard.
		"function Set-RestartGo", "$lock = Enter-RestartLock -Directory $Directory", "[string]$key.GetValue('Token', '') -cne $Token",
		"-StartTicks ([string]$key.GetValue('GuardStart', ''))) -ne 'alive'", "$state.phase = 'stopping'",
		// A prepared marker whose runner has ended is no restart at all.
		"[string]$state.phase -ceq '" + PhasePrepared + "'", "if ($runner -eq 'gone') {\n            return $null",
		// Its removal only while it is still this request's.
		"function Remove-PreparedRestart",
	} {
		if !strings.Contains(c, want) {
			t.Errorf("restart_common.ps1 lacks %q", want)
		}
	}
	s := mustRead("restart_instance.ps1")
	for _, want := range []string{
		// Never joined; this request's own (sent again) replaced, another's refuses.
		"$join = ($existing -and -not $prepared -and", "$prepared -and [string]$existing.restart_id -cne $restartId",
		"$state.phase = '" + PhasePrepared + "'", "Remove-PreparedRestart -Marker $markerPath -Token $token",
		"-ErrorName '" + CodeRestartNotStarted + "'",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("restart_instance.ps1 lacks %q", want)
		}
	}
	if st := mustRead("restart_status.ps1"); !strings.Contains(st, "[string]$state.phase -ceq '"+PhasePrepared+"'") {
		t.Error("restart_status.ps1 reports a restart prepared and not let go as a record")
	}
}
