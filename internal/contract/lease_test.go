package contract

import (
	"fmt"
	"strings"
	"testing"
)

// restart_instance.ps1 takes the host's restart lease as design/restart.md
// says: its refusal carries CodeRestartInProgress with ExitRefused; the lock is
// taken after the guard's file and before anything is written, the prepared marker
// written under it (so a refused request changed nothing), and released then; the
// guard starts before the prepared line and the go line, the changes of the right's
// holders come after them, and the go is recorded (Set-RestartGo) after the changes
// and before the restart runs; liveness uses the recorded start times the guard
// writes.
func TestRestartLeaseInTheScripts(t *testing.T) {
	s := mustRead("restart_instance.ps1")
	order := []string{"Write-RestartGuardFile -WorkerText", "Enter-RestartLock -Directory", "Find-OtherRestart -Instance",
		"Register-ChangeEventSource", "$state.phase = 'prepared'", "-Name 'State' -Value (ConvertTo-AsciiJson", "$lock.Dispose() # the marker now holds the lease",
		"Start-RestartGuard -Arguments", "-RestartEvent 'prepared'", "Read-GoLine -Seconds", "Set-UserRight -Right $changeRight -SidText",
		"Set-RestartGo -Marker", "& $RestartWorker"}
	wantInOrder(t, "restart_instance.ps1", s, order)
	if want := "-Code 3 -ErrorName '" + CodeRestartInProgress + "'"; !strings.Contains(s, want) || ExitRefused != 3 {
		t.Errorf("restart_instance.ps1 does not refuse with %q", want)
	}
	// A refusal for a prepared request names it and until when it waits for its go
	// (the marker's GoUntil), so that a provider killed while prepared is seen as
	// such, and for seconds (issue 37).
	for _, want := range []string{"-Name 'GoUntil' -Value (Format-UtcTime", "request $($other.restart_id) to restart instance $($other.instance)",
		"waits for its go line until $($other.go_until)", "request $($existing.restart_id) to restart it", "until $($existing.go_until)"} {
		if !strings.Contains(s, want) {
			t.Errorf("restart_instance.ps1 lacks %q", want)
		}
	}
	if c := mustRead("restart_common.ps1"); !strings.Contains(c, "-NotePropertyName go_until -NotePropertyValue ([string]$key.GetValue('GoUntil', ''))") {
		t.Error("restart_common.ps1's Read-RestartMarker does not report a prepared request's go_until")
	}
	// The go refused after the changes were made: exit 6, naming them, not the
	// "nothing changed" of restart_not_started (issue 37).
	wantInOrder(t, "restart_instance.ps1", s, []string{"$made += \"granted $changeRight to", "$notGone = Set-RestartGo", "if ($changed) {",
		fmt.Sprintf("-Code %d -ErrorName '%s'", ExitChangedNotStarted, CodeChangedNotRestarted), "$($made -join '; ')",
		"-Code 3 -ErrorName '" + CodeRestartNotStarted + "' -Message \"The restart of $instanceName on $computerName did not start: $notGone."})
	w := mustRead("restart_worker.ps1")
	for _, want := range []string{"-Name 'GuardStart' -Value $ownStart", "-Name 'RunnerStart' -Value $ownStart"} {
		if !strings.Contains(w, want) {
			t.Errorf("restart_worker.ps1 does not write %q: the lease could not tell its processes from reused ids", want)
		}
	}
	c := mustRead("restart_common.ps1")
	for _, want := range []string{"-StartTicks ([string]$key.GetValue('RunnerStart', ''))", "-StartTicks ([string]$key.GetValue('GuardStart', ''))",
		"[System.IO.FileShare]::None"} {
		if !strings.Contains(c, want) {
			t.Errorf("restart_common.ps1 lacks %q", want)
		}
	}
}

// wantInOrder fails unless text (the script name) holds each of steps, in order.
func wantInOrder(t *testing.T, name, text string, steps []string) {
	t.Helper()
	last := -1
	for _, step := range steps {
		i := strings.Index(text, step)
		if i < 0 {
			t.Fatalf("%s lacks %q", name, step)
		}
		if i < last {
			t.Errorf("%s: %q comes before the step it must follow", name, step)
		}
		last = i
	}
}
