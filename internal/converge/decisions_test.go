package converge

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Tests that pin decisions mutation testing found unguarded (make mutate).

// movingClock stands still until the test moves it.
type movingClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *movingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *movingClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

func (c *movingClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// The outcome's read time is when what it reports was read: the plan's read when
// the apply reused it, else the apply's own read; after a change, the change's
// read-back (as old as the change) or the read after it.
func TestApplyRecordsWhenItRead(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		granted    bool // nothing to do
		planAge    time.Duration
		noPlanRead bool
		noReadBack bool
		wantReads  int
		wantAt     time.Time
	}{
		{name: "nothing to do, plan read 5 s ago", granted: true, planAge: 5 * time.Second, wantReads: 0, wantAt: t0.Add(-5 * time.Second)},
		{name: "nothing to do, plan read too old", granted: true, planAge: DefaultReadFreshness + time.Second, wantReads: 1, wantAt: t0},
		{name: "nothing to do, no plan read", granted: true, noPlanRead: true, wantReads: 1, wantAt: t0},
		{name: "restart, read back by the restart", noPlanRead: true, wantReads: 1, wantAt: t0},
		{name: "restart, read after it", noPlanRead: true, noReadBack: true, wantReads: 2, wantAt: t0.Add(time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost()
			if tc.granted {
				h.granted(svcSID)
			}
			w := newWorld(h)
			clock := &movingClock{now: t0}
			w.engine.Clock = clock
			target := defaultTarget
			if !tc.noPlanRead {
				plan, err := New(w.clients).Read(context.Background(), defaultTarget, enable)
				if err != nil {
					t.Fatal(err)
				}
				target.Read, target.ReadAt = plan.Read, t0.Add(-tc.planAge)
			}
			h.reads = 0
			h.noReadBack = tc.noReadBack
			h.onRestart = func() { clock.advance(time.Minute) }
			out, err := w.engine.Apply(context.Background(), target, enable)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if h.reads != tc.wantReads {
				t.Errorf("read_instance %d times, want %d", h.reads, tc.wantReads)
			}
			if !out.ReadAt.Equal(tc.wantAt) {
				t.Errorf("read at %v, want %v", out.ReadAt, tc.wantAt)
			}
			if out.SQLPort != 1433 || out.Read == nil {
				t.Errorf("SQL port %d, read %v; want the instance's 1433", out.SQLPort, out.Read)
			}
		})
	}
}
