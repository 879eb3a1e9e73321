package contract

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// common.ps1's $ManagedRights is contract.ManagedRights: the same rights in the same
// order, and Test-ManagedRight compares them exactly (-ccontains), as IsManagedRight.
func TestScriptManagedRightsMatchGo(t *testing.T) {
	src := mustRead("common.ps1")
	m := regexp.MustCompile(`(?m)^\$ManagedRights = @\(([^)]*)\)$`).FindStringSubmatch(src)
	if m == nil {
		t.Fatal("common.ps1 lacks a line `$ManagedRights = @('...', ...)`")
	}
	var got []string
	for _, q := range regexp.MustCompile(`'([^']*)'`).FindAllStringSubmatch(m[1], -1) {
		got = append(got, q[1])
	}
	if !slices.Equal(got, ManagedRights) {
		t.Errorf("common.ps1's $ManagedRights %q differs from contract.ManagedRights %q", got, ManagedRights)
	}
	if !strings.Contains(src, "return ($ManagedRights -ccontains $Name)") {
		t.Error("common.ps1's Test-ManagedRight does not compare exactly (-ccontains) as contract.IsManagedRight does")
	}
	for _, r := range ManagedRights {
		if !IsManagedRight(r) || IsManagedRight(strings.ToLower(r)) {
			t.Errorf("IsManagedRight(%q) or its lower case answers wrong", r)
		}
	}
	if IsManagedRight("SeDebugPrivilege") || IsManagedRight("") {
		t.Error("IsManagedRight accepts a right outside ManagedRights")
	}
	// Each script that changes a right asks Test-ManagedRight first.
	for _, s := range []string{"set_right.ps1", "restart_instance.ps1", "right_change.ps1"} {
		if !strings.Contains(mustRead(s), "Test-ManagedRight -Name") {
			t.Errorf("%s does not check the right with Test-ManagedRight", s)
		}
	}
}

// instance_report.ps1's $memoryLines map the error log's memory manager lines to
// the models as contract.MemoryLines does, and its pattern finds each of them.
func TestScriptMemoryLinesMatchGo(t *testing.T) {
	src := mustRead("instance_report.ps1")
	block := regexp.MustCompile(`(?s)\$memoryLines = @\{(.*?)\n\s*\}`).FindStringSubmatch(src)
	if block == nil {
		t.Fatal("instance_report.ps1 lacks `$memoryLines = @{ ... }`")
	}
	got := map[string]string{}
	for _, e := range regexp.MustCompile(`'([^']*)'\s*=\s*'([^']*)'`).FindAllStringSubmatch(block[1], -1) {
		got[e[1]] = e[2]
	}
	if len(got) != len(MemoryLines) {
		t.Errorf("instance_report.ps1's $memoryLines has %d entries, contract.MemoryLines %d", len(got), len(MemoryLines))
	}
	pm := regexp.MustCompile(`\$line -match '(Using [^']*)'`).FindStringSubmatch(src)
	if pm == nil {
		t.Fatal("instance_report.ps1 lacks the memory manager line's -match pattern")
	}
	pattern := regexp.MustCompile("(?i)" + pm[1])
	for text, model := range MemoryLines {
		if got[text] != model {
			t.Errorf("instance_report.ps1 maps %q to %q; contract.MemoryLines says %q", text, got[text], model)
		}
		line := "2026-12-06 21:00:00.00 Server      " + text
		if found := pattern.FindString(line); found != text {
			t.Errorf("instance_report.ps1's pattern finds %q in %q; want the message %q (the $memoryLines key)", found, line, text)
		}
	}
}

// Every read-back reads with RightManageVolume whichever right changed (so
// right_holders is always IFI's right and lock_pages Lock Pages in Memory's), as
// SetRightParams.ReadBack says; the simulator reads back the same way.
func TestScriptReadBacksReadIFIsRight(t *testing.T) {
	for script, want := range map[string]string{
		"set_right.ps1":        "Get-InstanceReport -InstanceName $readBack -Right '" + RightManageVolume + "'",
		"restart_instance.ps1": "Get-InstanceReport -InstanceName $instanceName -Right '" + RightManageVolume + "'",
	} {
		if !strings.Contains(mustRead(script), want) {
			t.Errorf("%s lacks %q", script, want)
		}
	}
}

// RSoP logging turned off by policy (or preference) leaves root\rsop\computer with
// what was logged before: instance_report.ps1 reads RSoPLogging from both keys
// (the policy first) before it asks RSoP, and reports the right's Group Policy as
// unknown, naming the value (Microsoft Learn, "Developing an RSoP Management Tool":
// HKLM\Software\Policies\Microsoft\Windows\System\RSoPLogging, and the Winlogon
// preference; issue 37).
func TestRSoPLoggingOffIsUnknownInTheScripts(t *testing.T) {
	s := mustRead("instance_report.ps1")
	wantInOrder(t, "instance_report.ps1", s, []string{"function Get-RSoPLoggingOff",
		`'HKLM:\SOFTWARE\Policies\Microsoft\Windows\System', 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Winlogon'`,
		"GetValue('RSoPLogging', $null)", "if ([int]$value -eq 0) {", "function Get-RightPolicy", "$loggingOff = Get-RSoPLoggingOff",
		"if ($loggingOff) {\n            throw", "-ClassName 'RSOP_GPO'", "known = $false; defined = $false; holders = @(); detail = $why; rsop_logging_off = [string]$loggingOff"})
	var gp GroupPolicyInfo
	if err := json.Unmarshal([]byte(`{"known":false,"rsop_logging_off":"HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows\\System\\RSoPLogging = 0"}`), &gp); err != nil ||
		gp.RSoPLoggingOff == "" {
		t.Errorf("GroupPolicyInfo does not read rsop_logging_off: %+v %v", gp, err)
	}
}
