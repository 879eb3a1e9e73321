package converge

import (
	"context"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// What one operation tells the next: the SQL port, the read with SQL Server's word
// (without the host's other instances), the lesson of an ineffective restart; an
// unreadable memo, or another instance's, tells nothing.
func TestMemo(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	read := &contract.ReadInstanceResult{Found: true, Instance: "MSSQLSERVER", InstalledInstances: []string{"MSSQLSERVER", "OTHER"}}
	lesson := &ifi.IneffectiveRestart{StartAccountSID: "S-1-5-21-1-2-3-1001"}
	m := NewMemo(defaultTarget)
	m.Remember(&Outcome{SQLPort: 1433, Read: read, ReadAt: at, IneffectiveRestart: lesson,
		Verification: ifi.Verification{Source: ifi.SourceSQLDMV}})
	got := DecodeMemo(m.Encode(), defaultTarget)
	tg, d := defaultTarget, ifi.Desired{}
	got.Prime(&tg, &d)
	if tg.SQLPortHint != 1433 || tg.Read == nil || !tg.ReadAt.Equal(at) || d.IneffectiveRestart == nil ||
		got.Verification == nil || got.Verification.Source != ifi.SourceSQLDMV {
		t.Fatalf("primed target %+v, desired %+v, verification %v; want port, read, lesson and verification", tg, d, got.Verification)
	}
	if tg.Read.InstalledInstances != nil {
		t.Errorf("the memo keeps the host's other instances: %v", tg.Read.InstalledInstances)
	}
	if read.InstalledInstances == nil {
		t.Error("Remember changed the outcome's read")
	}
	for name, b := range map[string][]byte{
		"unreadable":       []byte("not json"),
		"another instance": encodedMemo(Target{Host: defaultTarget.Host, Instance: "OTHER"}, 1433),
		"a bad port":       []byte(`{"host":"sql01.example.com","instance":"MSSQLSERVER","sql_port":70000}`),
	} {
		if m := DecodeMemo(b, defaultTarget); m.SQLPort != 0 || m.Read != nil {
			t.Errorf("%s: memo %+v; want an empty one", name, m)
		}
	}
	// An outcome without a read (a failure before it) forgets the old read.
	got.Remember(&Outcome{})
	if got.Read != nil || got.Verification != nil || got.SQLPort != 0 {
		t.Errorf("after an outcome without a read the memo keeps %+v", got)
	}
}

// encodedMemo is an encoded memo of t with the SQL port.
func encodedMemo(t Target, port int) []byte {
	m := NewMemo(t)
	m.SQLPort = port
	return m.Encode()
}

// The plan's "unavailable for about N s" comes from the last restart the engine
// timed: from its restart request to SQL Server accepting connections. An apply
// without a restart keeps the timing the memo had.
func TestApplyTimesItsRestart(t *testing.T) {
	h := newFakeHost()
	w := newWorld(h)
	clock := &steppingClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	w.engine.Clock = clock
	h.onRestart = func() { clock.now = clock.now.Add(37 * time.Second) } // the host takes 37 s to stop and start
	out, err := w.engine.Apply(context.Background(), defaultTarget, enable)
	if err != nil {
		t.Fatal(err)
	}
	if out.LastRestart == nil || out.LastRestart.Seconds != 37 {
		t.Fatalf("the apply timed its restart as %+v; want 37 s", out.LastRestart)
	}
	m := NewMemo(defaultTarget)
	m.Remember(out)
	m = DecodeMemo(m.Encode(), defaultTarget)
	m.Remember(&Outcome{}) // a later operation without a restart
	tg, d := defaultTarget, ifi.Desired{}
	m.Prime(&tg, &d)
	if d.LastRestart == nil || d.LastRestart.Seconds != 37 {
		t.Errorf("the memo gives the next plan %+v; want the 37 s restart", d.LastRestart)
	}
}

// steppingClock stands still until the test moves it.
type steppingClock struct{ now time.Time }

func (c *steppingClock) Now() time.Time { return c.now }

func (c *steppingClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// A destroy's plan reads nothing: without a remembered read it says from the state
// whether IFI stays on until the next restart (nothing when the state says IFI is
// off); with one, the assessment of that read decides.
func TestMemoDestroyPlanWarnings(t *testing.T) {
	d := ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartIfNeeded}
	off, on := false, true
	m := NewMemo(defaultTarget)
	if ws := m.DestroyPlanWarnings(d, "MSSQLSERVER", &off, false); len(ws) != 0 {
		t.Errorf("IFI off in the state: warnings %+v, want none", ws)
	}
	for _, st := range []*bool{&on, nil} {
		if ws := m.DestroyPlanWarnings(d, "MSSQLSERVER", st, false); len(ws) != 1 || ws[0].Summary != "IFI stays on until the next restart" {
			t.Errorf("no read remembered, state ifi_enabled %v: warnings %+v, want the stays-on-until-restart one", st, ws)
		}
	}
	// A remembered read where IFI is off and nothing holds the right: nothing stays on,
	// whatever the state says.
	m.Read = &contract.ReadInstanceResult{Found: true, Instance: "MSSQLSERVER", ServiceName: "MSSQLSERVER", ServiceState: contract.StateRunning,
		StartAccount: `NT Service\MSSQLSERVER`, ServiceSIDType: 1}
	m.Verification = &ifi.Verification{Source: ifi.SourceSQLDMV, Enabled: &off}
	if ws := m.DestroyPlanWarnings(d, "MSSQLSERVER", &on, false); len(ws) != 0 {
		t.Errorf("remembered read with IFI off: warnings %+v, want none", ws)
	}
	// On a failover cluster instance that read is one node's: the state decides.
	if ws := m.DestroyPlanWarnings(d, "MSSQLSERVER", &on, true); len(ws) != 1 || ws[0].Summary != "IFI stays on until the next restart" {
		t.Errorf("clustered: warnings %+v, want the state's stays-on-until-restart one", ws)
	}
}

// A memo's parts that no later decision can use are dropped when it is read: a
// lesson without its start account, a restart timed at no time, a port outside
// 1 to 65535, a read of an instance that was not found. The host and the instance
// are compared without case.
func TestDecodeMemoDropsWhatItCannotUse(t *testing.T) {
	const head = `{"host":"SQL01.example.com","instance":"mssqlserver"`
	for _, tc := range []struct {
		name, json string
		check      func(*Memo) bool
	}{
		{"a lesson with its start account", head + `,"ineffective_restart":{"start_account_sid":"S-1-5-21-1-2-3-1001"}}`,
			func(m *Memo) bool { return m.IneffectiveRestart != nil }},
		{"a lesson without its start account", head + `,"ineffective_restart":{"holders":["S-1-5-32-544"]}}`,
			func(m *Memo) bool { return m.IneffectiveRestart == nil }},
		{"a restart of 1 s", head + `,"last_restart":{"at":"2026-12-01T12:00:00Z","seconds":1}}`,
			func(m *Memo) bool { return m.LastRestart != nil && m.LastRestart.Seconds == 1 }},
		{"a restart of 0 s", head + `,"last_restart":{"at":"2026-12-01T12:00:00Z","seconds":0}}`,
			func(m *Memo) bool { return m.LastRestart == nil }},
		{"port 65535", head + `,"sql_port":65535}`, func(m *Memo) bool { return m.SQLPort == 65535 }},
		{"port 65536", head + `,"sql_port":65536}`, func(m *Memo) bool { return m.SQLPort == 0 }},
		{"port -1", head + `,"sql_port":-1}`, func(m *Memo) bool { return m.SQLPort == 0 }},
		{"a read of the instance", head + `,"read":{"found":true,"instance":"MSSQLSERVER"}}`,
			func(m *Memo) bool { return m.Read != nil }},
		{"a read of no instance", head + `,"read":{"found":false}}`, func(m *Memo) bool { return m.Read == nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if m := DecodeMemo([]byte(tc.json), defaultTarget); !tc.check(m) {
				t.Errorf("DecodeMemo(%s) = %+v", tc.json, m)
			}
		})
	}
}

// The memo keeps, among the right's holders, those a lesson of an ineffective
// restart names (they must still hold the right for the lesson to hold), and no
// other holder outside the Engine's token; no outcome changes nothing.
func TestMemoRememberKeepsTheLessonsHolders(t *testing.T) {
	const group, other = "S-1-5-21-9-9-9-1234", "S-1-5-21-9-9-9-5678"
	read := &contract.ReadInstanceResult{Found: true, Instance: "MSSQLSERVER", ServiceName: "MSSQLSERVER",
		RightHolders: []contract.Principal{{SID: group}, {SID: other}}}
	m := NewMemo(defaultTarget)
	m.Remember(&Outcome{SQLPort: 1433, Read: read, IneffectiveRestart: &ifi.IneffectiveRestart{StartAccountSID: "S-1-5-21-1-2-3-1001",
		Holders: []string{group}}})
	if m.Read == nil || len(m.Read.RightHolders) != 1 || m.Read.RightHolders[0].SID != group {
		t.Fatalf("kept holders %+v; want the lesson's %s only", m.Read, group)
	}
	m.Remember(nil)
	if m.Read == nil || m.SQLPort != 1433 {
		t.Errorf("Remember(nil) changed the memo: %+v", m)
	}
}

// From a remembered read where the Engine keeps the right through Administrators,
// the planned destroy says IFI stays on after it, whatever the state says; the
// destroy plan's other warnings are not this warning's business.
func TestMemoDestroyPlanWarningsFromTheRead(t *testing.T) {
	d := ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartIfNeeded}
	off, on := false, true
	m := NewMemo(defaultTarget)
	m.Read = &contract.ReadInstanceResult{Found: true, Instance: "MSSQLSERVER", ServiceName: "MSSQLSERVER", ServiceState: contract.StateRunning,
		StartAccount: `CORP\svc-sql`, StartAccountSID: acctSID, ServiceSIDType: 1,
		AdministratorsMembers: []contract.Principal{{SID: acctSID}},
		RightHolders:          []contract.Principal{{SID: winsid.Administrators}, {SID: svcSID}}}
	m.Verification = &ifi.Verification{Source: ifi.SourceSQLDMV, Enabled: &on}
	ws := m.DestroyPlanWarnings(d, "MSSQLSERVER", &off, false)
	if len(ws) != 1 || ws[0].Code != ifi.WarnStaysOnDestroy || ws[0].Summary != "IFI stays on after the destroy" {
		t.Errorf("warnings %+v; want the one stays-on-after-the-destroy warning", ws)
	}
}

// A memo of the same instance on another host is not this one's.
func TestDecodeMemoOfAnotherHost(t *testing.T) {
	if m := DecodeMemo(encodedMemo(Target{Host: "sql02.example.com", Instance: defaultTarget.Instance}, 1433), defaultTarget); m.SQLPort != 0 {
		t.Errorf("memo %+v; want an empty one", m)
	}
}

// A lesson an older version stored, with the members of Administrators, is read
// as their digest and keeps no member.
func TestDecodeMemoUpgradesAnOldLesson(t *testing.T) {
	old := []byte(`{"host":"sql01.example.com","instance":"MSSQLSERVER","ineffective_restart":{"start_account_sid":"S-1-5-21-1-2-3-1001",` +
		`"administrators":["S-1-5-21-1-2-3-500"]}}`)
	m := DecodeMemo(old, defaultTarget)
	if m.IneffectiveRestart == nil || m.IneffectiveRestart.AdministratorsDigest == "" || m.IneffectiveRestart.LegacyAdministrators != nil {
		t.Errorf("lesson %+v; want the members' digest and no member", m.IneffectiveRestart)
	}
}

// The memo's lesson of an ineffective restart (the start account gets the right
// through a group the host does not show) decides the planned destroy's warning:
// IFI stays on after it, not only until the next restart.
func TestMemoDestroyPlanWarningsUseTheLesson(t *testing.T) {
	d := ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartIfNeeded}
	on := true
	read := &contract.ReadInstanceResult{Found: true, Instance: "MSSQLSERVER", ServiceName: "MSSQLSERVER", ServiceState: contract.StateRunning,
		StartAccount: `CORP\svc-sql`, StartAccountSID: acctSID, ServiceSIDType: 1,
		RightHolders: []contract.Principal{{SID: winsid.Administrators}}}
	v := ifi.Verification{Source: ifi.SourceSQLDMV, Enabled: &on}
	a, err := ifi.Assess(ifi.Desired{Enabled: false, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartIfNeeded},
		ifi.Observed{Host: defaultTarget.Host, Instance: read, Verification: v})
	if err != nil {
		t.Fatal(err)
	}
	lesson := ifi.LearnIneffectiveRestart(a)
	if lesson == nil {
		t.Fatal("no lesson learned from IFI on without a visible holder reaching the start account")
	}
	m := NewMemo(defaultTarget)
	m.Read, m.Verification = read, &v
	without := m.DestroyPlanWarnings(d, "MSSQLSERVER", &on, false)
	m.IneffectiveRestart = lesson
	with := m.DestroyPlanWarnings(d, "MSSQLSERVER", &on, false)
	if len(with) != 1 || with[0].Summary != "IFI stays on after the destroy" || (len(without) == 1 && without[0].Summary == with[0].Summary) {
		t.Errorf("with the lesson %+v, without it %+v; want the lesson to say IFI stays on after the destroy", with, without)
	}
}
