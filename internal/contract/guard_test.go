package contract

import (
	"strconv"
	"strings"
	"testing"
)

// The guard's command line carries no script (issue 14: it was 32,118 characters of
// -EncodedCommand, 650 short of CreateProcess's limit): only the loader, which runs
// the guard's file as a script block after checking its owner and hash (issue 24: a
// Group Policy execution policy overrides -ExecutionPolicy Bypass for -File). It
// stays far under cmd.exe's 8,191 characters with the longest values it can hold: a
// guard file at MAX_PATH, a 32-digit token and a 10-digit process id.
func TestGuardCommandLineFitsCmd(t *testing.T) {
	file := `C:\` + strings.Repeat("p", 259-len(`C:\`)-len(`\restart_guard_0123456789abcdef.ps1`)) + `\restart_guard_0123456789abcdef.ps1`
	hash, token := strings.Repeat("e", 64), strings.Repeat("f", 32)
	line, err := GuardCommandLine(file, hash, token, 4294967295)
	if err != nil {
		t.Fatal(err)
	}
	if len(line) >= GuardCommandLineLimit/2 {
		t.Errorf("the guard's command line is %d characters, not far under %d: %s", len(line), GuardCommandLineLimit, line)
	}
	args := strings.Fields(line)
	if len(args) != 5 || args[0] != GuardProgram || args[1] != "-NoProfile" || args[2] != "-NonInteractive" || args[3] != "-EncodedCommand" {
		t.Fatalf("the guard's command line is not powershell.exe -NoProfile -NonInteractive -EncodedCommand <loader>: %s", line)
	}
	loader, err := DecodeCommand(args[4])
	if err != nil {
		t.Fatal(err)
	}
	v, ok := ParseGuardLoader(loader)
	if !ok || v.File != file || v.Hash != hash || v.Token != token || v.RunnerID != 4294967295 {
		t.Errorf("the loader carries %+v (parsed: %v), want the file, hash, token and runner:\n%s", v, ok, loader)
	}
	// The loader runs the file's text as a script block: no -File, no call or
	// dot-source of the path, and it runs the bytes it hashed.
	for _, want := range []string{"GetOwner([Security.Principal.SecurityIdentifier])", "'S-1-5-32-544', 'S-1-5-18'",
		"$b = [IO.File]::ReadAllBytes($f)", "ComputeHash($b)", "-cne '" + hash + "'", "& ([ScriptBlock]::Create([Text.Encoding]::UTF8.GetString($b)"} {
		if !strings.Contains(loader, want) {
			t.Errorf("the loader lacks %q:\n%s", want, loader)
		}
	}
	for _, not := range []string{"-File", "& $f", ". $f", "Invoke-Expression", "iex "} {
		if strings.Contains(loader, not) {
			t.Errorf("the loader holds %q (subject to execution policy, or running what it did not hash):\n%s", not, loader)
		}
	}
	if !strings.Contains(mustRead("restart_guard.ps1"), "$RestartGuardStartSeconds = "+strconv.Itoa(GuardStartSeconds)+"\n") {
		t.Errorf("restart_guard.ps1's $RestartGuardStartSeconds is not GuardStartSeconds (%d)", GuardStartSeconds)
	}
	t.Logf("the guard's command line: %d characters at most", len(line))
}

// A file name with a quote is doubled in the loader's literal and read back as it
// was; a loader with anything added is not the guard's.
func TestGuardLoaderQuotesTheFile(t *testing.T) {
	file := `C:\Program'Data\mssqlifi\restart_guard_0123456789abcdef.ps1`
	text, err := GuardLoader(file, strings.Repeat("0", 64), strings.Repeat("a", 32), 7)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, `'C:\Program''Data\`) {
		t.Errorf("the quote is not doubled:\n%s", text)
	}
	if v, ok := ParseGuardLoader(text); !ok || v.File != file || v.RunnerID != 7 {
		t.Errorf("read back %+v, %v", v, ok)
	}
	if _, ok := ParseGuardLoader(text + "\nRemove-Item C:\\x"); ok {
		t.Errorf("a loader with more commands parses as the guard's loader")
	}
}

// The guard's arguments are a sum of single-quoted literals (” a quote inside) and
// the named values; anything else in the line is refused, naming it.
func TestEvalGuardArguments(t *testing.T) {
	vals := map[string]string{"$guardLoader": "QUJD", "$token": "ab"}
	got, err := evalGuardArguments(`'-EncodedCommand ' + $guardLoader + ' -Token ' + $token + ' -Note ''x'''`, vals)
	if err != nil || got != `-EncodedCommand QUJD -Token ab -Note 'x'` {
		t.Fatalf("got %q, %v", got, err)
	}
	if got, err := evalGuardArguments(`''''`, vals); err != nil || got != "'" {
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
		if got, err := evalGuardArguments(line, map[string]string{"$token": "t"}); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %q, %v; want an error saying %q", line, got, err, says)
		}
	}
}

// Issue 37: Start-RestartGuard takes an exception from WMI as the WMI launcher's
// failure and tries the scheduled task; the marker's start record is emptied before
// each launcher starts its guard, so the task's wait never takes a record a guard
// WMI started (and that was ended) wrote late.
func TestGuardLaunchersFallThroughAndResetTheStartRecord(t *testing.T) {
	g := mustRead("restart_guard.ps1")
	wantInOrder(t, "restart_guard.ps1", g, []string{
		"function Reset-RestartGuardStart", "-Name 'GuardProcessId' -Value 0 -Type DWord", "-Name 'GuardStart' -Value ''",
		"function Start-RestartGuard", "try {\n            Reset-RestartGuardStart -Marker $Marker", "Invoke-CimMethod -ClassName Win32_Process -MethodName Create",
		"Stop-Process -Id $createdId", "catch {\n            $why.Add(\"Win32_Process.Create failed: $($_.Exception.Message)\")",
		"Reset-RestartGuardStart -Marker $Marker\n        Set-ItemProperty -LiteralPath $Marker -Name 'GuardTask'", "Start-ScheduledTask",
		"Wait-RestartGuardStart -Marker $Marker -ProcessId 0",
	})
}

// Issue 37: the cluster guard backs off and stops. cluster_guard.ps1 calls
// BringOnline at most ClusterGuardAttempts times, pausing ClusterGuardFirstPauseSeconds
// and then twice as long each time up to ClusterGuardMaxPauseSeconds; it stops when
// the role it saw Online is Offline (someone else took it offline), and writes its
// record at each turn, before each BringOnline as well as after. Before, it called
// BringOnline again each time the cluster was done, for 2 hours, and wrote its
// record once, at the end.
func TestClusterGuardBacksOffAndStops(t *testing.T) {
	g := mustRead("cluster_guard.ps1")
	for _, want := range []string{
		"$attempts = " + strconv.Itoa(ClusterGuardAttempts) + "\n", "$pause = " + strconv.Itoa(ClusterGuardFirstPauseSeconds) + "\n",
		"$pause = [Math]::Min(2 * $pause, " + strconv.Itoa(ClusterGuardMaxPauseSeconds) + ")",
	} {
		if !strings.Contains(g, want) {
			t.Errorf("cluster_guard.ps1 lacks %q (the contract's values)", want)
		}
	}
	wantInOrder(t, "cluster_guard.ps1", g, []string{
		"$wasOnline = $false", "while ([DateTime]::UtcNow -lt $until) {",
		"[string]$_.Type -ceq 'SQL Server' -and [int]$_.State -eq 2", "$wasOnline = $true", "elseif ($wasOnline -and @($resources | Where-Object { [string]$_.Type -ceq 'SQL Server' -and [int]$_.State -eq 3 }).Count -gt 0) {", "someone else's action, left Offline\"\n                break",
		"if ($outcome.brought_online -ge $attempts) {", "left as it is. $($outcome.error)\"\n                break",
		"$outcome.brought_online++\n            Set-ItemProperty -LiteralPath $marker -Name 'State'", "-MethodName 'BringOnline'",
		"Set-ItemProperty -LiteralPath $marker -Name 'State' -Value (ConvertTo-Json -InputObject $outcome -Compress)\n        Start-Sleep -Seconds $pause",
		"$outcome.finished = $true",
	})
}
