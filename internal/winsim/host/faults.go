package host

import (
	"fmt"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// Service faults for the fault matrix (winsim control actions fail_start and
// slow_stop). They change the service control manager's model only; the WinRM and
// TDS faults are the endpoints' (internal/winsim/faults.go).

// FailStarts makes the next times starts of a service fail with the Windows error
// code (as Win32_Service.ExitCode reports it; 1067 when code is 0): the process
// starts (Start Pending) and exits. times -1 fails every start until cleared with
// times 0.
func (h *Host) FailStarts(name string, code, times int) error {
	if code == 0 {
		code = 1067
	}
	if code < 0 || times < -1 {
		return fmt.Errorf("fail_start: code %d and times %d must not be negative (times -1: every start)", code, times)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s, err := h.service(name)
	if err != nil {
		return err
	}
	s.failStarts, s.failCode = times, code
	return nil
}

// SetStopDuration makes a service's stops take d from now on: Stop Pending that
// long, as an Engine does while it checkpoints or rolls back. Stop-Service, and so
// the old restart, waits for it without a limit.
func (h *Host) SetStopDuration(name string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("slow_stop: the duration %s is negative", d)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s, err := h.service(name)
	if err != nil {
		return err
	}
	s.stopDur = d
	return nil
}

// EndStopNow ends a service's Stop Pending now, as when the Engine's checkpoint or
// rollback ends sooner than its stop duration said: a test holds a restart in
// progress with a long stop and ends it once it has seen what it waits for.
func (h *Host) EndStopNow(name string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, err := h.service(name)
	if err != nil {
		return err
	}
	if s.state != contract.StateStopPending || s.timer == nil {
		return fmt.Errorf("end_stop: %s is %s, not stopping", name, s.state)
	}
	s.timer.Reset(0)
	return nil
}

// TerminateProcess ends a service's process at once, as TerminateProcess does (a
// node that fails, the cluster's resource host ending a resource whose start
// outlasted its pending timeout): Stopped without Stop Pending, exit code 1067.
// The running services that depend on it end with it.
func (h *Host) TerminateProcess(name string) error {
	return h.serviceOp(name, func(s *service) error {
		for _, d := range append(allDependents(s), s) {
			h.terminateLocked(d)
		}
		return nil
	})
}

func (h *Host) terminateLocked(s *service) {
	if s.state == contract.StateStopped {
		s.pending = ""
		return
	}
	wasRunning := s.state == contract.StateRunning || s.state == contract.StatePaused
	s.cancelTimer()
	s.pending = ""
	s.state = contract.StateStopped
	s.pid = 0
	s.exitCode = 1067
	s.lastError = "The process terminated unexpectedly (1067)"
	h.recordLocked(s)
	if s.inst != nil {
		s.inst.processEndedLocked(false)
		if wasRunning && !s.down {
			s.down = true
			h.opts.Down.add(1)
		}
	}
}

// EngineBackElsewhere tells the down gauge (Options.Down) that a failover cluster
// instance's Engine that left Running on this node runs again on another node:
// the instance is no longer down, though this node's process stays stopped.
func (h *Host) EngineBackElsewhere(instance string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	inst, ok := h.instanceLocked(instance)
	if !ok || !inst.engine.down {
		return
	}
	inst.engine.down = false
	h.opts.Down.add(-1)
}

// What another actor does to a service between a caller's read of it and the
// SERVICE_CONTROL_STOP the caller then sends (RaceNextStop).
const (
	// RaceStopped: the service stopped by itself an instant before (another
	// administrator's stop, or its own clean exit); ControlService answers 1062
	// (ERROR_SERVICE_NOT_ACTIVE).
	RaceStopped = "stopped"
	// RaceRestarting: its process ended and the SCM's recovery action started it
	// again; it is Start Pending for its start duration, and ControlService answers
	// 1061 (ERROR_SERVICE_CANNOT_ACCEPT_CTRL) until it is Running.
	RaceRestarting = "restarting"
)

// RaceNextStop arms a race for the next SERVICE_CONTROL_STOP sent to the service
// (ControlStop, sc.exe stop): just before the control reaches it, the service is
// changed as how says (RaceStopped, RaceRestarting); the control then gets the
// answer the SCM gives a service in that state (ControlService's documented
// errors). Once: the race is used up by that control. "" clears it.
func (h *Host) RaceNextStop(name, how string) error {
	if how != "" && how != RaceStopped && how != RaceRestarting {
		return fmt.Errorf("race_stop: %q is not %q or %q", how, RaceStopped, RaceRestarting)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s, err := h.service(name)
	if err != nil {
		return err
	}
	s.race = how
	return nil
}

// raceLocked plays the race armed for s, if any, before a control reaches it.
func (h *Host) raceLocked(s *service) {
	how := s.race
	s.race = ""
	if s.state != contract.StateRunning && s.state != contract.StatePaused {
		return // nothing to race: the caller would not have sent the stop
	}
	switch how {
	case RaceStopped:
		saved := s.stopDur
		s.stopDur = 0
		h.beginStopLocked(s) // Stop Pending, then Stopped at once
		s.stopDur = saved
	case RaceRestarting:
		h.terminateLocked(s)
		h.beginStartLocked(s)
	}
}
