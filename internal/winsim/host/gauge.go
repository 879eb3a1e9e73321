package host

import "sync"

// DownGauge counts the Engines that are down: they left Running (Stop Pending) and
// are not Running again yet, whether they are stopping, stopped or starting. Hosts
// that share one gauge (Options.Down) add up, so a test can tell how many Engines of
// a fleet were down at the same time: a rolling restart keeps the maximum at 1.
// An Engine that was stopped when its host was built is not counted.
type DownGauge struct {
	mu       sync.Mutex
	now, max int
}

func (g *DownGauge) add(d int) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now += d
	g.max = max(g.max, g.now)
}

// Now is the number of Engines down now; Max the most that were down at once
// since the gauge was made.
func (g *DownGauge) Now() int { g.mu.Lock(); defer g.mu.Unlock(); return g.now }
func (g *DownGauge) Max() int { g.mu.Lock(); defer g.mu.Unlock(); return g.max }
