package converge

import (
	"context"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
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
