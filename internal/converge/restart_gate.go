package converge

import (
	"context"
	"sync"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// restartGate is one restart's hold on the limiter (RestartLimiter): the host's
// slot, taken before the command is sent and held to the end, and one of the
// limit's slots. A gated restart (contract/restart_gate.go) takes the limit's slot
// only when the host says it is prepared (Prepared: the command on the host, its
// powershell.exe started, its checks done and the host's restart lease held), and
// gives it back once the Engine runs again (Started) and SQL Server accepts a login
// (sqlReady), before the output is collected and the shell deleted: the slot is
// held for the outage only (design/restart.md, "A slot held for the outage").
// Otherwise (no limit, a host whose client cannot gate, the failover cluster path)
// the limit's slot is taken before the command, as the host's is, and given back
// at the end.
type restartGate struct {
	e     *Engine
	ctx   context.Context // the restart's: every wait of the gate ends with it
	t     Target
	host  chan struct{} // the host's slot, held; nil without a limiter
	slots chan struct{} // the limit's; nil: no limit
	// lazy: the limit's slot is taken at Prepared (a gated restart).
	lazy bool
	// ready waits until SQL Server accepts a login (nil: nothing to wait on).
	ready func(context.Context) error

	mu         sync.Mutex
	held       bool      // the limit's slot
	takenAt    time.Time // when it was taken
	readyDone  chan struct{}
	readyErr   error
	readyAsked bool
}

// openGate takes t's host slot (waiting while another instance of the host
// restarts in this run) and, unless lazy, the limit's slot: a KindRestartSlot
// error, recorded by out, when ctx ends first.
func (e *Engine) openGate(ctx context.Context, t Target, lazy bool, out *Outcome) (*restartGate, error) {
	g := &restartGate{e: e, ctx: ctx, t: t}
	l := e.Restarts
	if l == nil {
		return g, nil
	}
	// The host first, so that an instance waiting for its host holds no slot.
	host := l.hostSlot(t.Host)
	if !e.take(ctx, host, t, "waiting for the host: another instance of it is restarting in this run", nil) {
		return nil, out.fail(&Error{Kind: KindRestartSlot, Target: t, Err: ctx.Err(), MaxParallelRestarts: l.Limit(), HostBusy: true})
	}
	g.host, g.slots, g.lazy = host, l.slots, lazy && l.slots != nil
	if g.slots != nil && !g.lazy {
		if err := g.takeSlot(ctx); err != nil {
			g.close()
			return nil, out.fail(err)
		}
	}
	return g, nil
}

// takeSlot takes the limit's slot, once; a KindRestartSlot error when ctx ends
// first (not recorded: the caller records it).
func (g *restartGate) takeSlot(ctx context.Context) *Error {
	g.mu.Lock()
	held := g.held
	g.mu.Unlock()
	if held || g.slots == nil {
		return nil
	}
	if !g.e.take(ctx, g.slots, g.t, "waiting for a restart slot: other instances are restarting",
		map[string]any{"max_parallel_restarts": cap(g.slots)}) {
		return &Error{Kind: KindRestartSlot, Target: g.t, Err: ctx.Err(), MaxParallelRestarts: cap(g.slots)}
	}
	g.mu.Lock()
	g.held, g.takenAt = true, g.e.clock().Now()
	g.mu.Unlock()
	return nil
}

// giveSlot gives the limit's slot back, once.
func (g *restartGate) giveSlot() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held {
		g.held = false
		<-g.slots
		g.e.info(g.ctx, "restart slot given back", map[string]any{"host": g.t.Host, "instance": g.t.Instance,
			"held_ms": g.e.clock().Now().Sub(g.takenAt).Milliseconds(), "gated": g.lazy})
	}
}

// Prepared is the host's word that the gated restart is ready: it returns once
// the restart holds the limit's slot (contract.RestartGate).
func (g *restartGate) Prepared(ctx context.Context) error {
	if err := g.takeSlot(ctx); err != nil {
		return err
	}
	return nil
}

// Started is the host's word that the Engine runs again: the limit's slot goes
// back once SQL Server accepts a login (contract.RestartGate). Without a way to
// ask SQL Server (no credentials, no port) the provider cannot know when it
// accepts connections, so the slot stays taken until the restart's end.
func (g *restartGate) Started() {
	g.mu.Lock()
	if g.readyAsked || g.ready == nil {
		g.mu.Unlock()
		return
	}
	g.readyAsked = true
	g.readyDone = make(chan struct{})
	ready := g.ready
	g.mu.Unlock()
	go func() {
		defer close(g.readyDone)
		g.readyErr = ready(g.ctx)
		g.giveSlot()
	}()
}

// awaitReady is the wait for SQL Server that Started began, once it ended; false
// when none began (the caller waits itself).
func (g *restartGate) awaitReady(ctx context.Context) (bool, error) {
	g.mu.Lock()
	asked, done := g.readyAsked, g.readyDone
	g.mu.Unlock()
	if !asked {
		return false, nil
	}
	select {
	case <-done:
		return true, g.readyErr
	case <-ctx.Done():
		return true, ctx.Err()
	}
}

// close gives back what the restart holds.
func (g *restartGate) close() {
	if g == nil {
		return
	}
	g.giveSlot()
	if g.host != nil {
		<-g.host
		g.host = nil
	}
}

// gatedRestarter is h as a client that can run a gated restart; nil when it
// cannot (a fake, or a client without it).
func gatedRestarter(h Host) contract.GatedRestarter {
	if th, ok := h.(*trackedHost); ok {
		if _, ok := th.Host.(contract.GatedRestarter); !ok {
			return nil
		}
		return th
	}
	gr, _ := h.(contract.GatedRestarter)
	return gr
}

// RestartInstanceGated is a gated restart through the engine's view of the host: a
// change of it, as RestartInstance is (hostReads).
func (h *trackedHost) RestartInstanceGated(ctx context.Context, p contract.RestartInstanceParams, gate contract.RestartGate) (*contract.RestartInstanceResult, error) {
	defer h.reads.change(h.key, false)()
	gr, ok := h.Host.(contract.GatedRestarter)
	if !ok {
		// A client that cannot gate: the slot first, then the request as it is.
		if err := gate.Prepared(ctx); err != nil {
			return nil, err
		}
		return h.Host.RestartInstance(ctx, p)
	}
	return gr.RestartInstanceGated(ctx, p, gate)
}
