package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// service is one entry of the service control manager. All fields are guarded by
// Host.mu.
type service struct {
	name, display  string
	account        string // start account (Win32_Service.StartName)
	accountSID     string // "" when it cannot be translated
	sidType        int    // 0 none, 1 unrestricted, 3 restricted
	dependsOnNames []string
	dependsOn      []*service
	dependents     []*service
	startDur       time.Duration
	stopDur        time.Duration
	failStart      bool
	refuseStop     bool // does not accept SERVICE_CONTROL_STOP (1052)
	// failStarts: the next starts that fail with failCode (fault injection); -1: all.
	failStarts       int
	failCode         int
	exitCode         int // Win32_Service.ExitCode of the last start or stop
	initiallyStopped bool
	inst             *Instance // set for an Engine
	deleted          bool      // removed from the SCM (UninstallInstance)
	// race: what another actor does to the service just before the next
	// SERVICE_CONTROL_STOP reaches it (RaceNextStop); "" none.
	race string

	state     string // contract.State*
	pending   string // "start": waiting for its dependencies; "stop": waiting for its dependents
	failed    bool   // the last start failed
	lastError string
	pid       int
	started   time.Time // process creation time
	stops     int       // stops begun since the host was built (ServiceSnapshot.Stops)
	timer     *time.Timer
	gen       uint64 // bumped on every armed transition; stale timers compare it
	down      bool   // an Engine that left Running and is not back (Options.Down)
}

const (
	pendingStart = "start"
	pendingStop  = "stop"
)

func (s *service) cancelTimer() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.gen++
}

func (h *Host) addService(s *service) {
	s.state = contract.StateStopped
	h.services = append(h.services, s)
	h.svcByName[strings.ToUpper(s.name)] = s
}

func checkDependencyCycles(services []*service) error {
	const (
		unvisited = iota
		visiting
		done
	)
	mark := map[*service]int{}
	var visit func(s *service, path []string) error
	visit = func(s *service, path []string) error {
		switch mark[s] {
		case visiting:
			return fmt.Errorf("services depend on each other in a cycle: %s", strings.Join(append(path, s.name), " → "))
		case done:
			return nil
		}
		mark[s] = visiting
		for _, d := range s.dependsOn {
			if err := visit(d, append(path, s.name)); err != nil {
				return err
			}
		}
		mark[s] = done
		return nil
	}
	for _, s := range services {
		if err := visit(s, nil); err != nil {
			return err
		}
	}
	return nil
}

// allDependents returns the services that depend on s, directly or not, the deepest
// first (the order EnumDependentServices and Stop-Service -Force stop them in).
func allDependents(s *service) []*service {
	var out []*service
	var walk func(x *service)
	walk = func(x *service) {
		for _, d := range x.dependents {
			walk(d)
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	walk(s)
	return out
}

func (h *Host) service(name string) (*service, error) {
	s, ok := h.svcByName[strings.ToUpper(strings.TrimSpace(name))]
	if !ok {
		names := make([]string, 0, len(h.services))
		for _, x := range h.services {
			names = append(names, x.name)
		}
		return nil, fmt.Errorf("%w: %q on host %s (its services: %s)", ErrNoSuchService, name, h.cfg.Name, strings.Join(names, ", "))
	}
	return s, nil
}

// ErrNoSuchService is ERROR_SERVICE_DOES_NOT_EXIST (1060).
var ErrNoSuchService = errors.New("the specified service does not exist as an installed service (1060)")

// StartService starts a service and, first, the services it depends on, as the SCM
// does. It returns at once; the service passes through Start Pending (start_ms) to
// Running. Starting a running or starting service is a no-op (like Start-Service).
func (h *Host) StartService(name string) error { return h.serviceOp(name, h.startLocked) }

// serviceOp runs op on the named service under the lock, then moves the model on.
func (h *Host) serviceOp(name string, op func(*service) error) error {
	h.mu.Lock()
	s, err := h.service(name)
	if err == nil {
		err = op(s)
		h.advanceLocked()
		h.notifyLocked()
	}
	h.mu.Unlock()
	h.syncListeners()
	return err
}

func (h *Host) startLocked(s *service) error {
	if h.closed {
		return errors.New("the host model was closed")
	}
	switch {
	case s.state == contract.StateRunning || s.state == contract.StateStartPending || s.pending == pendingStart:
		return nil
	case s.state == contract.StateStopPending || s.pending == pendingStop:
		return fmt.Errorf("cannot start service '%s (%s)': it is stopping (%s); wait until it is Stopped, then start it", s.display, s.name, contract.StateStopPending)
	case s.state == contract.StatePaused:
		// StartService on a paused service: ERROR_SERVICE_ALREADY_RUNNING.
		return fmt.Errorf("cannot start service '%s (%s)': an instance of the service is already running (1056, it is %s); continue it instead", s.display, s.name, contract.StatePaused)
	}
	if s.deleted {
		return fmt.Errorf("%w: %s was uninstalled", ErrNoSuchService, s.name)
	}
	for _, d := range s.dependsOn {
		if d.deleted {
			// ERROR_SERVICE_DEPENDENCY_DELETED: the dependency was uninstalled.
			return fmt.Errorf("cannot start service '%s (%s)': the dependency service does not exist or has been marked for deletion (1075): %s was uninstalled", s.display, s.name, d.name)
		}
	}
	s.pending = pendingStart
	s.failed = false
	s.lastError = ""
	for _, d := range s.dependsOn {
		if err := h.startLocked(d); err != nil {
			s.pending = ""
			return fmt.Errorf("cannot start service '%s (%s)': its dependency %s cannot start: %w", s.display, s.name, d.name, err)
		}
	}
	return nil
}

// StopService stops a service. A service with dependents that are not stopped
// cannot be stopped unless force is set; then the dependents are stopped first
// (Stop-Service -Force). It returns at once; the service passes through Stop Pending
// (stop_ms) to Stopped. Stopping a stopped service is a no-op.
func (h *Host) StopService(name string, force bool) error {
	return h.serviceOp(name, func(s *service) error { return h.stopLocked(s, force) })
}

func (h *Host) stopLocked(s *service, force bool) error {
	if h.closed {
		return errors.New("the host model was closed")
	}
	switch {
	case s.state == contract.StateStopped && s.pending == pendingStart:
		s.pending = "" // still waiting for its dependencies: just give up the start
		return nil
	case s.state == contract.StateStopped, s.state == contract.StateStopPending, s.pending == pendingStop:
		return nil
	case s.state == contract.StateStartPending:
		return fmt.Errorf("cannot stop service '%s (%s)': the service cannot accept control messages at this time (1061, it is %s); wait until it is Running", s.display, s.name, contract.StateStartPending)
	}
	var active []*service
	for _, d := range allDependents(s) {
		if d.state != contract.StateStopped || d.pending == pendingStart {
			active = append(active, d)
		}
	}
	if len(active) > 0 && !force {
		names := make([]string, len(active))
		for i, d := range active {
			names[i] = d.name
		}
		// Stop-Service's message for a service with running dependents.
		return fmt.Errorf("Cannot stop service '%s (%s)' because it has dependent services (%s). It can only be stopped if the Force flag is set", s.display, s.name, strings.Join(names, ", "))
	}
	for _, d := range active {
		if err := h.stopLocked(d, true); err != nil {
			return err
		}
	}
	s.pending = pendingStop
	return nil
}

// advanceLocked moves every service whose condition is met to its next state:
// a start waiting for its dependencies begins when they run (or fails with 1068
// when one of them cannot), a stop waiting for its dependents begins when they are
// stopped. Transitions with a zero duration complete at once.
func (h *Host) advanceLocked() {
	for progress := true; progress; {
		progress = false
		for _, s := range h.services {
			switch {
			case s.pending == pendingStart && s.state == contract.StateStopped:
				ready := true
				for _, d := range s.dependsOn {
					if d.state == contract.StateRunning {
						continue
					}
					ready = false
					if d.state == contract.StateStopped && d.pending != pendingStart {
						s.pending = ""
						s.failed = true
						s.lastError = fmt.Sprintf("The dependency service or group failed to start (1068): %s is %s", d.name, d.state)
						progress = true
						break
					}
				}
				if ready && s.pending == pendingStart {
					s.pending = ""
					h.beginStartLocked(s)
					progress = true
				}
			case s.pending == pendingStop && (s.state == contract.StateRunning || s.state == contract.StatePaused):
				ready := true
				for _, d := range s.dependents {
					if d.state != contract.StateStopped {
						ready = false
					}
				}
				if ready {
					s.pending = ""
					h.beginStopLocked(s)
					progress = true
				}
			}
		}
	}
}

func (h *Host) recordLocked(s *service) {
	h.eventSeq++
	h.events = append(h.events, serviceEvent{seq: h.eventSeq, at: h.now(), service: s.name, state: s.state})
	if len(h.events) > 1000 {
		h.events = slices.Delete(h.events, 0, len(h.events)-1000)
	}
}

// beginStartLocked creates the service's process (Start Pending). An Engine captures its
// token now (design/windows-behaviour.md#the-restart-rule: rights are read into the
// token when the process starts).
func (h *Host) beginStartLocked(s *service) {
	s.state = contract.StateStartPending
	h.nextPID += 4 + len(h.events)%7*4
	s.pid = h.nextPID
	s.started = h.now()
	h.recordLocked(s)
	if s.inst != nil {
		s.inst.processStartedLocked()
	}
	s.exitCode = 0
	h.armLocked(s, s.startDur, func() {
		if s.failStart || s.failStarts != 0 {
			code := 1067
			s.lastError = "The process terminated unexpectedly (1067); the service is configured to fail its start (fail_start)"
			if !s.failStart {
				if s.failStarts > 0 {
					s.failStarts--
				}
				code = s.failCode
				s.lastError = fmt.Sprintf("the start failed with Windows error %d (injected fault)", code)
			}
			s.exitCode = code
			s.state = contract.StateStopped
			s.failed = true
			s.pid = 0
			h.recordLocked(s)
			if s.inst != nil {
				s.inst.processEndedLocked(true)
			}
			return
		}
		s.state = contract.StateRunning
		h.recordLocked(s)
		if s.inst != nil {
			s.inst.engineRunningLocked()
			if s.down {
				s.down = false
				h.opts.Down.add(-1)
			}
		}
	})
}

func (h *Host) beginStopLocked(s *service) {
	s.state = contract.StateStopPending
	s.stops++
	h.recordLocked(s)
	if s.inst != nil {
		s.inst.engineStoppingLocked()
		if !s.down {
			s.down = true
			h.opts.Down.add(1)
		}
	}
	h.armLocked(s, s.stopDur, func() {
		s.state = contract.StateStopped
		s.pid = 0
		h.recordLocked(s)
		if s.inst != nil {
			s.inst.processEndedLocked(false)
		}
	})
}

// armLocked runs fn after d (at once when d is zero), then advances the model.
func (h *Host) armLocked(s *service, d time.Duration, fn func()) {
	s.cancelTimer()
	if d <= 0 || h.booting {
		fn()
		return
	}
	gen := s.gen
	s.timer = time.AfterFunc(d, func() {
		h.mu.Lock()
		if h.closed || s.gen != gen {
			h.mu.Unlock()
			return
		}
		s.timer = nil
		fn()
		h.advanceLocked()
		h.notifyLocked()
		h.mu.Unlock()
		h.syncListeners()
	})
}

// WaitServiceState waits until the named service is in state (one of the
// contract.State* values) or ctx ends. Waiting for Running fails early when the
// service's start failed.
func (h *Host) WaitServiceState(ctx context.Context, name, state string) error {
	h.mu.Lock()
	s, err := h.service(name)
	h.mu.Unlock()
	if err != nil {
		return err
	}
	switch state {
	case contract.StateRunning, contract.StateStopped, contract.StateStartPending, contract.StateStopPending:
	default:
		return fmt.Errorf("%q is not a service state: use %q, %q, %q or %q", state, contract.StateRunning, contract.StateStopped, contract.StateStartPending, contract.StateStopPending)
	}
	err = h.waitFor(ctx, func() (bool, error) {
		if s.deleted {
			return false, fmt.Errorf("%w: %s was uninstalled while waiting for it to be %s", ErrNoSuchService, s.name, state)
		}
		if s.state == state {
			return true, nil
		}
		if state == contract.StateRunning && s.failed && s.state == contract.StateStopped && s.pending == "" {
			return false, fmt.Errorf("service %s failed to start: %s", s.name, s.lastError)
		}
		return false, nil
	})
	if err != nil && ctx.Err() != nil {
		h.mu.Lock()
		now := s.state
		h.mu.Unlock()
		return fmt.Errorf("service %s did not reach %s (it is %s): %w", s.name, state, now, err)
	}
	return err
}

// ServiceState returns a service's state.
func (h *Host) ServiceState(name string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, err := h.service(name)
	if err != nil {
		return "", err
	}
	return s.state, nil
}

// RestartService restarts a service as Restart-Service -Force does and then starts again
// the dependents that were running
// (design/windows-behaviour.md#restarting-with-dependents: SqlServerDsc's
// Restart-SqlService). It waits until the service and those dependents run, at most two
// minutes.
func (h *Host) RestartService(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := h.restart(ctx, name)
	return err
}

// restartReport is what a restart did.
type restartReport struct {
	stopped    []string
	started    []string
	startedAt  time.Time
	finishedAt time.Time // when the Engine was seen Running
}

// errRestartTimeout wraps a wait that ran out during a restart.
type errRestartTimeout struct {
	service string
	err     error
}

func (e *errRestartTimeout) Error() string { return e.err.Error() }
func (e *errRestartTimeout) Unwrap() error { return e.err }

// errRestartStop wraps a refused stop during a restart.
type errRestartStop struct{ err error }

func (e *errRestartStop) Error() string { return e.err.Error() }
func (e *errRestartStop) Unwrap() error { return e.err }

func (h *Host) restart(ctx context.Context, name string) (restartReport, error) {
	rep := restartReport{stopped: []string{}, started: []string{}, startedAt: h.now()}
	h.mu.Lock()
	s, err := h.service(name)
	if err != nil {
		h.mu.Unlock()
		return rep, err
	}
	wasRunning := runningDependents(s)
	seq0 := h.eventSeq
	err = h.stopLocked(s, true)
	h.advanceLocked()
	h.notifyLocked()
	h.mu.Unlock()
	h.syncListeners()
	if err != nil {
		return rep, &errRestartStop{err}
	}
	if err := h.WaitServiceState(ctx, s.name, contract.StateStopped); err != nil {
		return rep, &errRestartTimeout{s.name, err}
	}
	h.mu.Lock()
	for _, e := range h.events {
		if e.seq > seq0 && e.state == contract.StateStopped {
			rep.stopped = append(rep.stopped, e.service)
		}
	}
	h.mu.Unlock()
	if err := h.StartService(s.name); err != nil {
		return rep, err
	}
	rep.started = append(rep.started, s.name)
	// A start the SCM accepted but that fails later (1067, 1068) leaves the service
	// Stopped: Restart-Service's caller sees it only as "not Running" when its wait
	// runs out, so the model waits out the deadline too.
	waitRunning := func(name string) error {
		err := h.WaitServiceState(ctx, name, contract.StateRunning)
		if err != nil && ctx.Err() == nil {
			<-ctx.Done()
		}
		if err != nil {
			return &errRestartTimeout{name, err}
		}
		return nil
	}
	if err := waitRunning(s.name); err != nil {
		return rep, err
	}
	rep.finishedAt = h.now()
	for _, d := range wasRunning {
		h.mu.Lock()
		running := d.state == contract.StateRunning || d.state == contract.StateStartPending || d.pending == pendingStart
		h.mu.Unlock()
		if running {
			continue
		}
		if err := h.StartService(d.name); err != nil {
			return rep, err
		}
		rep.started = append(rep.started, d.name)
		if err := waitRunning(d.name); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// serviceSIDOf returns the per-service SID, computed with the real algorithm.
func serviceSIDOf(s *service) string { return winsid.ServiceSID(s.name) }

// runningDependents are the dependents of s that run (or are starting), in the order
// to start them again: what they depend on first (allDependents lists deepest first).
// The caller holds h.mu.
func runningDependents(s *service) []*service {
	var out []*service
	for _, d := range allDependents(s) {
		if d.state == contract.StateRunning || d.state == contract.StateStartPending {
			out = append(out, d)
		}
	}
	slices.Reverse(out)
	return out
}

// Windows errors of the service control manager (winerror.h).
const (
	errDependentServicesRunning = 1051 // ERROR_DEPENDENT_SERVICES_RUNNING
	errInvalidServiceControl    = 1052 // ERROR_INVALID_SERVICE_CONTROL
	errServiceCannotAcceptCtrl  = 1061 // ERROR_SERVICE_CANNOT_ACCEPT_CTRL
	errServiceNotActive         = 1062 // ERROR_SERVICE_NOT_ACTIVE
)

// ControlError is a control the service control manager refused, with its Windows
// error.
type ControlError struct {
	Service string
	Code    int
	Text    string
}

func (e *ControlError) Error() string {
	return fmt.Sprintf("ControlService(SERVICE_CONTROL_STOP) on %s failed with Windows error %d: %s", e.Service, e.Code, e.Text)
}

// ControlStop is ControlService(SERVICE_CONTROL_STOP) for one service, as `sc.exe stop`
// sends it (its exit code is the Windows error): it stops nothing else. A service
// that is Stopped answers 1062; one Start Pending or Stop Pending cannot take the
// control (1061); one that does not accept the control answers 1052; one with a
// dependent that is not Stopped answers 1051. Running and Paused services go Stop
// Pending, then Stopped.
// (https://learn.microsoft.com/windows/win32/api/winsvc/nf-winsvc-controlservice)
func (h *Host) ControlStop(name string) error { return h.serviceOp(name, h.controlStopLocked) }

func (h *Host) controlStopLocked(s *service) error {
	if h.closed {
		return errors.New("the host model was closed")
	}
	h.raceLocked(s)
	switch {
	case s.state == contract.StateStopped && s.pending != pendingStart:
		return &ControlError{s.name, errServiceNotActive, "The service has not been started."}
	case s.state == contract.StateStartPending, s.state == contract.StateStopPending, s.pending != "":
		return &ControlError{s.name, errServiceCannotAcceptCtrl, "The service cannot accept control messages at this time."}
	}
	if s.refuseStop {
		return &ControlError{s.name, errInvalidServiceControl, "The requested control is not valid for this service."}
	}
	for _, d := range s.dependents {
		if d.state != contract.StateStopped || d.pending == pendingStart {
			return &ControlError{s.name, errDependentServicesRunning, "A stop control has been sent to a service that other running services are dependent on."}
		}
	}
	h.beginStopLocked(s)
	return nil
}

// PauseService pauses a running service (SERVICE_CONTROL_PAUSE); the model skips
// Pause Pending. A paused service still runs its process and counts as not stopped.
func (h *Host) PauseService(name string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, err := h.service(name)
	if err != nil {
		return err
	}
	if s.state != contract.StateRunning || s.pending != "" {
		return &ControlError{s.name, errServiceCannotAcceptCtrl, fmt.Sprintf("The service cannot accept control messages at this time (it is %s).", s.state)}
	}
	s.state = contract.StatePaused
	h.recordLocked(s)
	h.notifyLocked()
	return nil
}

// netDependentWait is the fixed wait of .NET Framework's ServiceController.Stop for
// each dependent it stops (new TimeSpan(0, 0, 30)); a variable for tests.
var netDependentWait = 30 * time.Second

// ErrNetTimeout is System.ServiceProcess.TimeoutException's message.
var ErrNetTimeout = errors.New("Time out has expired and the operation has not been completed")

// ServiceControllerStop is .NET Framework's ServiceController.Stop() (reference
// source, System.ServiceProcess/ServiceController.cs), which Stop-Service and the
// restart before issue 14 relied on: for each dependent (DependentServices, the
// indirect ones included, those that depend on others first) that is not Stopped, it
// calls Stop() on that dependent (the same loop, then ControlService) and waits at
// most 30 s for Stopped, throwing TimeoutException when the wait runs out; then it
// sends the service its own ControlService(STOP). A dependent that is Stop Pending
// (or Start Pending) makes ControlService answer 1061 and Stop() throw
// InvalidOperationException at once. It returns when the stop was sent, not when
// the service stopped.
func (h *Host) ServiceControllerStop(ctx context.Context, name string) error {
	h.mu.Lock()
	s, err := h.service(name)
	var deps []*service
	if err == nil {
		deps = allDependents(s)
	}
	h.mu.Unlock()
	if err != nil {
		return err
	}
	for _, d := range deps {
		if st, _ := h.ServiceState(d.name); st == contract.StateStopped {
			continue
		}
		if err := h.ServiceControllerStop(ctx, d.name); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, netDependentWait)
		err := h.WaitServiceState(wctx, d.name, contract.StateStopped)
		cancel()
		if err != nil {
			return fmt.Errorf("waiting for %s to stop: %w", d.name, ErrNetTimeout)
		}
	}
	if err := h.ControlStop(name); err != nil {
		return fmt.Errorf("Cannot stop %s service on computer '.': %w", name, err)
	}
	return nil
}

// Transitions counts the times the named service entered state (one of the
// contract.State* values) among the host's last 1,000 service events.
func (h *Host) Transitions(name, state string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, e := range h.events {
		if strings.EqualFold(e.service, name) && e.state == state {
			n++
		}
	}
	return n
}

// ServiceEvent is one state a service entered, and when.
type ServiceEvent struct {
	At    time.Time
	State string
}

// ServiceHistory lists the states the named service entered among the host's last
// 1,000 service events, oldest first (for tests: when a service was down).
func (h *Host) ServiceHistory(name string) []ServiceEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []ServiceEvent
	for _, e := range h.events {
		if strings.EqualFold(e.service, name) {
			out = append(out, ServiceEvent{At: e.at, State: e.state})
		}
	}
	return out
}
