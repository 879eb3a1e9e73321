package converge

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// progressLog collects a restart's progress messages.
type progressLog struct {
	mu   sync.Mutex
	msgs []string
	news chan struct{}
}

func newProgressLog() *progressLog { return &progressLog{news: make(chan struct{}, 1)} }

func (l *progressLog) say(m string) {
	l.mu.Lock()
	l.msgs = append(l.msgs, m)
	l.mu.Unlock()
	select {
	case l.news <- struct{}{}:
	default:
	}
}

func (l *progressLog) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.msgs {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}

// await waits until a message contains sub, or fails at the deadline.
func (l *progressLog) await(t *testing.T, sub string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for !l.has(sub) {
		select {
		case <-l.news:
		case <-deadline:
			l.mu.Lock()
			msgs := append([]string(nil), l.msgs...)
			l.mu.Unlock()
			t.Fatalf("no progress message contains %q; the messages: %q", sub, msgs)
		}
	}
}

// A restart on its own takes the limiter's slot as an apply's restart does: while
// every slot is taken it waits, saying so, and restarts once one is free.
func TestRestartNowWaitsForASlotSayingSo(t *testing.T) {
	h := newFakeHost()
	h.holders = []string{svcSID} // granted, the running Engine without it: pending
	w := newWorld(h)
	w.engine.Restarts = NewRestartLimiter(1)
	occupy(t, w.engine.Restarts.slots)
	log := newProgressLog()
	type done struct {
		res *RestartResult
		err error
	}
	finished := make(chan done, 1)
	go func() {
		res, err := NewSession(w.engine).RestartNow(context.Background(), RestartRequest{Target: defaultTarget, Progress: log.say})
		finished <- done{res, err}
	}()
	log.await(t, "instance MSSQLSERVER on sql01.example.com: waiting for a restart slot: other instances are restarting (max_parallel_restarts 1)")
	h.mu.Lock()
	restarts := h.restarts
	h.mu.Unlock()
	if restarts != 0 {
		t.Fatalf("restarted %d times while every slot was taken", restarts)
	}
	release(t, w.engine.Restarts.slots)
	var d done
	select {
	case d = <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("RestartNow did not end once the slot was free")
	}
	if d.err != nil {
		t.Fatalf("RestartNow: %v", d.err)
	}
	out := d.res.Outcome
	if h.restarts != 1 || !out.Restarted || out.Assessment == nil || out.Assessment.RestartPending == nil || *out.Assessment.RestartPending {
		t.Errorf("restarts %d, restarted %t, assessment %+v; want one restart and nothing pending after it", h.restarts, out.Restarted, out.Assessment)
	}
	if len(h.restartParams) != 1 || len(h.restartParams[0].Changes) != 0 {
		t.Errorf("restart_instance %+v, want one request changing no right", h.restartParams)
	}
	log.await(t, "restart done")
	if len(w.engine.Restarts.slots) != 0 {
		t.Errorf("%d slots still taken after the restart", len(w.engine.Restarts.slots))
	}
}

// A restart not needed takes no slot and changes nothing; a refusal is
// KindRefused and changes nothing either.
func TestRestartNowNotNeededOrRefused(t *testing.T) {
	w := newWorld(newFakeHost().granted(svcSID))
	w.engine.Restarts = NewRestartLimiter(1)
	occupy(t, w.engine.Restarts.slots) // a restart would wait: one not needed must not
	res, err := NewSession(w.engine).RestartNow(context.Background(), RestartRequest{Target: defaultTarget})
	if err != nil || !strings.Contains(res.NotNeeded, "No restart is needed") || w.host.restarts != 0 || res.Outcome.Assessment == nil {
		t.Errorf("nothing pending: %+v, %v, %d restarts; want no restart needed, said, and the instance as read", res, err, w.host.restarts)
	}

	w = newWorld(newFakeHost())
	w.host.holders = []string{svcSID}
	w.checker.requests = []contract.Request{{Session: 57, Command: "BACKUP DATABASE"}}
	_, err = NewSession(w.engine).RestartNow(context.Background(), RestartRequest{Target: defaultTarget, Force: true})
	if e := wantError(t, err, KindRefused); !strings.Contains(e.Refusal.Summary, "Backup or restore running") || w.host.restarts != 0 {
		t.Errorf("a backup running: %v, %d restarts; want the refusal and no restart", e, w.host.restarts)
	}
}

// A run that holds restarts (allow_restarts = false) refuses a restart on its own,
// pending or forced, before reading the host.
func TestRestartNowHeldByTheRun(t *testing.T) {
	h := newFakeHost()
	h.holders = []string{svcSID}
	w := newWorld(h)
	s := NewSession(w.engine)
	s.HoldRestarts = true
	_, err := s.RestartNow(context.Background(), RestartRequest{Target: defaultTarget, Force: true})
	if e := wantError(t, err, KindRefused); !strings.Contains(e.Refusal.Summary, "allow_restarts = false") || h.restarts != 0 || h.reads != 0 {
		t.Errorf("held: %v, %d restarts, %d reads; want the refusal, nothing asked of the host", e, h.restarts, h.reads)
	}
}

// The gate's refusals are the action's too: another run restarting a replica of
// the group refuses, changing nothing, and names no resource argument as a way out.
func TestRestartNowRefusedByTheGroupLock(t *testing.T) {
	w := secondaryOf(t)
	w.host.holders = []string{svcSID}
	w.checker.lockedBy = "SQL03"
	_, err := NewSession(w.engine).RestartNow(context.Background(), RestartRequest{Target: defaultTarget})
	ce := wantError(t, err, KindRefused)
	if ce.Refusal == nil || !strings.Contains(ce.Refusal.Summary, "AG1") || !strings.Contains(ce.Refusal.Detail, "SQL03") ||
		strings.Contains(ce.Refusal.Detail, "restart = ") {
		t.Errorf("refusal %+v, want one naming AG1 and SQL03, without the resource's restart argument", ce.Refusal)
	}
	if w.host.restarts != 0 || w.checker.locksHeld != 0 {
		t.Errorf("restarts %d, locks held %d; want none", w.host.restarts, w.checker.locksHeld)
	}
}
