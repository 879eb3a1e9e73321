package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// The restart as restart_instance runs it on Windows (docs/design/restart.md): a
// worker process created through WMI (Win32_Process.Create), outside the job object
// of the WinRM shell, so it completes when the shell is deleted or the connection
// lost; the script that started it only waits for its outcome, and that wait is
// what ends with the shell. The worker records its progress in a marker
// (HKLM:\SOFTWARE\mssqlifi\Restart\<instance>), which restart_status reads. One
// restart per instance at a time: a request joins the one in progress.

// restartJob is one instance's last restart. res is guarded by Host.mu.
type restartJob struct {
	res  contract.RestartInstanceResult
	done chan struct{} // closed when res.Finished
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
	if j == nil {
		return contract.RestartInstanceResult{Stopped: []string{}, Started: []string{}}
	}
	return j.snapshotLocked()
}

func (j *restartJob) snapshotLocked() contract.RestartInstanceResult {
	r := j.res
	r.Stopped = slices.Clone(r.Stopped)
	r.Started = slices.Clone(r.Started)
	r.ErrorLogTail = slices.Clone(r.ErrorLogTail)
	return r
}

// startRestart starts a restart of inst, or joins the one in progress (or the
// finished one with the same id). It returns the job and whether it joined.
func (h *Host) startRestart(inst *Instance, id string, timeout time.Duration) (*restartJob, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	key := strings.ToUpper(inst.name)
	if j := h.restarts[key]; j != nil && (!j.res.Finished || j.res.RestartID == id) {
		return j, true
	}
	if id == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	j := &restartJob{done: make(chan struct{}), res: contract.RestartInstanceResult{
		Found: true, RestartID: id, Phase: contract.PhaseStopping, ServiceName: inst.engine.name,
		Stopped: []string{}, Started: []string{}, ServiceState: inst.engine.state, StartedAt: h.now().UTC(),
	}}
	h.restarts[key] = j
	go h.runRestart(j, inst, timeout)
	return j, false
}

// waitRestart waits until j finished or reported an error (a stop that ran past the
// deadline is reported before the worker is done), wait passed or ctx ended, and
// returns its state.
func (h *Host) waitRestart(ctx context.Context, j *restartJob, wait time.Duration) contract.RestartInstanceResult {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	_ = h.waitFor(wctx, func() (bool, error) { return j.res.Finished || j.res.Error != "", nil })
	h.mu.Lock()
	defer h.mu.Unlock()
	return j.snapshotLocked()
}

// update changes the job's state under the lock.
func (h *Host) updateRestart(j *restartJob, f func(r *contract.RestartInstanceResult)) {
	h.mu.Lock()
	f(&j.res)
	h.notifyLocked()
	h.mu.Unlock()
}

// runRestart is the worker: stop (bounded), start with retries, start the dependents
// that ran. It runs under the host's lifetime, not a shell's.
func (h *Host) runRestart(j *restartJob, inst *Instance, timeout time.Duration) {
	ctx := h.life
	s := inst.engine
	finish := func(code, msg string) {
		h.mu.Lock()
		j.res.ServiceState = s.state
		if code != "" {
			j.res.Error, j.res.Message = code, msg
		}
		j.res.Phase, j.res.Finished = contract.PhaseDone, true
		close(j.done)
		h.notifyLocked()
		h.mu.Unlock()
	}
	deadline, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	h.mu.Lock()
	wasRunning := runningDependents(s)
	seq0 := h.eventSeq
	err := h.stopLocked(s, true)
	h.advanceLocked()
	h.notifyLocked()
	h.mu.Unlock()
	h.syncListeners()
	if err != nil {
		finish(contract.RestartFailed, fmt.Sprintf("The restart of %s failed: %v", s.name, err))
		return
	}
	stopped := func() {
		h.mu.Lock()
		j.res.Stopped = j.res.Stopped[:0]
		for _, e := range h.events {
			if e.seq > seq0 && e.state == contract.StateStopped {
				j.res.Stopped = append(j.res.Stopped, e.service)
			}
		}
		h.mu.Unlock()
	}
	if err := h.WaitServiceState(deadline, s.name, contract.StateStopped); err != nil {
		state, _ := h.ServiceState(s.name)
		if state == contract.StateRunning {
			stopped()
			finish(contract.RestartStopTimeout, fmt.Sprintf("%s did not stop within %d seconds and is still Running; it was left running. "+
				"Look at what SQL Server is doing (long rollback or checkpoint) before restarting it.", s.name, int(timeout/time.Second)))
			return
		}
		msg := fmt.Sprintf("%s did not stop within %d seconds (it is %s). The host starts it again as soon as it has stopped; "+
			"look at what SQL Server is doing (long rollback or checkpoint).", s.name, int(timeout/time.Second), state)
		h.updateRestart(j, func(r *contract.RestartInstanceResult) {
			r.Error, r.Message, r.ServiceState = contract.RestartStopTimeout, msg, state
		})
		late, cancelLate := context.WithTimeout(ctx, restartLateLimit)
		err := h.WaitServiceState(late, s.name, contract.StateStopped)
		cancelLate()
		if err != nil {
			finish(contract.RestartStopTimeout, msg)
			return
		}
		cancel()
		deadline, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	stopped()
	h.updateRestart(j, func(r *contract.RestartInstanceResult) { r.Phase = contract.PhaseStarting })

	var startErr error
	for attempt := 1; attempt <= contract.RestartStartAttempts; attempt++ {
		h.updateRestart(j, func(r *contract.RestartInstanceResult) { r.StartAttempts = attempt })
		if state, _ := h.ServiceState(s.name); state == contract.StateStopped {
			if err := h.StartService(s.name); err != nil {
				startErr = err
			}
		}
		startErr = h.WaitServiceState(deadline, s.name, contract.StateRunning)
		state, _ := h.ServiceState(s.name)
		if startErr == nil || state != contract.StateStopped || deadline.Err() != nil {
			break
		}
		if attempt < contract.RestartStartAttempts {
			select {
			case <-time.After(restartRetryPause):
			case <-deadline.Done():
			}
		}
	}
	if startErr != nil {
		h.mu.Lock()
		state := s.state
		code := s.exitCode
		h.mu.Unlock()
		if state == contract.StateStopped && ctx.Err() == nil {
			tail := inst.errorLogTail(10)
			h.updateRestart(j, func(r *contract.RestartInstanceResult) { r.Win32ExitCode, r.ErrorLogTail = code, tail })
			finish(contract.RestartStartFailed, fmt.Sprintf("%s stopped but did not start after %d attempts: it is Stopped (Windows error %d). "+
				"The last lines of its error log say why; fix the cause and start the service.", s.name, contract.RestartStartAttempts, code))
			return
		}
		finish(contract.RestartTimeout, fmt.Sprintf("%s did not reach Running within %d seconds (it is %s). Look at the service's event log and the SQL Server error log.",
			s.name, int(timeout/time.Second), state))
		return
	}
	h.mu.Lock()
	j.res.Started = append(j.res.Started, s.name)
	now := h.now().UTC()
	j.res.FinishedAt = &now
	if s.pid != 0 {
		t := s.started.UTC()
		j.res.ProcessStartTime = &t
	}
	j.res.Phase = contract.PhaseDependents
	h.mu.Unlock()

	for _, d := range wasRunning {
		h.mu.Lock()
		running := d.state == contract.StateRunning || d.state == contract.StateStartPending || d.pending == pendingStart
		h.mu.Unlock()
		if !running {
			if err := h.StartService(d.name); err != nil {
				finish(contract.RestartFailed, fmt.Sprintf("%s runs again, but its dependent %s could not be started: %v", s.name, d.name, err))
				return
			}
			h.updateRestart(j, func(r *contract.RestartInstanceResult) { r.Started = append(r.Started, d.name) })
		}
		if err := h.WaitServiceState(deadline, d.name, contract.StateRunning); err != nil {
			state, _ := h.ServiceState(d.name)
			finish(contract.RestartTimeout, fmt.Sprintf("%s runs again, but its dependent %s did not reach Running within %d seconds (it is %s). Look at that service's event log.",
				s.name, d.name, int(timeout/time.Second), state))
			return
		}
	}
	finish("", "")
}

// errorLogTail returns the last n lines of the current error log.
func (i *Instance) errorLogTail(n int) []string {
	i.h.mu.Lock()
	defer i.h.mu.Unlock()
	from := max(len(i.errorlog)-n, 0)
	return slices.Clone(i.errorlog[from:])
}
