package host

import (
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

const testAgent = "terraform-provider-mssqlifi/1.2.3 (+https://example.test)"

// Each grant, revoke and restart writes an entry to the Application event log
// under the provider's source, registered by the first; a request that changes
// nothing writes none.
func TestEventLogRecordsEachChange(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances[0].StartMS, cfg.Instances[0].StopMS = 15, 15
	cfg.Rights = map[string][]string{contract.RightManageVolume: {winsid.Administrators}}
	h := newHost(t, cfg)
	if h.EventSourceRegistered() || len(h.EventLog()) != 0 {
		t.Fatal("the event source exists before any change")
	}
	grant := contract.SetRightParams{Right: contract.RightManageVolume, SID: engineSID, Grant: true, ReadBack: "MSSQLSERVER", Agent: testAgent}
	if r := decode[contract.SetRightResult](t, execOp(t, h, "Administrator", contract.OpSetRight, grant)); !r.Changed || r.EventLogWarning != "" {
		t.Fatalf("grant: %+v", r)
	}
	if r := decode[contract.SetRightResult](t, execOp(t, h, "Administrator", contract.OpSetRight, grant)); r.Changed {
		t.Fatalf("second grant changed: %+v", r)
	}
	restart := contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30, Agent: testAgent,
		Changes: []contract.RightChange{{SID: engineSID, Grant: false}}}
	if r := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, restart)); r.EventLogWarning != "" || !r.Changed {
		t.Fatalf("restart with a revoke: %+v", r)
	}
	log := h.EventLog()
	want := []struct {
		change string
		id     int
	}{{"grant", contract.EventGrant}, {"revoke", contract.EventRevoke}, {"restart", contract.EventRestart}}
	if len(log) != len(want) || !h.EventSourceRegistered() {
		t.Fatalf("event log %+v; want %d entries", log, len(want))
	}
	for i, w := range want {
		e := log[i]
		if e.Change != w.change || e.EventID != w.id || e.Source != contract.EventSource || e.Instance != "MSSQLSERVER" ||
			e.SID != engineSID || !strings.EqualFold(e.Account, "Administrator") && !strings.HasSuffix(strings.ToLower(e.Account), `\administrator`) || e.Agent != testAgent {
			t.Errorf("entry %d = %+v; want %s (%d) of %s on MSSQLSERVER by Administrator with the agent", i, e, w.change, w.id, engineSID)
		}
	}
}

// A host where the event source cannot be registered still makes the change,
// and says in the result why it left no entry.
func TestEventLogSourceDeniedStillChanges(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.EventSourceDenied = true
	h := newHost(t, cfg)
	r := decode[contract.SetRightResult](t, execOp(t, h, "Administrator", contract.OpSetRight,
		contract.SetRightParams{Right: contract.RightManageVolume, SID: engineSID, Grant: true, Agent: testAgent}))
	if !r.Changed || !strings.Contains(r.EventLogWarning, "event log") || !strings.Contains(r.EventLogWarning, contract.EventSource) {
		t.Fatalf("grant on a host that denies the event source: %+v", r)
	}
	if holders, _ := h.RightHolders(contract.RightManageVolume); !strings.Contains(strings.Join(holders, ","), engineSID) {
		t.Fatalf("the grant was not made: %v", holders)
	}
	if len(h.EventLog()) != 0 || h.EventSourceRegistered() {
		t.Fatalf("entries were written without a source: %+v", h.EventLog())
	}
}

// A write right after the source's registration fails until the system has
// refreshed its list of sources (.NET EventLog.CreateEventSource): the source is
// registered before the change and a failed write is tried once more a second
// later, so a refresh shorter than that pause leaves the entry; a longer one leaves
// the change standing with a warning that says the write was tried twice.
func TestEventLogFirstWriteAfterRegistration(t *testing.T) {
	t.Parallel()
	grant := contract.SetRightParams{Right: contract.RightManageVolume, SID: engineSID, Grant: true, Agent: testAgent}
	cfg := baseConfig()
	cfg.EventSourceRefreshMS = 800
	h := newHost(t, cfg)
	if r := decode[contract.SetRightResult](t, execOp(t, h, "Administrator", contract.OpSetRight, grant)); !r.Changed || r.EventLogWarning != "" {
		t.Fatalf("grant with the source refreshed before the second write: %+v", r)
	}
	if log := h.EventLog(); len(log) != 1 || log[0].Change != "grant" {
		t.Fatalf("event log %+v; want the grant", log)
	}
	cfg = baseConfig()
	cfg.EventSourceRefreshMS = 60000
	h = newHost(t, cfg)
	r := decode[contract.SetRightResult](t, execOp(t, h, "Administrator", contract.OpSetRight, grant))
	if !r.Changed || !strings.Contains(r.EventLogWarning, "tried twice") || !strings.Contains(r.EventLogWarning, "The grant was made") {
		t.Fatalf("grant with the source not yet refreshed: %+v; want the change with a warning", r)
	}
	if !h.EventSourceRegistered() || len(h.EventLog()) != 0 {
		t.Fatalf("registered %t, log %+v; want registered, no entry", h.EventSourceRegistered(), h.EventLog())
	}
}
