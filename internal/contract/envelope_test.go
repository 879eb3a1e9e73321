package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

func TestInputRoundTrip(t *testing.T) {
	in, err := EncodeInput(OpSetRight, SetRightParams{Right: RightManageVolume, SID: "S-1-5-80-1", Grant: true})
	if err != nil {
		t.Fatal(err)
	}
	op, js, err := DecodeInput(in)
	if err != nil {
		t.Fatal(err)
	}
	if op != OpSetRight {
		t.Fatalf("op = %s", op)
	}
	var p SetRightParams
	if err := json.Unmarshal(js, &p); err != nil {
		t.Fatal(err)
	}
	if p.SID != "S-1-5-80-1" || !p.Grant {
		t.Fatalf("params = %+v", p)
	}
}

func TestDecodeInputRejectsAlteredScript(t *testing.T) {
	in, _ := EncodeInput(OpReadInstance, ReadInstanceParams{Instance: "MSSQLSERVER"})
	altered := strings.Replace(string(in), "$ErrorActionPreference", "Remove-Item C:\\ -Recurse; $ErrorActionPreference", 1)
	if _, _, err := DecodeInput([]byte(altered)); !errors.Is(err, ErrUnknownScript) {
		t.Fatalf("altered script accepted: %v", err)
	}
}

func TestCommandLineFitsCmdExe(t *testing.T) {
	if n := len(CommandLine()); n > 8191 {
		t.Fatalf("command line is %d characters, over cmd.exe's 8191", n)
	}
	got, err := DecodeCommand(CommandArgs()[5])
	if err != nil || got != Bootstrap() {
		t.Fatalf("bootstrap does not round-trip: %v", err)
	}
}

// On Windows a console-mode stdin never reports end-of-input: the frame must be
// readable from a stream that stays open after it.
func TestReadInputStopsAtTheFrameWithoutEndOfInput(t *testing.T) {
	in, err := EncodeInput(OpReadInstance, ReadInstanceParams{Instance: "MSSQLSERVER", Right: RightManageVolume})
	if err != nil {
		t.Fatal(err)
	}
	r, w := io.Pipe()
	defer w.Close()
	go func() { _, _ = w.Write(in) }() // and never closes: no end-of-input
	got := make(chan []byte, 1)
	errc := make(chan error, 1)
	go func() {
		b, err := ReadInput(r)
		got <- b
		errc <- err
	}()
	select {
	case b := <-got:
		if err := <-errc; err != nil || !bytes.Equal(b, in) {
			t.Fatalf("ReadInput = %d bytes, %v; want the %d bytes of the frame", len(b), err, len(in))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadInput waited for end-of-input")
	}
	if op, _, err := DecodeInput(in); err != nil || op != OpReadInstance {
		t.Fatalf("DecodeInput = %s, %v", op, err)
	}
}

func TestReadInputReportsWhereTheFrameBreaks(t *testing.T) {
	in, _ := EncodeInput(OpSetRight, SetRightParams{Right: RightManageVolume, SID: "S-1-5-32-544", Grant: true})
	lines := strings.SplitAfter(string(in), "\n")
	for _, c := range []struct{ input, stage string }{
		{"", "params"},
		{lines[0], "count"},
		{lines[0] + "many\n", "count"},
		{strings.Join(lines[:len(lines)-3], ""), "script"},
	} {
		_, err := ReadInput(strings.NewReader(c.input))
		var ie *InputError
		if !errors.As(err, &ie) || ie.Stage != c.stage {
			t.Errorf("ReadInput(%.40q...) = %v, want an InputError at %q", c.input, err, c.stage)
		}
	}
	// A count that does not match the script is refused.
	bad := lines[0] + "3\n" + strings.Join(lines[2:], "")
	if _, _, err := DecodeInput([]byte(bad)); !errors.Is(err, ErrUnknownScript) {
		t.Fatalf("DecodeInput accepted a wrong line count: %v", err)
	}
}

// instance_report.ps1 (read_instance's Get-InstanceReport) bounds its error-log scan with the numbers the simulator mirrors.
func TestErrorLogScanBoundsMatchTheScript(t *testing.T) {
	s := mustRead("instance_report.ps1")
	for _, want := range []string{
		fmt.Sprintf("$maxErrorLogLines = %d\n", ErrorLogScanMaxLines),
		fmt.Sprintf("$maxErrorLogBytes = %d\n", ErrorLogScanMaxBytes),
	} {
		if !strings.Contains(strings.ReplaceAll(s, "\r\n", "\n"), want) {
			t.Errorf("instance_report.ps1 does not hold %q", strings.TrimSpace(want))
		}
	}
}

// The bootstrap checks the language mode first, with core types only, and answers
// a ScriptError whose text is ConstrainedLanguageMessage's, exiting ExitRefused.
func TestBootstrapChecksTheLanguageModeFirst(t *testing.T) {
	b := Bootstrap()
	var code []string
	for _, l := range strings.Split(b, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			code = append(code, l)
		}
	}
	want := []string{
		"$mssqlifiMode = [string]$ExecutionContext.SessionState.LanguageMode",
		"if ($mssqlifiMode -ne 'FullLanguage') {",
		`'{"error":"` + CodeConstrainedLanguage + `","message":"` + ConstrainedLanguageMessage(`' + $mssqlifiMode + '`) + `"}'`,
		fmt.Sprintf("exit %d", ExitRefused),
		"}",
	}
	if len(code) < len(want) || strings.Join(code[:len(want)], "\n") != strings.Join(want, "\n") {
		t.Fatalf("the bootstrap does not begin with the language-mode check:\n%s\nwant:\n%s", strings.Join(code[:min(len(code), len(want))], "\n"), strings.Join(want, "\n"))
	}
}

// restart_instance.ps1 refuses the same timeouts as MaxRestartSeconds, the limit the
// provider checks at plan.
func TestRestartLimitMatchesTheScript(t *testing.T) {
	s := mustRead("restart_instance.ps1")
	for _, want := range []string{
		fmt.Sprintf("$timeoutSeconds -gt %d)", MaxRestartSeconds),
		fmt.Sprintf("between 1 and %d.", MaxRestartSeconds),
	} {
		if !strings.Contains(s, want) {
			t.Errorf("restart_instance.ps1 does not hold %q", want)
		}
	}
}

// instance_report.ps1's Get-HadrReport writes every field of HADRInfo under its JSON
// name, and reads the key and the cluster resource the simulator models.
func TestHadrReportMatchesTheScript(t *testing.T) {
	s := mustRead("instance_report.ps1")
	for _, want := range []string{"key_found =", "$report.enabled =", "$report.key_written =", "cluster_known =", "owned_groups =",
		"detail =", "hadr                   = (Get-HadrReport", `\MSSQLServer\HADR"`, "'HADR_Enabled'", "'root\\MSCluster'",
		"Type = 'SQL Server Availability Group'", "OwnerNode"} {
		if !strings.Contains(s, want) {
			t.Errorf("instance_report.ps1 does not hold %q", want)
		}
	}
	if !strings.Contains(mustRead("lsa.ps1"), "@('RegQueryInfoKey', [uint32], @(") {
		t.Error("lsa.ps1 does not declare RegQueryInfoKey")
	}
}

// event_log.ps1 writes under contract.EventSource with contract.Event* IDs, the
// numbers the simulator's event log uses.
func TestEventLogScriptMatchesGo(t *testing.T) {
	s := mustRead("event_log.ps1")
	for _, want := range []string{
		fmt.Sprintf("$source = '%s'", EventSource),
		fmt.Sprintf("@{ grant = %d; revoke = %d; restart = %d }", EventGrant, EventRevoke, EventRestart),
	} {
		if !strings.Contains(s, want) {
			t.Errorf("event_log.ps1 does not hold %q", want)
		}
	}
	for _, op := range []Operation{OpSetRight, OpRestartInstance} {
		if script, _ := Script(op); !strings.Contains(script, "function Write-ChangeEvent") {
			t.Errorf("the %s script does not define Write-ChangeEvent", op)
		}
	}
}
