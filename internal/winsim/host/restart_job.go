package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// The restart as restart_instance runs it on Windows (design/restart.md): the
// runner in restart_instance's own process, watched by a guard process started
// outside the job object of the WinRM shell (guard.go: through WMI, or a scheduled
// task where Defender's ASR rule blocks WMI), so it completes when the shell is
// deleted or the connection lost; that wait is what ends with the shell. Progress is
// recorded in a marker (HKLM:\SOFTWARE\mssqlifi\Restart\<instance>), which
// restart_status reads. One restart per instance at a time: a request joins the one
// in progress. The simulator runs runner and guard as one goroutine under the host's
// lifetime, step by step as restart_worker.ps1 runs them.

// restartJob is one instance's last restart. res is guarded by Host.mu.
type restartJob struct {
	res  contract.RestartInstanceResult
	done chan struct{} // closed when res.Finished
	task string        // the guard's scheduled task, "" when WMI created it
	// handedOver: the runner has returned, leaving the rest to the guard.
	handedOver bool
	// left is how the processes of a marker left behind are (LeaveRestartMarker);
	// "" for a restart this simulator runs, whose runner and guard live until it
	// finished. timeout is that marker's TimeoutSeconds.
	left    string
	timeout time.Duration
	// The prepared phase (res.Phase contract.PhasePrepared): the marker is written
	// and the guard started, nothing changed until the runner records its go
	// (goRestart). guardEnded: the guard ended without a go (the runner ended, the
	// marker went or became another request's, or its own deadline passed); a go
	// is then refused. guarded: the guard runs (its launcher's start record seen).
	guardEnded bool
	guarded    bool
	// runner is the prepared restart's runner process (its request's context: the
	// shell's job object ends it); nil for a restart that is not this simulator's.
	runner context.Context
	// goUntil is until when the prepared restart's runner waits for its go (the
	// marker's GoUntil): a refusal of another request names it.
	goUntil time.Time
}

// How the processes of a restart marker left behind are (restart_common.ps1,
// Get-RestartProcessState): no process has their ids; a powershell.exe started at
// another time has them (ids are reused); a powershell.exe has them but the marker
// records no start time (liveness unknown).
const (
	LeftProcessesGone   = "gone"
	LeftProcessReused   = "reused"
	LeftProcessUnknown  = "unknown"
	restartUnknownGrace = restartLateLimit
)

// endedLocked reports whether an unfinished restart's processes are known to have
// ended (Read-RestartMarker): both gone, or unknown past the restart's deadline plus
// the late limit. Such a restart is reported failed and holds no lease.
func (j *restartJob) endedLocked(now time.Time) bool {
	if j.res.Phase == contract.PhasePrepared && j.runnerGone() {
		return true // prepared, and its runner ended with its shell
	}
	switch j.left {
	case "":
		return false
	case LeftProcessUnknown:
		return !now.Before(j.res.StartedAt.Add(j.timeout + restartUnknownGrace))
	}
	return true
}

// inProgressLocked reports whether j holds the host's restart lease. A restart
// prepared and not let go holds it while its runner lives.
func (j *restartJob) inProgressLocked(now time.Time) bool {
	return !j.res.Finished && !j.endedLocked(now)
}

// preparedLocked reports whether j is a restart prepared and not let go whose runner
// lives (Read-RestartMarker returns it; one whose runner has ended is no restart).
func (j *restartJob) preparedLocked() bool {
	return j.res.Phase == contract.PhasePrepared && j.left == "" && !j.runnerGone()
}

// runnerGone reports whether the prepared restart's runner process has ended with
// its shell (false for a restart that is not this simulator's).
func (j *restartJob) runnerGone() bool {
	if j.runner == nil {
		return false
	}
	select {
	case <-j.runner.Done():
		return true
	default:
		return false
	}
}

// noRecordLocked reports whether j is no restart at all for restart_status and
// a new request: prepared and never let go.
func (j *restartJob) noRecordLocked() bool { return j.res.Phase == contract.PhasePrepared }

// LeaveRestartMarker leaves the marker of an unfinished restart of instance, begun
// ago, whose runner and guard are as how says (LeftProcessesGone, LeftProcessReused,
// LeftProcessUnknown): as a restart interrupted by a reboot or a crash leaves it.
func (h *Host) LeaveRestartMarker(instance, how string, ago, timeout time.Duration) error {
	if how != LeftProcessesGone && how != LeftProcessReused && how != LeftProcessUnknown {
		return fmt.Errorf("leave_restart_marker: %q is not gone, reused or unknown", how)
	}
	inst, ok := h.Instance(instance)
	if !ok {
		return fmt.Errorf("leave_restart_marker: no instance %s", instance)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.restarts[strings.ToUpper(inst.name)] = &restartJob{done: make(chan struct{}), left: how, timeout: timeout, res: contract.RestartInstanceResult{
		Found: true, RestartID: newToken(), Phase: contract.PhaseStopping, ServiceName: inst.engine.name,
		Stopped: []string{}, Started: []string{}, ServiceState: inst.engine.state, StartedAt: h.now().Add(-ago).UTC(),
	}}
	return nil
}

// restartRetryPause is the worker's pause between start attempts (Start-Sleep 2).
const restartRetryPause = 2 * time.Second

// restartLateLimit bounds the wait for a stop that ran past the deadline, after
// which the worker starts the Engine again.
const restartLateLimit = 2 * time.Hour

var restartIDPattern = regexp.MustCompile(contract.RestartIDPattern)

// RestartStatus returns the instance's last restart as restart_status reports it.
func (h *Host) RestartStatus(instance string) contract.RestartInstanceResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	j := h.restarts[strings.ToUpper(instance)]
	if j == nil || j.noRecordLocked() {
		return contract.RestartInstanceResult{Stopped: []string{}, Started: []string{}}
	}
	return j.snapshotLocked(h.now())
}

func (j *restartJob) snapshotLocked(now time.Time) contract.RestartInstanceResult {
	r := j.res
	if !r.Finished && j.endedLocked(now) {
		r.Finished, r.Phase, r.Error = true, contract.PhaseDone, contract.RestartFailed
		r.Message = fmt.Sprintf("The restart processes ended before it finished (was the host restarted?). Check the state of the service %s.", r.ServiceName)
	}
	r.Stopped = slices.Clone(r.Stopped)
	r.Started = slices.Clone(r.Started)
	r.ErrorLogTail = slices.Clone(r.ErrorLogTail)
	return r
}

// restartLease is restart_instance's look at the markers under the host's restart
// lock (restart_common.ps1: Enter-RestartLock, Find-OtherRestart), after the guard's
// file was written and before any change: an error when a restart of another instance
// of the host is in progress (contract.CodeRestartInProgress: nothing changed), else
// the job to join (nil: a new restart). Unless it returned an error, the lock is held
// until release (startRestart releases it once the new job is recorded).
type restartLease struct {
	join    *restartJob
	release func()
}

func (h *Host) enterRestartLease(inst *Instance, id string) (*restartLease, error) {
	if _, _, err := h.prepareGuardFile(); err != nil {
		return nil, fmt.Errorf("The restart's guard cannot be prepared on %s: %v. Nothing was changed or stopped.", h.computer, err)
	}
	h.restartLock.Lock()
	var once sync.Once
	release := func() { once.Do(h.restartLock.Unlock) }
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	for name, j := range h.restarts {
		if name != strings.ToUpper(inst.name) && j.inProgressLocked(now) {
			release()
			if j.preparedLocked() {
				return nil, &leaseRefusal{msg: fmt.Sprintf("The restart of %s was refused: request %s to restart instance %s on %s is prepared (since %s) and waits for its go line until %s; "+
					"it holds the host until then, or until its process ends, and one instance of a host restarts at a time. Nothing was changed for %s. Apply again after %s.",
					inst.name, j.res.RestartID, h.instanceName(name), h.computer, j.res.StartedAt.Format(time.RFC3339Nano), j.goUntil.Format(time.RFC3339Nano),
					inst.name, j.goUntil.Format(time.RFC3339Nano))}
			}
			return nil, &leaseRefusal{msg: fmt.Sprintf("The restart of %s was refused: the restart of instance %s on %s is in progress (since %s, phase %s), "+
				"and one instance of a host restarts at a time. Nothing was changed for %s. Apply again once that restart has finished.",
				inst.name, h.instanceName(name), h.computer, j.res.StartedAt.Format(time.RFC3339Nano), j.res.Phase, inst.name)}
		}
	}
	l := &restartLease{release: release}
	j := h.restarts[strings.ToUpper(inst.name)]
	switch {
	case j == nil:
	case j.noRecordLocked():
		// Prepared, not let go: never joined. This request's own (sent again after it
		// ended before its go line) is replaced; another request's refuses this one.
		if j.preparedLocked() && j.res.RestartID != id {
			release()
			return nil, &leaseRefusal{msg: fmt.Sprintf("The restart of %s was refused: request %s to restart it on %s is prepared (since %s) and waits for its go line until %s; "+
				"it holds the host until then, or until its process ends. Nothing was changed for %s. Apply again after %s.", inst.name, j.res.RestartID, h.computer,
				j.res.StartedAt.Format(time.RFC3339Nano), j.goUntil.Format(time.RFC3339Nano), inst.name, j.goUntil.Format(time.RFC3339Nano))}
		}
	case j.inProgressLocked(now) || (j.res.RestartID == id && id != ""):
		l.join = j
		release()
	}
	return l, nil
}

// leaseRefusal is the lease's refusal (exit ExitRefused, contract.CodeRestartInProgress).
type leaseRefusal struct{ msg string }

func (e *leaseRefusal) Error() string { return e.msg }

// instanceName is the configured name of the instance whose key is upper.
func (h *Host) instanceName(upper string) string {
	for _, in := range h.instances {
		if strings.ToUpper(in.name) == upper {
			return in.name
		}
	}
	return upper
}

// guardGoMargin is how much longer than the go line's wait the guard waits for the
// runner's go ($RestartGuardGoMarginSeconds, restart_guard.ps1).
const guardGoMargin = 60 * time.Second

// prepareRestart is restart_instance up to its prepared line, under the lease l
// (enterRestartLease): the marker written in phase prepared (it holds the lease from
// then on, and the lock is released), then the guard started (guard.go), which waits
// for the runner's go changing nothing (guardPrepared). An error when the guard cannot
// be started: the marker is removed, nothing was changed or stopped. goWait is how
// long the runner may wait for its go (the go line's go_seconds, or the restart's
// timeout for an ungated request); runner is the runner's process (the request's
// context: the shell's job object).
func (h *Host) prepareRestart(runner context.Context, inst *Instance, id string, goWait time.Duration, l *restartLease) (*restartJob, error) {
	defer l.release()
	guardFile, hash, err := h.prepareGuardFile()
	if err != nil {
		return nil, fmt.Errorf("The restart's guard cannot be prepared on %s: %v. Nothing was changed or stopped.", h.computer, err)
	}
	key := strings.ToUpper(inst.name)
	if id == "" {
		id = newToken()
	}
	token := newToken()
	h.mu.Lock()
	if last := h.restarts[key]; last != nil {
		h.removeTaskLocked(last.task) // a task the last restart's guard left behind
	}
	j := &restartJob{done: make(chan struct{}), res: contract.RestartInstanceResult{
		Found: true, RestartID: id, Phase: contract.PhasePrepared, ServiceName: inst.engine.name,
		Stopped: []string{}, Started: []string{}, ServiceState: inst.engine.state, StartedAt: h.now().UTC(),
	}, runner: runner, goUntil: h.now().UTC().Add(goWait)}
	h.restarts[key] = j // the marker, written before the guard starts; it holds the lease now
	h.notifyLocked()    // a request it replaced: its guard sees the marker another's
	h.mu.Unlock()
	l.release()
	launch := h.launchGuard(runner, inst.name, token, guardFile, hash)
	if launch.raw {
		h.removePrepared(key, j)
		return nil, errors.New(launch.why) // the exception, as the script's top level reports it
	}
	if launch.launcher == "" {
		h.removePrepared(key, j)
		return nil, fmt.Errorf("The restart's guard process could not be started on %s: %s. Nothing was stopped or changed. "+
			"Start the Task Scheduler service (Schedule), or let WMI create processes on this host (an ASR rule in audit mode blocks nothing), then apply again.", h.computer, launch.why)
	}
	h.mu.Lock()
	j.task, j.guarded = launch.task, launch.guarded
	limit := h.guardGoLimit
	h.mu.Unlock()
	if limit <= 0 {
		limit = goWait + guardGoMargin
	}
	if launch.guarded {
		h.mu.Lock()
		h.preparedGuards++
		h.mu.Unlock()
		go h.guardPrepared(j, key, limit)
	}
	go func() { // the runner's process ends with its shell (the request's context)
		<-runner.Done()
		h.endPreparedRunner(j)
	}()
	return j, nil
}

// endPreparedRunner records that the runner of j ended: while j is prepared, its
// marker is then no restart (Read-RestartMarker) and its guard ends.
func (h *Host) endPreparedRunner(j *restartJob) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if j.res.Phase == contract.PhasePrepared && j.left == "" {
		j.left = LeftProcessesGone
		h.notifyLocked()
	}
}

// guardPrepared is the guard's prepared phase (restart_worker.ps1): it does nothing
// until the runner records its go, and ends, having changed nothing and removed its
// task, when the runner ends first, the marker goes or becomes another request's, or
// limit (the marker's GoSeconds) passes; then under the lease's lock, so that no go
// is recorded after it (goRestart refuses one: the guard has ended).
func (h *Host) guardPrepared(j *restartJob, key string, limit time.Duration) {
	ctx, cancel := context.WithTimeout(h.life, limit)
	defer cancel()
	_ = h.waitFor(ctx, func() (bool, error) {
		return j.res.Phase != contract.PhasePrepared || j.left != "" || j.runnerGone() || h.restarts[key] != j, nil
	})
	if ctx.Err() != nil && h.life.Err() == nil {
		h.restartLock.Lock() // the deadline: give up under the lock
		defer h.restartLock.Unlock()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.preparedGuards--
	h.notifyLocked()
	if j.res.Phase != contract.PhasePrepared && h.restarts[key] == j {
		return // let go: from here the guard watches the restart (runRestart)
	}
	j.guardEnded = true
	h.removeTaskLocked(j.task) // the guard removes its task when it ends
	h.notifyLocked()
}

// removePrepared is Remove-PreparedRestart: the marker of a restart prepared and
// never let go removed, under the lease's lock, while it is still j.
func (h *Host) removePrepared(key string, j *restartJob) {
	h.restartLock.Lock()
	defer h.restartLock.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.restarts[key] == j && j.res.Phase == contract.PhasePrepared {
		delete(h.restarts, key)
		h.notifyLocked()
	}
}

// goRestart is Set-RestartGo and the restart it lets go: the go recorded under the
// lease's lock (phase stopping), refused when another request replaced j's marker or
// j's guard has ended (the restart would be unguarded); then the restart runs
// (runRestart) under the host's lifetime when a guard runs, else under the shell's
// (runner).
func (h *Host) goRestart(runner context.Context, inst *Instance, j *restartJob, timeout time.Duration) error {
	key := strings.ToUpper(inst.name)
	h.restartLock.Lock()
	h.mu.Lock()
	var why string
	switch {
	case h.restarts[key] != j:
		why = "another request for this instance replaced this one before it was let go"
	case j.guardEnded:
		why = "its guard process ended before the restart was let go"
	default:
		j.res.Phase = contract.PhaseStopping
		h.notifyLocked()
	}
	guarded := j.guarded
	h.mu.Unlock()
	h.restartLock.Unlock()
	if why != "" {
		return errors.New(why)
	}
	// A guard runs: the restart outlives the shell. None (a script that did not wait
	// for its start record): the runner is restart_instance's process alone, and ends
	// with the shell (its job object).
	life := h.life
	if !guarded {
		life = runner
	}
	go h.runRestart(j, inst, timeout, life, guarded)
	return nil
}

// SetGuardGoLimit sets how long a prepared restart's guard waits for the runner's
// go (0: the go line's wait plus guardGoMargin, as the scripts do), for tests of the
// guard's own deadline.
func (h *Host) SetGuardGoLimit(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.guardGoLimit = d
}

// WaitPreparedGuards waits until no guard of the host is in its prepared phase
// (guardPrepared: each has ended, or watches the restart its runner let go), or ctx
// ends.
func (h *Host) WaitPreparedGuards(ctx context.Context) error {
	return h.waitFor(ctx, func() (bool, error) { return h.preparedGuards == 0, nil })
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// waitRestart waits until j finished or reported an error (Wait-RestartMarker: a
// stop that ran past the deadline is reported before the worker is done), wait
// passed or ctx ended, and returns its state. The runner's own request (runner true)
// waits instead until the runner returned: the restart finished, or was handed over
// to the guard.
func (h *Host) waitRestart(ctx context.Context, j *restartJob, wait time.Duration, runner bool) contract.RestartInstanceResult {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	_ = h.waitFor(wctx, func() (bool, error) {
		if runner {
			return j.res.Finished || j.handedOver, nil
		}
		return j.res.Finished || j.res.Error != "" || j.endedLocked(h.now()), nil
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	return j.snapshotLocked(h.now())
}

// update changes the job's state under the lock.
func (h *Host) updateRestart(j *restartJob, f func(r *contract.RestartInstanceResult)) {
	h.mu.Lock()
	f(&j.res)
	h.notifyLocked()
	h.mu.Unlock()
}

// runRestart is restart_worker.ps1, runner and guard together, step by step: the
// dependents that are Running or Paused (the pending ones settle first) stopped one
// at a time, each with ControlService (sc.exe stop: 1062 counts as stopped, 1061
// waits for a settled state and asks again) and a wait bounded by the deadline; every dependent read again just before the Engine is sent its own
// ControlService stop, and one that is not Stopped ends the restart there with
// stop_timeout, the dependents it stopped started again; then the Engine started
// with retries, and the dependents started again. Any failure after the first stop
// starts again what was stopped before it is reported. It runs under the host's
// lifetime, not a shell's, when a guard runs (guarded); without one it runs under
// the shell's (life), and the shell's end ends it where it is: what it stopped stays
// stopped, and the marker's processes are gone.
func (h *Host) runRestart(j *restartJob, inst *Instance, timeout time.Duration, life context.Context, guarded bool) {
	r := &restartRun{h: h, j: j, inst: inst, s: inst.engine, ctx: life, guarded: guarded, timeout: timeout, secs: int(timeout / time.Second)}
	r.deadline, r.cancel = context.WithTimeout(life, timeout)
	defer func() { r.cancel() }()
	if !r.stopDependents() || !r.noDependentLeft() || !r.stopEngine() || !r.startEngine() {
		return
	}
	r.engineRunsAgain()
	r.startDependents()
}

// restartRun is one run of restart_worker.ps1 (runRestart): the Engine's service
// it restarts, the deadline of its current phase, and the dependents it stopped.
type restartRun struct {
	h       *Host
	j       *restartJob
	inst    *Instance
	s       *service        // the Engine's service
	ctx     context.Context // the runner's life: the shell's, or the host's with a guard
	guarded bool
	timeout time.Duration
	secs    int
	// deadline bounds the current phase; renew starts a new one.
	deadline context.Context
	cancel   context.CancelFunc
	running  []*service // the dependents this restart stops and starts again
}

// dead reports (and records) that the runner's process ended with its shell.
func (r *restartRun) dead() bool {
	h := r.h
	if r.guarded || r.ctx.Err() == nil {
		return false
	}
	h.mu.Lock()
	if r.j.left == "" {
		r.j.left = LeftProcessesGone
		h.notifyLocked()
	}
	h.mu.Unlock()
	return true
}

// runnerReturns is the runner's `if ($Inline) { return }`: without a guard, nobody
// goes on, and its process ends.
func (r *restartRun) runnerReturns() bool {
	h := r.h
	h.handOver(r.j)
	if r.guarded {
		return false
	}
	h.mu.Lock()
	r.j.left = LeftProcessesGone
	h.notifyLocked()
	h.mu.Unlock()
	return true
}

// finish ends the restart with an error code and message ("" when it succeeded).
func (r *restartRun) finish(code, msg string) {
	h, j := r.h, r.j
	if r.dead() {
		return
	}
	h.mu.Lock()
	j.res.ServiceState = r.s.state
	if code != "" {
		j.res.Error, j.res.Message = code, msg
	}
	j.res.Phase, j.res.Finished = contract.PhaseDone, true
	h.removeTaskLocked(j.task) // the guard removes its own task when it ends
	close(j.done)
	h.notifyLocked()
	h.mu.Unlock()
}

// renew gives the next phase a deadline of its own.
func (r *restartRun) renew() {
	r.cancel()
	r.deadline, r.cancel = context.WithTimeout(r.ctx, r.timeout)
}

func (r *restartRun) state(x *service) string {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	return x.state
}

// fail is the worker's catch: what was stopped is started again, then reported.
func (r *restartRun) fail(err error) {
	h, s := r.h, r.s
	if r.dead() {
		return
	}
	msg := fmt.Sprintf("The restart of %s failed: %v", s.name, err)
	var again error
	if r.state(s) == contract.StateStopped {
		if again = h.StartService(s.name); again == nil {
			_ = h.WaitServiceState(r.deadline, s.name, contract.StateRunning)
		}
	}
	for i := len(r.running) - 1; i >= 0 && again == nil; i-- {
		if r.state(r.running[i]) == contract.StateStopped {
			if again = h.StartService(r.running[i].name); again == nil {
				_ = h.WaitServiceState(r.deadline, r.running[i].name, contract.StateRunning)
			}
		}
	}
	if again != nil {
		msg += fmt.Sprintf(" Starting again what it had stopped failed too: %v. Start %s and its dependents.", again, s.name)
	} else {
		msg += " What it had stopped was started again."
	}
	r.finish(contract.RestartFailed, msg)
}

// startDependents is the last phase: the dependents it stopped, the last stopped
// first. One left Paused or Running (never reached) stays as it is. Every one that
// can start is started first; one still Stop Pending, and one that depends on it, is
// held and started once it has stopped (by the guard: the runner hands it over), so
// that none waits on a dependent that will not stop. A dependent that does not reach
// Running is reported once all were started.
func (r *restartRun) startDependents() {
	h, s, j := r.h, r.s, r.j
	late := ""
	startOne := func(d *service) bool {
		switch r.state(d) {
		case contract.StatePaused:
			return true
		case contract.StateStopped:
			if err := h.StartService(d.name); err != nil {
				r.fail(err)
				return false
			}
			h.updateRestart(j, func(res *contract.RestartInstanceResult) { res.Started = append(res.Started, d.name) })
		}
		if late == "" && h.WaitServiceState(r.deadline, d.name, contract.StateRunning) != nil {
			late = fmt.Sprintf("%s runs again, but its dependent %s did not reach Running within %d seconds (it is %s). Look at that service's event log.",
				s.name, d.name, r.secs, r.state(d))
		}
		return true
	}
	var held []*service
	for i := len(r.running) - 1; i >= 0; i-- {
		d := r.running[i]
		if r.dead() {
			return
		}
		h.mu.Lock()
		after := slices.ContainsFunc(d.dependsOn, func(x *service) bool { return slices.Contains(held, x) })
		h.mu.Unlock()
		if r.state(d) == contract.StateStopPending || after {
			held = append(held, d)
			continue
		}
		if !startOne(d) {
			return
		}
	}
	if len(held) > 0 {
		if r.runnerReturns() {
			return
		}
		for _, d := range held {
			if r.dead() {
				return
			}
			if r.state(d) == contract.StateStopPending {
				stopped, cancelStopped := context.WithTimeout(r.ctx, restartLateLimit)
				if h.WaitServiceState(stopped, d.name, contract.StateStopped) == nil {
					r.renew()
				}
				cancelStopped()
			}
			if !startOne(d) {
				return
			}
		}
	}
	if late != "" {
		r.finish(contract.RestartTimeout, late)
		return
	}
	r.finish("", "") // a restart that stopped at a dependent keeps its stop_timeout
}

// waitSettled is Wait-Settled: until the service is neither starting nor about to.
func (r *restartRun) waitSettled(x *service) {
	_ = r.h.waitFor(r.deadline, func() (bool, error) { return x.state != contract.StateStartPending && x.pending != pendingStart, nil })
}

// sendStop is Send-StopControl: sc.exe stop; 1062 (it stopped between the read and
// the control) is what the stop wanted; 1061 (a pending state) waits until it
// settles, within the deadline, and asks again once it is Running or Paused.
func (r *restartRun) sendStop(x *service) error {
	for {
		err := r.h.ControlStop(x.name)
		var ce *ControlError
		if err == nil || errors.As(err, &ce) && ce.Code == errServiceNotActive {
			return nil
		}
		if !errors.As(err, &ce) || ce.Code != errServiceCannotAcceptCtrl || r.deadline.Err() != nil {
			return fmt.Errorf("%w (it is %s)", err, r.state(x))
		}
		r.waitSettled(x)
		switch r.state(x) {
		case contract.StateStopped, contract.StateStopPending:
			return nil
		case contract.StateRunning, contract.StatePaused:
			select {
			case <-time.After(250 * time.Millisecond):
			case <-r.deadline.Done():
			}
		default:
			return fmt.Errorf("%w (it is %s)", err, r.state(x))
		}
	}
}

// stopDependents stops, one at a time, the dependents that are Running or Paused
// once the pending ones settled; false when the run ended (its process, or a stop
// control that failed).
func (r *restartRun) stopDependents() bool {
	h := r.h
	h.mu.Lock()
	all := allDependents(r.s)
	h.mu.Unlock()
	for _, d := range all {
		r.waitSettled(d)
	}
	h.mu.Lock()
	for _, d := range all {
		if d.state == contract.StateRunning || d.state == contract.StatePaused {
			r.running = append(r.running, d)
		}
	}
	h.mu.Unlock()
	for _, d := range r.running {
		if r.dead() {
			return false
		}
		if st := r.state(d); st == contract.StateRunning || st == contract.StatePaused {
			if err := r.sendStop(d); err != nil {
				r.fail(fmt.Errorf("sc.exe stop %s: %w", d.name, err))
				return false
			}
		}
		if h.WaitServiceState(r.deadline, d.name, contract.StateStopped) != nil {
			break
		}
		h.updateRestart(r.j, func(res *contract.RestartInstanceResult) { res.Stopped = append(res.Stopped, d.name) })
	}
	return true
}

// noDependentLeft reads every dependent again just before the Engine: one that is
// not Stopped ends the restart with stop_timeout, and the dependents it stopped
// start again. False when the run ended.
func (r *restartRun) noDependentLeft() bool {
	h, s := r.h, r.s
	h.mu.Lock()
	all := allDependents(s)
	h.mu.Unlock()
	var blocker *service
	blockerState := ""
	for _, d := range all {
		if r.state(d) == contract.StateStopPending {
			_ = h.WaitServiceState(r.deadline, d.name, contract.StateStopped)
		}
		if st := r.state(d); blocker == nil && st != contract.StateStopped {
			blocker, blockerState = d, st
		}
	}
	if r.dead() {
		return false
	}
	if blocker != nil {
		msg := fmt.Sprintf("%s was not stopped: its dependent %s is %s when the Engine was to stop (the restart allows %d seconds). Nothing more was stopped; the dependents this restart stopped are started again. "+
			"Look at why %s does not stop, then apply again.", s.name, blocker.name, blockerState, r.secs, blocker.name)
		h.updateRestart(r.j, func(res *contract.RestartInstanceResult) {
			res.Error, res.Message, res.Phase = contract.RestartStopTimeout, msg, contract.PhaseDependents
		})
		r.renew() // the dependents start again with a deadline of their own (the stop's is spent)
		r.startDependents()
		return false
	}
	return true
}

// stopEngine sends the Engine its stop once it settled and waits until it stopped.
// One that does not stop in time is reported with stop_timeout, and waited for
// (by the guard: the runner hands it over) up to the late limit, after which the
// dependents start again. False when the run ended.
func (r *restartRun) stopEngine() bool {
	h, s := r.h, r.s
	r.waitSettled(s) // an Engine starting cannot take the stop yet (1061)
	if st := r.state(s); st != contract.StateStopped && st != contract.StateStopPending {
		if err := r.sendStop(s); err != nil {
			r.fail(fmt.Errorf("sc.exe stop %s: %w", s.name, err))
			return false
		}
	}
	if err := h.WaitServiceState(r.deadline, s.name, contract.StateStopped); err != nil {
		st := r.state(s)
		msg := fmt.Sprintf("%s did not stop within %d seconds (it is %s). The host starts it again as soon as it has stopped; "+
			"look at what SQL Server is doing (long rollback or checkpoint).", s.name, r.secs, st)
		h.updateRestart(r.j, func(res *contract.RestartInstanceResult) {
			res.Error, res.Message, res.ServiceState = contract.RestartStopTimeout, msg, st
		})
		if r.runnerReturns() {
			return false
		}
		late, cancelLate := context.WithTimeout(r.ctx, restartLateLimit)
		err := h.WaitServiceState(late, s.name, contract.StateStopped)
		cancelLate()
		r.renew()
		if err != nil {
			// Still not stopped after hours: the dependents run again.
			h.updateRestart(r.j, func(res *contract.RestartInstanceResult) { res.Phase = contract.PhaseDependents })
			r.startDependents()
			return false
		}
	}
	h.updateRestart(r.j, func(res *contract.RestartInstanceResult) {
		res.Stopped = append(res.Stopped, s.name)
		res.Phase = contract.PhaseStarting
	})
	return true
}

// startEngine starts the Engine, up to contract.RestartStartAttempts times while a
// start leaves it Stopped, and waits until it runs. One that does not run ends the
// restart: start_failed with its exit code and error log, or timeout. False when
// the run ended.
func (r *restartRun) startEngine() bool {
	h, s := r.h, r.s
	var startErr error
	for attempt := 1; attempt <= contract.RestartStartAttempts; attempt++ {
		if r.dead() {
			return false
		}
		h.updateRestart(r.j, func(res *contract.RestartInstanceResult) { res.StartAttempts = attempt })
		if r.state(s) == contract.StateStopped {
			// A start that fails leaves the service Stopped: the wait below says so.
			_ = h.StartService(s.name)
		}
		startErr = h.WaitServiceState(r.deadline, s.name, contract.StateRunning)
		if startErr == nil || r.state(s) != contract.StateStopped || r.deadline.Err() != nil {
			break
		}
		if attempt < contract.RestartStartAttempts {
			select {
			case <-time.After(restartRetryPause):
			case <-r.deadline.Done():
			}
		}
	}
	if r.dead() {
		return false
	}
	if startErr != nil {
		h.mu.Lock()
		st := s.state
		code := s.exitCode
		h.mu.Unlock()
		if st == contract.StateStopped && r.ctx.Err() == nil {
			tail := r.inst.errorLogTail(10)
			h.updateRestart(r.j, func(res *contract.RestartInstanceResult) { res.Win32ExitCode, res.ErrorLogTail = code, tail })
			r.finish(contract.RestartStartFailed, fmt.Sprintf("%s stopped but did not start after %d attempts: it is Stopped (Windows error %d). "+
				"The last lines of its error log say why; fix the cause and start the service.", s.name, contract.RestartStartAttempts, code))
			return false
		}
		r.finish(contract.RestartTimeout, fmt.Sprintf("%s did not reach Running within %d seconds (it is %s). Look at the service's event log and the SQL Server error log.",
			s.name, r.secs, st))
		return false
	}
	return true
}

// engineRunsAgain records the Engine's new process; the dependents are next.
func (r *restartRun) engineRunsAgain() {
	h, j, s := r.h, r.j, r.s
	h.mu.Lock()
	j.res.Started = append(j.res.Started, s.name)
	now := h.now().UTC()
	j.res.FinishedAt = &now
	if s.pid != 0 {
		t := s.started.UTC()
		j.res.ProcessStartTime = &t
	}
	j.res.Phase = contract.PhaseDependents
	h.notifyLocked() // the Engine runs again: a gated restart says so (opRestartInstance)
	h.mu.Unlock()
}

// handOver marks the point where the runner returns and leaves the rest to the guard
// (restart_worker.ps1's `if ($Inline) { return }`): restart_instance answers then.
func (h *Host) handOver(j *restartJob) {
	h.mu.Lock()
	j.handedOver = true
	h.notifyLocked()
	h.mu.Unlock()
}

// errorLogTail returns the last n lines of the current error log.
func (i *Instance) errorLogTail(n int) []string {
	i.h.mu.Lock()
	defer i.h.mu.Unlock()
	from := max(len(i.errorlog)-n, 0)
	return slices.Clone(i.errorlog[from:])
}

// WaitRestartPrepared waits until instance has a restart prepared and not let go
// whose runner lives (a gated request waiting for its go line), or ctx ends.
func (h *Host) WaitRestartPrepared(ctx context.Context, instance string) error {
	key := strings.ToUpper(instance)
	return h.waitFor(ctx, func() (bool, error) {
		j := h.restarts[key]
		return j != nil && j.preparedLocked(), nil
	})
}

// WaitRestartLeaseFree waits until no restart holds the host's restart lease (none
// in progress, none prepared with a live runner), or ctx ends.
func (h *Host) WaitRestartLeaseFree(ctx context.Context) error {
	return h.waitFor(ctx, func() (bool, error) {
		now := h.now()
		for _, j := range h.restarts {
			if j.inProgressLocked(now) {
				return false, nil
			}
		}
		return true, nil
	})
}
