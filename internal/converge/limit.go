package converge

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// RestartLimiter bounds how many restarts (the restart and the wait for SQL Server)
// run at once across every instance an Engine with it converges: a fleet apply then
// rolls through its restarts while reads and grants stay parallel. Whatever the
// limit, the instances of one host restart one at a time: the host's restart lease
// (design/restart.md) would refuse a second one, so within one run the second
// waits for the first instead. A nil *RestartLimiter is no limit at all.
type RestartLimiter struct {
	slots chan struct{} // nil: no limit on the number of hosts restarting

	mu    sync.Mutex
	hosts map[string]chan struct{} // one restart at a time per host
}

// NewRestartLimiter returns a limiter of n concurrent restarts; n <= 0 means no
// limit on their number, with still one restart at a time per host.
func NewRestartLimiter(n int) *RestartLimiter {
	l := &RestartLimiter{hosts: map[string]chan struct{}{}}
	if n > 0 {
		l.slots = make(chan struct{}, n)
	}
	return l
}

// Limit is the number of concurrent restarts, 0 for no limit.
func (l *RestartLimiter) Limit() int {
	if l == nil || l.slots == nil {
		return 0
	}
	return cap(l.slots)
}

// hostSlot is the channel that holds host's one restart.
func (l *RestartLimiter) hostSlot(host string) chan struct{} {
	key := strings.ToLower(strings.TrimSuffix(host, "."))
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.hosts[key]
	if !ok {
		c = make(chan struct{}, 1)
		l.hosts[key] = c
	}
	return c
}

// take puts a token in c, waiting (and saying so) while c is full; false when ctx
// ends first.
func (e *Engine) take(ctx context.Context, c chan struct{}, t Target, waiting string, fields map[string]any) bool {
	select {
	case c <- struct{}{}:
		return true
	default:
	}
	start := e.clock().Now()
	f := map[string]any{"host": t.Host, "instance": t.Instance}
	for k, v := range fields {
		f[k] = v
	}
	e.info(ctx, waiting, f)
	select {
	case c <- struct{}{}:
		e.info(ctx, "restart slot acquired", map[string]any{
			"host": t.Host, "instance": t.Instance, "waited": fmt.Sprint(e.clock().Now().Sub(start)),
		})
		return true
	case <-ctx.Done():
		return false
	}
}
