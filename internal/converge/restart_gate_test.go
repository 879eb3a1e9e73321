package converge

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// gatingHost is a fake host whose restarts are gated (contract.GatedRestarter): it
// asks the gate when it is prepared, makes the restart (fakeHost's) once allowed,
// says the Engine runs again, then runs after (the output and the shell's
// deletion, which the slot must not wait for).
type gatingHost struct {
	*fakeHost
	mu       sync.Mutex
	prepared chan struct{} // closed at the first Prepared
	after    func()
	gated    int
	onGated  func(contract.RestartInstanceParams)
	late     int // gated requests whose gate gave up waiting for the slot
}

func (h *gatingHost) RestartInstanceGated(ctx context.Context, p contract.RestartInstanceParams, gate contract.RestartGate) (*contract.RestartInstanceResult, error) {
	h.mu.Lock()
	h.gated++
	if !p.AwaitGo || p.GoSeconds < 1 {
		h.mu.Unlock()
		panic("a gated restart without await_go and go_seconds")
	}
	if h.prepared != nil {
		close(h.prepared)
		h.prepared = nil
	}
	if h.onGated != nil {
		h.onGated(p)
	}
	h.mu.Unlock()
	if err := gate.Prepared(ctx); err != nil {
		if errors.Is(err, errSlotLate) {
			h.mu.Lock()
			h.late++
			h.mu.Unlock()
		}
		return nil, err // the shell deleted before the go line: nothing changed
	}
	res, err := h.fakeHost.RestartInstance(ctx, p)
	if err != nil {
		return nil, err
	}
	gate.Started()
	if h.after != nil {
		h.after()
	}
	return res, nil
}

// gateClients serve the gating host and SQL Server's fake.
type gateClients struct {
	h  *gatingHost
	ch *fakeChecker
}

func (c gateClients) Host(string, int) (Host, error)           { return c.h, nil }
func (c gateClients) SQLChecker() (contract.SQLChecker, error) { return c.ch, nil }

// gateWorld is an engine with a limit of one restart over a gating host.
func gateWorld() (*gatingHost, *Engine) {
	h := &gatingHost{fakeHost: newFakeHost()}
	e := New(gateClients{h: h, ch: &fakeChecker{h: h.fakeHost}})
	e.Restarts = NewRestartLimiter(1)
	return h, e
}

// eventually spins until cond holds (state another goroutine changes), false
// after a minute: no sleep decides the outcome.
func eventually(cond func() bool) bool {
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		runtime.Gosched()
	}
	return true
}

// A gated restart is sent while every restart slot is taken: it prepares on the
// host without one, restarts once it holds one, and gives it back when the Engine
// runs again, before its output is collected (the slot is held for the outage).
func TestGatedRestartHoldsTheSlotForTheOutageOnly(t *testing.T) {
	h, e := gateWorld()
	h.prepared = make(chan struct{})
	prepared := h.prepared
	occupy(t, e.Restarts.slots) // another host's restart
	freeBeforeOutput := false
	h.after = func() {
		// The slot goes back in the gate's own goroutine: wait for it (a minute at
		// most), as the output's collection would not.
		freeBeforeOutput = eventually(func() bool { return len(e.Restarts.slots) == 0 })
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.Apply(context.Background(), defaultTarget, enable)
		done <- err
	}()
	select {
	case <-prepared: // on the host, prepared, while the slot is another's
	case err := <-done:
		t.Fatalf("Apply ended before its restart was prepared: %v", err)
	}
	if h.restarts != 0 || h.holds(svcSID) {
		t.Fatal("the restart changed the host before it held a slot")
	}
	release(t, e.Restarts.slots) // the other restart ends
	if err := <-done; err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if h.restarts != 1 || !h.holds(svcSID) || h.gated != 1 || !freeBeforeOutput || len(e.Restarts.slots) != 0 {
		t.Errorf("restarts %d, grant %v, gated requests %d, slot free before the output %v, slots taken %d",
			h.restarts, h.holds(svcSID), h.gated, freeBeforeOutput, len(e.Restarts.slots))
	}
}

// A gated restart whose deadline passes while every slot is taken changes nothing
// and says why, as an ungated one does; the host's slot goes back too.
func TestGatedRestartWithoutASlotChangesNothing(t *testing.T) {
	h, e := gateWorld()
	occupy(t, e.Restarts.slots)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := e.Apply(ctx, defaultTarget, enable)
	ce := wantError(t, err, KindRestartSlot)
	if ce.Changed || ce.Restarted || h.restarts != 0 || h.holds(svcSID) || h.gated != 1 {
		t.Errorf("error %+v, %d restarts, grant %v, %d gated requests; want one request and nothing changed", ce, h.restarts, h.holds(svcSID), h.gated)
	}
	release(t, e.Restarts.slots)
	if len(e.Restarts.hostSlot(defaultTarget.Host)) != 0 {
		t.Error("the host's slot is still held")
	}
}

// noSQLClients serve the gating host and no SQL credentials.
type noSQLClients struct{ h *gatingHost }

func (c noSQLClients) Host(string, int) (Host, error)           { return c.h, nil }
func (c noSQLClients) SQLChecker() (contract.SQLChecker, error) { return nil, nil }

// Without SQL credentials nothing can say when SQL Server accepts connections
// again: the slot stays taken until the restart's end, not only until the Engine
// runs.
func TestGatedRestartWithoutSQLHoldsTheSlotToTheEnd(t *testing.T) {
	h := &gatingHost{fakeHost: newFakeHost()}
	e := New(noSQLClients{h})
	e.Restarts = NewRestartLimiter(1)
	heldAfterStart := false
	h.after = func() { heldAfterStart = len(e.Restarts.slots) == 1 }
	d := enable
	d.Restart = ifi.RestartIfNeededIncludingPrimary // no SQL Server to ask the replica's role
	if _, err := e.Apply(context.Background(), defaultTarget, d); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if h.restarts != 1 || !heldAfterStart || len(e.Restarts.slots) != 0 {
		t.Errorf("restarts %d, slot held after the Engine started %v, slots taken at the end %d; want 1, true, 0",
			h.restarts, heldAfterStart, len(e.Restarts.slots))
	}
}

// The host waits for the go line seconds, not the restart's timeout (a provider
// killed while prepared would hold the host's lease that long): go_seconds is
// goLineSeconds. A slot that does not come within that wait lets the prepared
// request end, changing nothing, and the restart is sent again ungated once the
// slot is held.
func TestGatedRestartWhoseSlotComesLateGoesUngated(t *testing.T) {
	h, e := gateWorld()
	e.goSlotWait = 10 * time.Millisecond
	var goSeconds []int
	h.onGated = func(p contract.RestartInstanceParams) { goSeconds = append(goSeconds, p.GoSeconds) }
	occupy(t, e.Restarts.slots) // another host's restart, longer than the go line's wait
	done := make(chan error, 1)
	go func() {
		_, err := e.Apply(context.Background(), defaultTarget, enable)
		done <- err
	}()
	if !eventually(func() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.late > 0 }) {
		t.Fatal("the prepared request did not give up waiting for the slot")
	}
	if h.restarts != 0 || h.holds(svcSID) {
		t.Fatal("the restart changed the host before it held a slot")
	}
	release(t, e.Restarts.slots)
	if err := <-done; err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if h.restarts != 1 || !h.holds(svcSID) || h.gated != 1 || len(goSeconds) != 1 || goSeconds[0] != goLineSeconds {
		t.Errorf("restarts %d, grant %v, gated requests %d with go_seconds %v; want one restart after one gated request waiting %d s",
			h.restarts, h.holds(svcSID), h.gated, goSeconds, goLineSeconds)
	}
}
