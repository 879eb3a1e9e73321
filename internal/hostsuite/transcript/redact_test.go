package transcript

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// Values as a real run against a domain-joined host would meet them.
const (
	plantWinRMPassword = "Tr0ub4dor&3-winrm"
	plantSQLPassword   = "c0rrect-h0rse-Battery"
	plantHost          = "SQLPROD07"
	plantFQDN          = "sqlprod07.corp.fabrikam.net"
	plantDomain        = "FABRIKAM"
	plantDNSDomain     = "corp.fabrikam.net"
	plantUser          = "svc-winrm-ops"
	plantSQLLogin      = "ifi_monitor"
	plantServiceUser   = "sqlsvc-prod"
	plantDomainSID     = "S-1-5-21-3623811015-3361044348-30300820"
	plantUserSID       = plantDomainSID + "-1107"
	plantAdminSID      = plantDomainSID + "-500"
	plantIPv4          = "10.40.12.77"
	plantIPv6          = "fd12:3456:789a:1::77"
	plantThumbprint    = "3B2D4F5A6C7E8F901A2B3C4D5E6F708192A3B4C5"
	plantNamedInstance = "PAYROLL"
)

var plantedNames = []string{plantHost, plantFQDN, plantDomain, plantDNSDomain, plantUser, plantSQLLogin, plantServiceUser,
	"3623811015", "3361044348", "30300820", plantIPv4, plantIPv6, plantThumbprint, plantWinRMPassword, plantSQLPassword, "Users\\" + plantUser}

func plantedKnown() Known {
	return Known{
		Secrets: []string{plantWinRMPassword, plantSQLPassword},
		Hosts:   []string{plantFQDN},
		Users:   []string{plantDomain + `\` + plantUser, plantSQLLogin},
	}
}

// plantedRecorder records a run against a host full of identifying values, the way
// the suite calls the recorder.
func plantedRecorder(t *testing.T) *Recorder {
	t.Helper()
	r := NewRecorder(SourceReal, plantedKnown())
	r.Describe(func(tr *Transcript) {
		tr.Host = plantFQDN
		tr.Windows, tr.PowerShell, tr.SQLVersion = "10.0.20348", "5.1.20348.2849", "16.0.4135.4"
		tr.Facts = Facts{Instance: "MSSQLSERVER", Auth: "kerberos", SQLLogin: &LoginFacts{ViewServerState: true}}
	})
	svcSID := winsid.ServiceSID("MSSQLSERVER")
	payrollSID := winsid.ServiceSID("MSSQL$" + plantNamedInstance)
	read := map[string]any{
		"computer_name": plantHost, "found": true, "installed_instances": []string{"MSSQLSERVER", plantNamedInstance},
		"instance": "MSSQLSERVER", "instance_id": "MSSQL16.MSSQLSERVER", "version": "16.0.4135.4",
		"service_name": "MSSQLSERVER", "service_state": "Running", "process_id": 4312,
		"start_account": plantDomain + `\` + plantServiceUser, "start_account_sid": plantUserSID, "service_sid_type": 1,
		"right_holders":          []map[string]string{{"sid": winsid.Administrators, "name": `BUILTIN\Administrators`}, {"sid": svcSID, "name": `NT SERVICE\MSSQLSERVER`}, {"sid": payrollSID, "name": `NT SERVICE\MSSQL$` + plantNamedInstance}},
		"administrators_members": []map[string]string{{"sid": plantAdminSID, "name": plantHost + `\Administrator`}, {"sid": plantDomainSID + "-512", "name": plantDomain + `\Domain Admins`}, {"sid": plantDomainSID + "-1203", "name": plantDomain + `\` + plantUser}},
		"errorlog": map[string]any{"path": `D:\SQLData\MSSQL16.MSSQLSERVER\MSSQL\Log\ERRORLOG`, "found": true,
			"line": "2026-11-30 07:12:44.31 Server      Database Instant File Initialization: enabled. For security and performance considerations see the topic 'Database Instant File Initialization' in SQL Server Books Online. This is an informational message only. No user action is required."},
	}
	stdout, _ := json.Marshal(read)
	r.Operation("read", string(contract.OpReadInstance), map[string]any{"instance": "MSSQLSERVER", "right": contract.RightManageVolume, "password": plantWinRMPassword}, 0, stdout, nil)
	stderr := `#< CLIXML
<Objs Version="1.1.0.1" xmlns="http://schemas.microsoft.com/powershell/2004/04"><S S="Error">Access to the path 'C:\Users\` + plantUser + `\AppData\Local\Temp\mssqlifi.tmp' is denied on ` + plantFQDN + ` (` + plantIPv4 + `, ` + plantIPv6 + `)._x000D__x000A_</S><S S="Error">SPN HTTP/` + plantFQDN + `:5986@` + strings.ToUpper(plantDNSDomain) + ` certificate ` + plantThumbprint + ` share \\` + plantHost + `\backup$\nightly_x000D__x000A_</S></Objs>`
	r.Operation("change", string(contract.OpSetRight), contract.SetRightParams{Right: contract.RightManageVolume, SID: svcSID, Grant: true}, 1, nil, []byte(stderr))
	r.SQL("preflight", "SELECT CAST(SERVERPROPERTY('MachineName') AS nvarchar(128)) AS machine_name, SUSER_NAME() AS login_name",
		[]string{"machine_name", "login_name", "service_account"}, []string{"NVARCHAR", "NVARCHAR", "NVARCHAR"},
		[][]any{{plantHost, plantSQLLogin, plantDomain + `\` + plantServiceUser}}, nil)
	r.SQL("preflight", "SELECT name FROM sys.availability_groups", []string{"name"}, []string{"NVARCHAR"}, nil, nil)
	r.Error("preflight", ProbeClearText, HTTPShape(500, "", nil), errors.New("http error 500: unencrypted request from "+plantIPv4+" by "+plantUser+" with password "+plantWinRMPassword))
	r.Error("read", ProbeSQLLogin, ErrorShape{}, fakeSQLError{18456, 14, 1, "Login failed for user '" + plantSQLLogin + "'. password " + plantSQLPassword})
	return r
}

type fakeSQLError struct {
	number       int32
	class, state uint8
	msg          string
}

func (e fakeSQLError) Error() string         { return "mssql: " + e.msg }
func (e fakeSQLError) SQLErrorNumber() int32 { return e.number }
func (e fakeSQLError) SQLErrorClass() uint8  { return e.class }
func (e fakeSQLError) SQLErrorState() uint8  { return e.state }

// The written file holds none of the planted passwords, host, domain and user
// names, domain SIDs, addresses or thumbprints, and still reads as a transcript.
func TestWrittenTranscriptHoldsNoPlantedSecret(t *testing.T) {
	dir := t.TempDir()
	path, err := plantedRecorder(t).WriteFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lower := strings.ToLower(string(raw))
	for _, p := range plantedNames {
		if strings.Contains(lower, strings.ToLower(p)) {
			t.Errorf("the written transcript still holds %q:\n%s", p, raw)
		}
	}
	if strings.Contains(filepath.Base(path), strings.ToLower(plantHost)) || strings.Contains(strings.ToLower(filepath.Base(path)), "sqlprod") {
		t.Errorf("the file name %s names the host", filepath.Base(path))
	}
	tr, err := Load(path)
	if err != nil {
		t.Fatalf("the written transcript does not load: %v", err)
	}
	if tr.Source != SourceReal || len(tr.Entries) != 6 || tr.Facts.Instance != "MSSQLSERVER" {
		t.Errorf("transcript = source %q, %d entries, instance %q; want real, 6, MSSQLSERVER", tr.Source, len(tr.Entries), tr.Facts.Instance)
	}
	if strings.Contains(string(tr.Entries[0].Params), "password") {
		t.Errorf("a password parameter was recorded: %s", tr.Entries[0].Params)
	}
}

// What identifies nothing stays, so a transcript keeps its meaning: well-known SIDs,
// the per-service SIDs of public names and of the transcript's instances, RIDs
// below 1000, built-in names, instance names, versions, the error-log line.
func TestRedactKeepsWhatIdentifiesNothing(t *testing.T) {
	tr := plantedRecorder(t).Transcript()
	var read map[string]any
	if err := json.Unmarshal(tr.Entries[0].Stdout, &read); err != nil {
		t.Fatal(err)
	}
	out := string(tr.Entries[0].Stdout)
	for _, keep := range []string{winsid.Administrators, winsid.ServiceSID("MSSQLSERVER"), winsid.ServiceSID("MSSQL$" + plantNamedInstance),
		`BUILTIN\\Administrators`, `NT SERVICE\\MSSQLSERVER`, "MSSQL16.MSSQLSERVER", `"16.0.4135.4"`, plantNamedInstance,
		"Database Instant File Initialization: enabled", `\\Administrator"`, `\\Domain Admins"`} {
		if !strings.Contains(out, keep) {
			t.Errorf("read_instance's redacted answer lost %q:\n%s", keep, out)
		}
	}
	if got := read["computer_name"]; got != "host-1" {
		t.Errorf("computer_name = %v, want host-1 (the FQDN's first label, the same placeholder)", got)
	}
	if tr.Host != "host-1.domain-1.example" {
		t.Errorf("Host = %q, want host-1.domain-1.example", tr.Host)
	}
	if got := read["start_account"]; got != `DOMAIN-1\user-2` && got != `DOMAIN-1\user-1` {
		t.Errorf("start_account = %v, want DOMAIN-1\\user-N", got)
	}
	// The domain's SIDs keep their shape, their RIDs below 1000 and one domain part.
	sids := regexp.MustCompile(`S-1-5-21-[0-9-]+`).FindAllString(out, -1)
	if len(sids) != 4 {
		t.Fatalf("domain SIDs in the answer: %v, want 4", sids)
	}
	dom := regexp.MustCompile(`^S-1-5-21-\d+-\d+-\d+`).FindString(sids[0])
	for _, s := range sids {
		if !strings.HasPrefix(s, dom+"-") {
			t.Errorf("SID %s does not share the placeholder domain %s: one domain, one placeholder", s, dom)
		}
	}
	for _, rid := range []string{dom + "-500", dom + "-512"} {
		if !strings.Contains(out, rid) {
			t.Errorf("well-known RID lost: %s not in %v", rid, sids)
		}
	}
	if !strings.Contains(out, `"D:\\path-1"`) {
		t.Errorf("the error log path is not drive + placeholder: %s", read["errorlog"])
	}
}

// Each kind of value in free text (CLIXML) is replaced, consistently with the same
// value elsewhere in the transcript.
func TestRedactFreeTextConsistently(t *testing.T) {
	tr := plantedRecorder(t).Transcript()
	stderr := tr.Entries[1].Stderr
	for _, want := range []string{`C:\path-`, "host-1.domain-1.example (192.0.2.1, 2001:db8::1)", "SPN HTTP/host-1.domain-1.example:5986@domain-1.example",
		"certificate 000000000000000000000000000000000000000" + "1", `\\host-1\path-2_x000D__x000A_`, "' is denied on host-1"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("redacted stderr lacks %q:\n%s", want, stderr)
		}
	}
	var read struct {
		Admins []contract.Principal `json:"administrators_members"`
	}
	if err := json.Unmarshal(tr.Entries[0].Stdout, &read); err != nil || len(read.Admins) != 3 {
		t.Fatalf("administrators_members of the redacted read_instance: %v %+v", err, read)
	}
	user := strings.TrimPrefix(read.Admins[2].Name, `DOMAIN-1\`)
	if e := tr.Entries[4]; !strings.Contains(e.Error, "from 192.0.2.1 by "+user+" with password [secret]") {
		t.Errorf("probe error = %q: want the same address and user (%s) placeholders as elsewhere, the password [secret]", e.Error, user)
	}
	row := tr.Entries[2].Rows[0]
	if fmt.Sprint(row[0]) != "host-1" || !strings.HasPrefix(fmt.Sprint(row[1]), "user-") || !strings.HasPrefix(fmt.Sprint(row[2]), `DOMAIN-1\user-`) {
		t.Errorf("SQL row = %v, want host-1, user-N, DOMAIN-1\\user-N", row)
	}
	if s := tr.Entries[5].Shape; s == nil || s.SQLNumber != 18456 || s.SQLClass != 14 {
		t.Errorf("SQL login error shape = %+v, want number 18456 class 14", s)
	}
	if s := tr.Entries[4].Shape; s == nil || s.HTTPStatus != 500 || s.SOAPFault {
		t.Errorf("clear-text probe shape = %+v, want HTTP 500 without a SOAP fault", s)
	}
}

// Versions and timestamps are not addresses; loopback addresses and well-known
// SIDs stay; an unknown per-service SID keeps the S-1-5-80 shape.
func TestRedactLeavesLookalikes(t *testing.T) {
	r := newRedactor(Known{})
	for in, want := range map[string]string{
		"build 10.0.20348.2849 at 2026-11-30T07:12:44.3100000Z": "build 10.0.20348.2849 at 2026-11-30T07:12:44.3100000Z",
		"listening on 127.0.0.1:1433 and [::1]:5985":            "listening on 127.0.0.1:1433 and [::1]:5985",
		"S-1-5-18 S-1-5-32-544 S-1-1-0 S-1-5-80-0 S-1-16-12288": "S-1-5-18 S-1-5-32-544 S-1-1-0 S-1-5-80-0 S-1-16-12288",
		"restart_id 0123456789abcdef0123456789abcdef":           "restart_id 0123456789abcdef0123456789abcdef",
		"rule d1e49aac-8f56-4280-b9ba-993a6d77406c":             "rule d1e49aac-8f56-4280-b9ba-993a6d77406c",
	} {
		if got := r.text(in); got != want {
			t.Errorf("text(%q) = %q, want it unchanged", in, got)
		}
	}
	other := winsid.ServiceSID("MSSQL$SECRETPROJECT")
	got := r.text(other)
	if got == other || !regexp.MustCompile(`^S-1-5-80(-\d+){5}$`).MatchString(got) {
		t.Errorf("an unknown service SID became %q, want another S-1-5-80 SID with five numbers", got)
	}
	if again := r.text("holder " + other); again != "holder "+got {
		t.Errorf("the same SID became %q the second time, want %q", again, "holder "+got)
	}
}

// WriteFile refuses a transcript in which a known name survives, rather than write it.
func TestWriteFileRefusesASurvivor(t *testing.T) {
	k := Known{Users: []string{"svc-ops"}}
	if left := k.survivors([]byte(`{"note": "run by SVC-OPS"}`)); len(left) != 1 {
		t.Errorf("survivors = %v, want the user name found (case-insensitive)", left)
	}
	if left := k.survivors([]byte(`{"note": "run by user-1"}`)); len(left) != 0 {
		t.Errorf("survivors = %v, want none", left)
	}
	var nilRec *Recorder
	nilRec.Operation("read", "read_instance", nil, 0, nil, nil)
	if _, err := nilRec.WriteFile(t.TempDir()); err == nil {
		t.Error("a nil recorder wrote a file")
	}
}

func TestShapeOfRemoteError(t *testing.T) {
	err := error(&remote.Error{Host: "h", Op: contract.OpRestartInstance, Kind: remote.KindScript, Code: "timeout", ExitCode: 4})
	if s := ShapeOf(err); s.Kind != "script" || s.Code != "timeout" || s.ExitCode != 4 {
		t.Errorf("ShapeOf = %+v", s)
	}
	fault := `<s:Envelope><s:Body><s:Fault><s:Code><s:Value>s:Receiver</s:Value><s:Subcode><s:Value>w:TimedOut</s:Value></s:Subcode></s:Code>` +
		`<s:Detail><f:WSManFault xmlns:f="http://schemas.microsoft.com/wbem/wsman/1/wsmanfault" Code="2150858793" Machine="x"/></s:Detail></s:Fault></s:Body></s:Envelope>`
	if s := HTTPShape(500, "application/soap+xml;charset=UTF-8", []byte(fault)); !s.SOAPFault || s.FaultCode != "2150858793" || s.ContentType != "application/soap+xml" {
		t.Errorf("HTTPShape(fault) = %+v", s)
	}
}
