package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/wsman"
)

type execResult struct {
	stdout, stderr string
	code           int
}

func execOp(t *testing.T, h *Host, user string, op contract.Operation, params any) execResult {
	t.Helper()
	in, err := contract.EncodeInput(op, params)
	if err != nil {
		t.Fatal(err)
	}
	return execCmd(h, wsman.Command{User: user, Command: contract.Shell, Arguments: contract.CommandArgs(), Stdin: bytes.NewReader(in)})
}

func execCmd(h *Host, cmd wsman.Command) execResult {
	var out, errb bytes.Buffer
	code := h.Execute(context.Background(), cmd, &out, &errb)
	return execResult{out.String(), errb.String(), code}
}

func decode[T any](t *testing.T, r execResult) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("stdout is not the contract's JSON: %v\nstdout: %s\nstderr: %s", err, r.stdout, r.stderr)
	}
	return v
}

func wantScriptError(t *testing.T, r execResult, code int, name string) contract.ScriptError {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d (stdout %s, stderr %s)", r.code, code, r.stdout, r.stderr)
	}
	se := decode[contract.ScriptError](t, r)
	if se.Error != name || se.Message == "" {
		t.Fatalf("script error %+v, want %s", se, name)
	}
	return se
}

func TestExecuteReadInstance(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Rights = map[string][]string{contract.RightManageVolume: {winsid.Administrators, engineSID, "S-1-5-21-9-9-9-4242"}}
	cfg.GroupPolicy.RSoPAvailable = boolp(false)
	cfg.Services = []ServiceConfig{{Name: "MSSQLLaunchpad", DependsOn: []string{"MSSQLSERVER"}, Stopped: true}}
	cfg.Instances[0].StartupTraceFlags = []int{3226}
	cfg.Instances[0].SQLPort = 1433
	h := newHost(t, cfg)
	r := execOp(t, h, "Administrator", contract.OpReadInstance, contract.ReadInstanceParams{Instance: "mssqlserver", Right: contract.RightManageVolume})
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
	res := decode[contract.ReadInstanceResult](t, r)
	if !res.Found || res.ComputerName != "SQL01" || res.InstanceID != "MSSQL16.MSSQLSERVER" || res.ServiceName != "MSSQLSERVER" ||
		res.ServiceState != contract.StateRunning || res.ProcessID == 0 || res.ProcessStartTime == nil ||
		res.StartAccount != `NT Service\MSSQLSERVER` || res.StartAccountSID != engineSID || res.ServiceSIDType != 1 ||
		res.TCPPort != 1433 || res.Version != "16.0.4135.4" || res.Clustered {
		t.Fatalf("result: %+v", res)
	}
	if res.ProcessStartTime.Location() != time.UTC {
		t.Fatalf("process start time not UTC: %v", res.ProcessStartTime)
	}
	wantParams := []string{`-dC:\Program Files\Microsoft SQL Server\MSSQL16.MSSQLSERVER\MSSQL\DATA\master.mdf`,
		`-eC:\Program Files\Microsoft SQL Server\MSSQL16.MSSQLSERVER\MSSQL\Log\ERRORLOG`,
		`-lC:\Program Files\Microsoft SQL Server\MSSQL16.MSSQLSERVER\MSSQL\DATA\mastlog.ldf`, "-T3226"}
	if strings.Join(res.StartupParameters, "|") != strings.Join(wantParams, "|") {
		t.Fatalf("startup parameters %v", res.StartupParameters)
	}
	// Holders are SIDs only: read_instance does not translate them (a lookup per
	// holder per refresh, possibly at a domain controller).
	names := map[string]string{}
	for _, p := range res.RightHolders {
		names[p.SID] = p.Name
	}
	if len(res.RightHolders) != 3 || len(names) != 3 || names[winsid.Administrators] != "" ||
		names[engineSID] != "" || names["S-1-5-21-9-9-9-4242"] != "" {
		t.Fatalf("holders %+v", res.RightHolders)
	}
	if len(res.AdministratorsMembers) != 1 || !strings.HasSuffix(res.AdministratorsMembers[0].SID, "-500") || res.AdministratorsMembers[0].Name != `SQL01\Administrator` {
		t.Fatalf("administrators %+v", res.AdministratorsMembers)
	}
	if res.GroupPolicy.Known || res.GroupPolicy.Detail == "" {
		t.Fatalf("group policy with RSoP off: %+v", res.GroupPolicy)
	}
	if !res.ErrorLog.Found || res.ErrorLog.Enabled == nil || !*res.ErrorLog.Enabled ||
		res.ErrorLog.Path != `C:\Program Files\Microsoft SQL Server\MSSQL16.MSSQLSERVER\MSSQL\Log\ERRORLOG` ||
		!strings.Contains(res.ErrorLog.Line, "Database Instant File Initialization: enabled.") {
		t.Fatalf("errorlog %+v", res.ErrorLog)
	}
	if len(res.Dependents) != 2 || res.Dependents[0] != (contract.ServiceInfo{Name: "SQLSERVERAGENT", State: contract.StateRunning}) ||
		res.Dependents[1] != (contract.ServiceInfo{Name: "MSSQLLaunchpad", State: contract.StateStopped}) {
		t.Fatalf("dependents %+v", res.Dependents)
	}
	if len(res.InstalledInstances) != 1 || res.InstalledInstances[0] != "MSSQLSERVER" {
		t.Fatalf("installed %v", res.InstalledInstances)
	}

	// Group Policy as RSoP reports it.
	cfg = baseConfig()
	cfg.GroupPolicy.Rights = map[string][]string{contract.RightManageVolume: {`BUILTIN\Administrators`}}
	h = newHost(t, cfg)
	res = decode[contract.ReadInstanceResult](t, execOp(t, h, "administrator", contract.OpReadInstance, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume}))
	if !res.GroupPolicy.Known || !res.GroupPolicy.Defined || len(res.GroupPolicy.Holders) != 1 || res.GroupPolicy.Holders[0].SID != winsid.Administrators {
		t.Fatalf("group policy %+v", res.GroupPolicy)
	}

	// Not installed: found=false with the installed instances, exit 0.
	r = execOp(t, h, "Administrator", contract.OpReadInstance, contract.ReadInstanceParams{Instance: "NOPE", Right: contract.RightManageVolume})
	res = decode[contract.ReadInstanceResult](t, r)
	if r.code != 0 || res.Found || len(res.InstalledInstances) != 1 || res.ComputerName != "SQL01" {
		t.Fatalf("missing instance: exit %d %+v", r.code, res)
	}
	// Validation.
	wantScriptError(t, execOp(t, h, "Administrator", contract.OpReadInstance, contract.ReadInstanceParams{Instance: "bad name;", Right: contract.RightManageVolume}), 2, "invalid_parameters")
	wantScriptError(t, execOp(t, h, "Administrator", contract.OpReadInstance, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: "x"}), 2, "invalid_parameters")
	wantScriptError(t, execOp(t, h, "Administrator", contract.OpReadInstance, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: "SeServiceLogonRight"}), 2, "invalid_parameters")
	r = execOp(t, h, "Administrator", contract.OpReadInstance, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: "SeFooPrivilege"})
	if r.code != 1 || !strings.Contains(r.stderr, "A specified privilege does not exist. (NTSTATUS 0xC0000060)") {
		t.Fatalf("unknown privilege: %+v", r)
	}
	// A user who is not an administrator: the LSA refuses, and the script lets the
	// exception terminate it.
	r = execOp(t, h, `CONTOSO\reader`, contract.OpReadInstance, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "LsaOpenPolicy failed: Access is denied.") {
		t.Fatalf("non-admin: %+v", r)
	}
}

func TestExecuteSetRight(t *testing.T) {
	t.Parallel()
	h := newHost(t, baseConfig())
	grant := contract.SetRightParams{Right: contract.RightManageVolume, SID: engineSID, Grant: true}
	r := execOp(t, h, "Administrator", contract.OpSetRight, grant)
	res := decode[contract.SetRightResult](t, r)
	if r.code != 0 || !res.Changed || len(res.Holders) != 2 || res.Holders[1] != (contract.Principal{SID: engineSID}) {
		t.Fatalf("grant: exit %d %+v", r.code, res)
	}
	res = decode[contract.SetRightResult](t, execOp(t, h, "Administrator", contract.OpSetRight, grant))
	if res.Changed {
		t.Fatal("a second grant reported a change")
	}
	// Lower-case "s-1-..." is accepted as ConvertStringSidToSid does.
	res = decode[contract.SetRightResult](t, execOp(t, h, "Administrator", contract.OpSetRight, contract.SetRightParams{Right: contract.RightManageVolume, SID: strings.ToLower(engineSID), Grant: false}))
	if !res.Changed || len(res.Holders) != 1 {
		t.Fatalf("revoke: %+v", res)
	}
	wantScriptError(t, execOp(t, h, "Administrator", contract.OpSetRight, contract.SetRightParams{Right: contract.RightManageVolume, SID: "NT SERVICE\\MSSQLSERVER", Grant: true}), 2, "invalid_parameters")
	wantScriptError(t, execOp(t, h, "Administrator", contract.OpSetRight, contract.SetRightParams{Right: contract.RightManageVolume, SID: "S-1-5-80-99999999999", Grant: true}), 2, "invalid_parameters")
	se := wantScriptError(t, execOp(t, h, `CONTOSO\reader`, contract.OpSetRight, grant), 1, "lsa_error")
	if !strings.Contains(se.Message, "Access is denied") {
		t.Fatalf("non-admin: %+v", se)
	}
	// Only the managed rights (SeManageVolumePrivilege, SeLockMemoryPrivilege), in the
	// script itself: a stolen session cannot grant SeDebugPrivilege or SeTcbPrivilege
	// (issue 7), nor an unknown right, nor a managed one spelt in another case.
	for _, right := range []string{"SeDebugPrivilege", "SeTcbPrivilege", "SeFooPrivilege", "SelockMemoryPrivilege"} {
		se := wantScriptError(t, execOp(t, h, "Administrator", contract.OpSetRight, contract.SetRightParams{Right: right, SID: "S-1-1-0", Grant: true}), 2, "invalid_parameters")
		if !strings.Contains(se.Message, "only SeManageVolumePrivilege and SeLockMemoryPrivilege;") {
			t.Errorf("set_right %s: %q, want a refusal naming the only allowed right", right, se.Message)
		}
		if holders, _ := h.RightHolders(right); slices.Contains(holders, "S-1-1-0") {
			t.Errorf("set_right %s granted it to Everyone", right)
		}
	}
	if holders, _ := h.RightHolders(contract.RightManageVolume); len(holders) != 1 {
		t.Fatalf("a refused grant changed the holders: %v", holders)
	}
}

func TestExecuteRestartInstance(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances[0].StartMS, cfg.Instances[0].StopMS = 15, 15
	cfg.Services = []ServiceConfig{
		{Name: "MSSQLLaunchpad", DependsOn: []string{"MSSQLSERVER"}, Stopped: true},
		{Name: "SQLTELEMETRY", DependsOn: []string{"MSSQLSERVER"}, StopMS: 30},
	}
	cfg.Rights = map[string][]string{contract.RightManageVolume: {winsid.Administrators}}
	h := newHost(t, cfg)
	inst, _ := h.Instance("MSSQLSERVER")
	if _, err := h.GrantRight(contract.RightManageVolume, engineSID); err != nil {
		t.Fatal(err)
	}
	if dmvIFI(t, inst) != "N" {
		t.Fatal("IFI before restart")
	}
	before := inst.Process().Started
	r := execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30})
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	res := decode[contract.RestartInstanceResult](t, r)
	if res.ServiceName != "MSSQLSERVER" || res.ServiceState != contract.StateRunning || res.ProcessStartTime == nil || !res.ProcessStartTime.After(before) {
		t.Fatalf("result %+v", res)
	}
	// Dependents stop first (in parallel, so in either order), the Engine last; the
	// Engine starts first, then only the dependents that ran.
	if got := strings.Join(res.Stopped, ","); got != "SQLSERVERAGENT,SQLTELEMETRY,MSSQLSERVER" && got != "SQLTELEMETRY,SQLSERVERAGENT,MSSQLSERVER" {
		t.Fatalf("stopped %v", res.Stopped)
	}
	if res.Started[0] != "MSSQLSERVER" || len(res.Started) != 3 || strings.Contains(strings.Join(res.Started, ","), "Launchpad") {
		t.Fatalf("started %v", res.Started)
	}
	if res.FinishedAt == nil || res.FinishedAt.Before(res.StartedAt) || !res.Finished || res.Error != "" {
		t.Fatalf("times %v %v", res.StartedAt, res.FinishedAt)
	}
	for _, s := range []string{"SQLSERVERAGENT", "SQLTELEMETRY"} {
		if st, _ := h.ServiceState(s); st != contract.StateRunning {
			t.Fatalf("%s is %s after the restart", s, st)
		}
	}
	if st, _ := h.ServiceState("MSSQLLaunchpad"); st != contract.StateStopped {
		t.Fatalf("a dependent that was stopped was started: %s", st)
	}
	if dmvIFI(t, inst) != "Y" {
		t.Fatal("IFI not on after restart_instance")
	}

	wantScriptError(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "OTHER", TimeoutSeconds: 30}), 5, "not_found")
	wantScriptError(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 0}), 2, "invalid_parameters")
	r = execOp(t, h, `CONTOSO\reader`, contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30})
	if r.code != 1 || !strings.Contains(r.stderr, "Cannot open MSSQLSERVER service") {
		t.Fatalf("non-admin restart: %+v", r)
	}
}

func TestExecuteRestartRefusalsAndTimeout(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances = append(cfg.Instances,
		InstanceConfig{Name: "FCI", Clustered: true},
		InstanceConfig{Name: "SLOW", StartMS: 1500},
		InstanceConfig{Name: "BROKEN", FailStart: true, Stopped: true},
	)
	h := newHost(t, cfg)
	wantScriptError(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "FCI", TimeoutSeconds: 30}), 3, "clustered")
	if st, _ := h.ServiceState("MSSQL$FCI"); st != contract.StateRunning {
		t.Fatalf("refused restart touched the clustered Engine: %s", st)
	}
	// A restart that ran reports its outcome with exit 0; the error is in the result.
	slow := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "SLOW", TimeoutSeconds: 1}))
	if slow.Error != contract.RestartTimeout || !strings.Contains(slow.Message, contract.StateStartPending) {
		t.Fatalf("slow start: %+v", slow)
	}
	// A start that fails after the SCM accepted it: retried, then reported at once
	// with the Windows error and the error log's last lines, not at the deadline.
	start := time.Now()
	broken := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "BROKEN", TimeoutSeconds: 60}))
	if broken.Error != contract.RestartStartFailed || broken.Win32ExitCode != 1067 || broken.StartAttempts != contract.RestartStartAttempts ||
		!strings.Contains(broken.Message, "MSSQL$BROKEN") || !strings.Contains(broken.Message, "1067") ||
		!strings.Contains(strings.Join(broken.ErrorLogTail, "\n"), "17058") {
		t.Fatalf("failed start: %+v", broken)
	}
	// Before its 60 s deadline: an answer at the deadline would have taken it all.
	if d := time.Since(start); d >= 60*time.Second {
		t.Fatalf("a failed start was reported after %s, at its deadline, not when it happened", d)
	}
}

// restartResult decodes a restart_instance or restart_status answer (exit 0).
func restartResult(t *testing.T, r execResult) contract.RestartInstanceResult {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	return decode[contract.RestartInstanceResult](t, r)
}

func TestExecuteUnrecognised(t *testing.T) {
	t.Parallel()
	h := newHost(t, baseConfig())
	in, _ := contract.EncodeInput(contract.OpReadInstance, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
	altered := strings.Replace(string(in), "$ErrorActionPreference", "Remove-Item C:\\ -Recurse; $ErrorActionPreference", 1)
	isPSError := func(t *testing.T, r execResult, contains string) {
		t.Helper()
		if r.code != 1 || r.stdout != "" || !strings.HasPrefix(r.stderr, "#< CLIXML\r\n<Objs Version=\"1.1.0.1\" xmlns=\"http://schemas.microsoft.com/powershell/2004/04\"><S S=\"Error\">") ||
			!strings.Contains(r.stderr, "_x000D__x000A_</S>") || !strings.HasSuffix(r.stderr, "</Objs>") || !strings.Contains(r.stderr, contains) {
			t.Fatalf("want a PowerShell error containing %q, got %+v", contains, r)
		}
	}
	ps := func(args []string, stdin string) execResult {
		return execCmd(h, wsman.Command{User: "Administrator", Command: "powershell.exe", Arguments: args, Stdin: strings.NewReader(stdin)})
	}
	isPSError(t, ps(contract.CommandArgs(), altered), "winsim does not model this script")
	isPSError(t, ps(contract.CommandArgs(), "not base64!\n"+strings.SplitN(string(in), "\n", 2)[1]), "FromBase64String")
	isPSError(t, ps(contract.CommandArgs(), "no newline"), "null-valued expression")
	isPSError(t, ps(contract.CommandArgs(), strings.SplitN(string(in), "\n", 2)[0]+"\nmany\n"), `Cannot convert value "many" to type "System.Int32"`)
	isPSError(t, ps(contract.CommandArgs(), string(in[:len(in)-200])), "stdin ended after")
	args := contract.CommandArgs()
	args[5] = contract.EncodeCommand("Get-Process")
	isPSError(t, ps(args, string(in)), "not the mssqlifi bootstrap")
	args[5] = "%%%"
	isPSError(t, ps(args, string(in)), "not properly encoded")
	isPSError(t, ps([]string{"-Command", "Get-Date"}, ""), "does not model this PowerShell command line")

	// The whole command line in rsp:Command, as masterzen's Run sends it.
	r := execCmd(h, wsman.Command{User: "Administrator", Command: contract.CommandLine(), Stdin: bytes.NewReader(in)})
	if r.code != 0 || !decode[contract.ReadInstanceResult](t, r).Found {
		t.Fatalf("command line in one string: %+v", r)
	}

	for _, c := range []wsman.Command{
		{Command: "cmd", Arguments: []string{"/c", "foo"}},
		{Command: "foo"},
		{Command: "cmd /c foo"},
	} {
		r := execCmd(h, c)
		if r.code != 1 || r.stderr != "'foo' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n" {
			t.Fatalf("%+v: %+v", c, r)
		}
	}
	if r := execCmd(h, wsman.Command{Command: "hostname"}); r.code != 0 || r.stdout != "SQL01\r\n" {
		t.Fatalf("hostname: %+v", r)
	}
}

func TestClixmlEscape(t *testing.T) {
	t.Parallel()
	got := clixmlError("a <b> & c_x\r\nline2", "", "")
	want := "#< CLIXML\r\n<Objs Version=\"1.1.0.1\" xmlns=\"http://schemas.microsoft.com/powershell/2004/04\">" +
		"<S S=\"Error\">a &lt;b&gt; &amp; c_x005F_x_x000D__x000A_</S><S S=\"Error\">line2_x000D__x000A_</S><S S=\"Error\"> _x000D__x000A_</S></Objs>"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

func TestAudit(t *testing.T) {
	t.Parallel()
	h := newHost(t, baseConfig())
	execOp(t, h, "Administrator", contract.OpSetRight, contract.SetRightParams{Right: contract.RightManageVolume, SID: engineSID, Grant: true})
	execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "NOPE", TimeoutSeconds: 5})
	execCmd(h, wsman.Command{User: `CONTOSO\reader`, Command: "whoami"})
	a := h.Audit()
	if len(a) != 3 {
		t.Fatalf("%d audit entries: %+v", len(a), a)
	}
	if a[0].User != "Administrator" || a[0].Operation != "set_right" || a[0].ExitCode != 0 || a[0].Time.IsZero() ||
		!strings.Contains(string(a[0].Params), engineSID) || !strings.Contains(a[0].Command, "<mssqlifi bootstrap") {
		t.Fatalf("entry 0: %+v", a[0])
	}
	if a[1].Operation != "restart_instance" || a[1].ExitCode != 5 || !strings.HasPrefix(a[1].Error, "not_found") {
		t.Fatalf("entry 1: %+v", a[1])
	}
	if a[2].Operation != "" || a[2].ExitCode != 1 || a[2].User != `CONTOSO\reader` || a[2].Command != "whoami" {
		t.Fatalf("entry 2: %+v", a[2])
	}
	if _, err := json.Marshal(h.Snapshot()); err != nil {
		t.Fatal(err)
	}
}

// An instance whose name starts with "_" (older Setup allowed it, and it survives
// upgrades) is modelled like any other; names outside the rule never reach it.
func TestExecuteUnderscoreInstanceAndHostileNames(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances = append(cfg.Instances, InstanceConfig{Name: "_ETL"})
	h := newHost(t, cfg)
	r := execOp(t, h, "Administrator", contract.OpReadInstance, contract.ReadInstanceParams{Instance: "_etl", Right: contract.RightManageVolume})
	if r.code != 0 {
		t.Fatalf("read_instance _etl: exit %d, stdout %s, stderr %s", r.code, r.stdout, r.stderr)
	}
	res := decode[contract.ReadInstanceResult](t, r)
	if !res.Found || res.ServiceName != "MSSQL$_ETL" || res.StartAccount != `NT Service\MSSQL$_ETL` {
		t.Fatalf("_ETL: found %v, service %q, start account %q; want MSSQL$_ETL", res.Found, res.ServiceName, res.StartAccount)
	}
	if _, err := h.ServiceState("SQLAgent$_ETL"); err != nil {
		t.Errorf("the Agent of _ETL: %v", err)
	}
	for _, name := range []string{"Δ1", "\u212AELVIN", "ſql", "İNST", "SQL٣", "ＳＱＬ", "SQL-01"} {
		r := execOp(t, h, "Administrator", contract.OpReadInstance, contract.ReadInstanceParams{Instance: name, Right: contract.RightManageVolume})
		if r.code != contract.ExitInvalidParams || !strings.Contains(r.stdout, "invalid_parameters") {
			t.Errorf("read_instance %q: exit %d, stdout %s; want invalid_parameters (exit 2)", name, r.code, r.stdout)
		}
	}
}

// read_instance scans only the error log's startup section: an IFI line past it is
// not found (as on a host whose log the script must not read whole). And Group
// Policy tells "RSoP has no data" (unknown) from "no policy defines the right".
func TestReadInstanceBoundsAndGroupPolicyKnowledge(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		noise     int
		rsop      bool
		wantLog   bool
		wantKnown bool
		gpDetail  string
	}{
		{"short log, RSoP without the right", 10, true, true, true, "No Group Policy setting defines the right"},
		{"IFI line past the scanned section, RSoP without data", contract.ErrorLogScanMaxLines, false, false, false, "RSoP has no data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			cfg.GroupPolicy.RSoPAvailable = boolp(tc.rsop)
			cfg.Instances[0].StartupNoiseLines = tc.noise
			h := newHost(t, cfg)
			r := execOp(t, h, "Administrator", contract.OpReadInstance, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
			res := decode[contract.ReadInstanceResult](t, r)
			if res.ErrorLog.Found != tc.wantLog {
				t.Errorf("errorlog found %v, want %v", res.ErrorLog.Found, tc.wantLog)
			}
			if res.GroupPolicy.Known != tc.wantKnown || res.GroupPolicy.Defined || !strings.Contains(res.GroupPolicy.Detail, tc.gpDetail) {
				t.Errorf("group policy %+v, want known %v, not defined, detail with %q", res.GroupPolicy, tc.wantKnown, tc.gpDetail)
			}
		})
	}
}

// A domain group in Administrators is reported as itself: read_instance does not
// expand its members, although the start account's token has Administrators
// through it (the restart after a revoke leaves IFI on).
func TestReadInstanceDoesNotExpandNestedGroups(t *testing.T) {
	t.Parallel()
	const groupSID = "S-1-5-21-1004336348-1177238915-682003330-2201"
	cfg := baseConfig()
	cfg.Accounts[`CONTOSO\SQL Admins`] = groupSID
	cfg.Administrators = []string{`CONTOSO\SQL Admins`}
	cfg.Groups = map[string][]string{`CONTOSO\SQL Admins`: {`CONTOSO\sqlsvc`}}
	cfg.Instances[0].ServiceAccount = `CONTOSO\sqlsvc`
	h := newHost(t, cfg)
	res := decode[contract.ReadInstanceResult](t, execOp(t, h, "Administrator", contract.OpReadInstance,
		contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume}))
	var admins []string
	for _, p := range res.AdministratorsMembers {
		admins = append(admins, p.SID)
	}
	if !slices.Contains(admins, groupSID) || slices.Contains(admins, sqlsvcSID) {
		t.Fatalf("administrators_members %v: want the group %s and not its member %s", admins, groupSID, sqlsvcSID)
	}
	inst, _ := h.Instance("MSSQLSERVER")
	if p := inst.Process(); p == nil || !p.IFI || !slices.Contains(p.TokenSIDs, groupSID) || !slices.Contains(p.TokenSIDs, winsid.Administrators) {
		t.Fatalf("process %+v: want IFI through the group's Administrators membership", p)
	}
}

// Under an AppLocker or App Control policy that enforces script rules, PowerShell
// runs the bootstrap in ConstrainedLanguage mode: it answers constrained_language
// (exit 3) before it reads stdin, whatever the operation; lifting the policy ends it.
func TestExecuteConstrainedLanguage(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.PowerShellLanguageMode = "constrainedlanguage"
	h := newHost(t, cfg)
	r := execOp(t, h, "Administrator", contract.OpSetRight, contract.SetRightParams{Right: contract.RightManageVolume, SID: engineSID, Grant: true})
	se := wantScriptError(t, r, contract.ExitRefused, contract.CodeConstrainedLanguage)
	if se.Message != contract.ConstrainedLanguageMessage(LanguageConstrained) || !strings.HasSuffix(r.stdout, "}\r\n") {
		t.Fatalf("stdout %q", r.stdout)
	}
	for _, p := range h.Snapshot().Rights[contract.RightManageVolume] {
		if p.SID == engineSID {
			t.Fatal("set_right ran in ConstrainedLanguage mode")
		}
	}
	if a := h.Audit(); len(a) != 1 || a[0].Operation != "" || !strings.HasPrefix(a[0].Error, contract.CodeConstrainedLanguage) || a[0].ExitCode != contract.ExitRefused {
		t.Fatalf("audit %+v: want one entry without an operation (stdin unread), the error and exit 3", a)
	}
	if err := h.SetLanguageMode("NoLanguage"); !errors.Is(err, ErrBadLanguageMode) {
		t.Fatalf("SetLanguageMode(NoLanguage) = %v, want ErrBadLanguageMode", err)
	}
	if err := h.SetLanguageMode(LanguageFull); err != nil {
		t.Fatal(err)
	}
	r = execOp(t, h, "Administrator", contract.OpReadInstance, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
	if r.code != 0 {
		t.Fatalf("read_instance after the policy was lifted: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}
}
