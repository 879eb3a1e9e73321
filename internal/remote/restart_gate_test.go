package remote

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// recordingGate lets the restart go (or refuses it) and records what it was told.
type recordingGate struct {
	mu      sync.Mutex
	events  []string
	refuse  error
	onReady func() // called in Prepared, before it answers
}

func (g *recordingGate) Prepared(context.Context) error {
	g.mu.Lock()
	g.events = append(g.events, contract.ProgressPrepared)
	g.mu.Unlock()
	if g.onReady != nil {
		g.onReady()
	}
	return g.refuse
}

func (g *recordingGate) Started() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events = append(g.events, contract.ProgressStarted)
}

// A gated restart over real WS-Management: nothing changes before the gate lets it
// go; then the grant and the restart happen, the gate is told the Engine runs
// again, and the answer is read without the progress lines.
func TestAgainstSimulatorGatedRestart(t *testing.T) {
	sim := newSimHost(t, simConfig())
	h, ok := sim.remote(t, testUser).(contract.GatedRestarter)
	if !ok {
		t.Fatal("remote.Host cannot run a gated restart")
	}
	sid := winsid.ServiceSID("MSSQLSERVER")
	model, err := sim.sim.Host("sql01")
	if err != nil {
		t.Fatal(err)
	}
	holds := func() bool {
		for _, p := range model.Snapshot().Rights[contract.RightManageVolume] {
			if strings.EqualFold(p.SID, sid) {
				return true
			}
		}
		return false
	}
	g := &recordingGate{}
	guards := model.Stats().GuardsByWMI
	g.onReady = func() {
		if holds() {
			t.Error("the right was granted before the go line")
		}
		// The guard started before the prepared line: its start is not in the slot.
		if model.Stats().GuardsByWMI != guards+1 {
			t.Error("the restart's guard had not started at the prepared line")
		}
	}
	p := contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30, RestartID: strings.Repeat("1f", 16),
		GoSeconds: 30, ReadBack: true, Changes: []contract.RightChange{{SID: sid, Grant: true}}}
	res, err := h.RestartInstanceGated(context.Background(), p, g)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Finished || res.Error != "" || !res.Changed || res.Instance == nil || !holds() {
		t.Fatalf("result %+v; want the grant and a finished restart", res)
	}
	if strings.Join(g.events, ",") != "prepared,started" {
		t.Errorf("the gate was told %v; want prepared, then started", g.events)
	}

	// A gate that refuses: its error, and nothing changed on the host.
	p.RestartID, p.Changes = strings.Repeat("2e", 16), []contract.RightChange{{SID: sid, Grant: false}}
	slot := errors.New("no restart slot before the deadline")
	_, err = h.RestartInstanceGated(context.Background(), p, &recordingGate{refuse: slot})
	if !errors.Is(err, slot) {
		t.Fatalf("a refusing gate: %v; want its error", err)
	}
	if !holds() {
		t.Error("a restart its gate refused revoked the right")
	}
	// Its guard ends having changed nothing, and the request sent again ungated with
	// the same id (converge does so after a gate not passed) restarts: it replaces
	// the prepared marker left behind rather than joining it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := model.WaitPreparedGuards(ctx); err != nil {
		t.Fatalf("the refused restart's guard did not end: %v", err)
	}
	started := model.Snapshot().Instances[0].Process.Started
	again, err := sim.remote(t, testUser).RestartInstance(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Finished || again.Joined || again.Error != "" || !again.Changed || holds() {
		t.Fatalf("the request sent again: %+v; want a restart of its own that revoked the right", again)
	}
	if !model.Snapshot().Instances[0].Process.Started.After(started) {
		t.Error("the request sent again did not restart the Engine")
	}
}
