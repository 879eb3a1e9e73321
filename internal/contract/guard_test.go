package contract

import (
	"strings"
	"testing"
)

// The guard's command line carries no script (issue 14: it was 32,118 characters of
// -EncodedCommand, 650 short of CreateProcess's limit) and stays under cmd.exe's
// 8,191 characters with the longest values it can hold: a guard file at MAX_PATH,
// a 32-digit token and a 10-digit process id.
func TestGuardCommandLineFitsCmd(t *testing.T) {
	file := `C:\` + strings.Repeat("p", 259-len(`C:\`)-len(`\restart_guard_0123456789abcdef.ps1`)) + `\restart_guard_0123456789abcdef.ps1`
	line, err := GuardCommandLine(file, strings.Repeat("f", 32), 4294967295)
	if err != nil {
		t.Fatal(err)
	}
	if len(line) >= GuardCommandLineLimit {
		t.Errorf("the guard's command line is %d characters, not under %d: %s", len(line), GuardCommandLineLimit, line)
	}
	for _, want := range []string{"-File \"" + file + "\"", "-NoProfile", "-NonInteractive", "-Token " + strings.Repeat("f", 32), "-RunnerId 4294967295"} {
		if !strings.Contains(line, want) {
			t.Errorf("the guard's command line lacks %q: %s", want, line)
		}
	}
	for _, name := range []string{"restart_instance.ps1", "restart_guard.ps1", "restart_worker.ps1"} {
		if strings.Contains(strings.ToLower(mustRead(name)), "-encodedcommand") {
			t.Errorf("%s starts a process with -EncodedCommand: the guard's script must come from its file", name)
		}
	}
	t.Logf("the guard's command line: %d characters at most", len(line))
}

// The guard's arguments are a sum of single-quoted literals (” a quote inside) and
// the three values; anything else in the line is refused, naming it.
func TestEvalGuardArguments(t *testing.T) {
	got, err := evalGuardArguments(`'-File "' + $guardFile + '" -Token ' + $token + ' -RunnerId ' + [string][int]$PID + ' -Note ''x'''`, `C:\g.ps1`, "ab", 42)
	if err != nil || got != `-File "C:\g.ps1" -Token ab -RunnerId 42 -Note 'x'` {
		t.Fatalf("got %q, %v", got, err)
	}
	if got, err := evalGuardArguments(`''''`, "", "", 0); err != nil || got != "'" {
		t.Errorf("a literal of one quote: %q, %v", got, err)
	}
	for line, says := range map[string]string{
		`'-File`:        "unterminated string",
		`'a''`:          "unterminated string",
		`'a' + $other`:  `hold "$other"`,
		`$token $token`: "not a sum of terms",
		`'a' 'b'`:       "not a sum of terms",
		`'a' +`:         "not a sum of terms",
	} {
		if got, err := evalGuardArguments(line, "f", "t", 1); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %q, %v; want an error saying %q", line, got, err, says)
		}
	}
}
