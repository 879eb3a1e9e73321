package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
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

// read_instance.ps1 bounds its error-log scan with the numbers the simulator mirrors.
func TestErrorLogScanBoundsMatchTheScript(t *testing.T) {
	s := mustRead("read_instance.ps1")
	for _, want := range []string{
		fmt.Sprintf("$maxErrorLogLines = %d\n", ErrorLogScanMaxLines),
		fmt.Sprintf("$maxErrorLogBytes = %d\n", ErrorLogScanMaxBytes),
	} {
		if !strings.Contains(strings.ReplaceAll(s, "\r\n", "\n"), want) {
			t.Errorf("read_instance.ps1 does not hold %q", strings.TrimSpace(want))
		}
	}
}
