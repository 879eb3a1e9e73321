package winsim

import (
	"context"
	"fmt"
	"time"
)

// defaultWinRMRestart is how long a restart_winrm keeps the listeners closed when
// the action names no duration_ms: the WinRM service's stop and start, which take
// well under a second on an idle host (modelled, not measured; FIDELITY.md).
const defaultWinRMRestart = 300 * time.Millisecond

// restartWinRM plays Restart-Service WinRM on one host: the service stops, so
// every WinRS shell ends with its commands (their processes are in the shell's job
// object) and every TCP connection of the listeners ends; for d nothing listens
// (a connection attempt is refused); then the service listens again on the same
// ports. What the host runs outside WinRM's processes, such as the restart's guard
// (host/restart_job.go), is not touched. With wait, it returns once the listeners
// are open again; otherwise once the shells and connections are gone.
func (s *Sim) restartWinRM(ctx context.Context, sh *simHost, d time.Duration, wait bool) (int, error) {
	if d <= 0 {
		d = defaultWinRMRestart
	}
	var paused []*gateListener
	for _, g := range sh.faults.gates {
		if g.pause() {
			paused = append(paused, g)
		}
	}
	shells := sh.wsman.DropShells()
	s.logf("winsim: host %s: WinRM service restarting: %d shell(s) ended, connections reset, listeners closed for %s", sh.name, shells, d)
	sh.faults.mu.Lock()
	if sh.faults.stop == nil {
		sh.faults.stop = make(chan struct{})
	}
	stop := sh.faults.stop
	sh.faults.mu.Unlock()
	done := make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(done)
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-stop: // clear_faults or the simulator's Close
		}
		for _, g := range paused {
			g.resume()
		}
		s.logf("winsim: host %s: WinRM service running again", sh.name)
	}()
	if !wait {
		return shells, nil
	}
	select {
	case <-done:
		return shells, nil
	case <-ctx.Done():
		return shells, fmt.Errorf("host %s: waiting for the WinRM listeners to open again: %w", sh.name, ctx.Err())
	}
}
