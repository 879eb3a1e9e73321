package converge

import (
	"context"
	"fmt"
)

// RestartLimiter bounds how many restarts (the restart and the wait for SQL Server)
// run at once across every instance an Engine with it converges: a fleet apply then
// rolls through its restarts while reads and grants stay parallel. A nil
// *RestartLimiter is no limit.
type RestartLimiter struct {
	slots chan struct{}
}

// NewRestartLimiter returns a limiter of n concurrent restarts; n <= 0 means no
// limit (nil).
func NewRestartLimiter(n int) *RestartLimiter {
	if n <= 0 {
		return nil
	}
	return &RestartLimiter{slots: make(chan struct{}, n)}
}

// Limit is the number of concurrent restarts, 0 for no limit.
func (l *RestartLimiter) Limit() int {
	if l == nil {
		return 0
	}
	return cap(l.slots)
}

// restartSlot waits for a restart slot, or until ctx ends (a KindRestartSlot
// error). The returned func gives the slot back.
func (e *Engine) restartSlot(ctx context.Context, t Target, out *Outcome) (func(), error) {
	l := e.Restarts
	if l == nil {
		return func() {}, nil
	}
	release := func() { <-l.slots }
	select {
	case l.slots <- struct{}{}:
		return release, nil
	default:
	}
	start := e.clock().Now()
	e.info(ctx, "waiting for a restart slot: other instances are restarting", map[string]any{
		"host": t.Host, "instance": t.Instance, "max_parallel_restarts": l.Limit(),
	})
	select {
	case l.slots <- struct{}{}:
		e.info(ctx, "restart slot acquired", map[string]any{
			"host": t.Host, "instance": t.Instance, "waited": fmt.Sprint(e.clock().Now().Sub(start)),
		})
		return release, nil
	case <-ctx.Done():
		return nil, out.fail(&Error{Kind: KindRestartSlot, Target: t, Err: ctx.Err(), MaxParallelRestarts: l.Limit()})
	}
}
