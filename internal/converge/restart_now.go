package converge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// A restart on its own (the mssqlifi_restart action): the Engine restarts so that
// the rights the host already holds take effect, in a maintenance window, through
// the same gate as an apply's restart (gatedRestart: the host's slot and
// max_parallel_restarts, the availability groups' restart lock, the wait until the
// group is healthy again), the same host-side restart and guard (restart), and the
// same refusals (ifi.PlanRestartNow, on restartSafety's rules).

// RestartRequest asks for a restart of one instance on its own.
type RestartRequest struct {
	Target Target
	// Force restarts even when no change is pending.
	Force bool
	// Progress receives what the restart is doing and waiting for, as it happens
	// (nil: nobody listens). It is called from the restart's goroutines, one call
	// at a time.
	Progress func(message string)
}

// RestartResult is what a restart on its own did.
type RestartResult struct {
	// Outcome: Restarted says whether the Engine restarted; Assessment is the
	// instance as read back after it (as read before, when none was needed).
	Outcome *Outcome
	// NotNeeded says why no restart was needed ("" when one was made or refused).
	NotNeeded string
	// Reason is why the restart was made.
	Reason string
}

// RestartNow restarts r.Target's Engine when a change of its rights is pending (or
// r.Force), through the engine's restart path; a restart not needed changes
// nothing and says so. A run that holds restarts (HoldRestarts) refuses it. Errors
// are *Error: a refusal (KindRefused) changed nothing.
func (s *Session) RestartNow(ctx context.Context, r RestartRequest) (*RestartResult, error) {
	if s.HoldRestarts {
		// The run restarts nothing (allow_restarts = false), whoever asks.
		return &RestartResult{Outcome: &Outcome{Action: ifi.ActionRefuse}},
			&Error{Kind: KindRefused, Target: r.Target, Refusal: ifi.RestartNowHeld(r.Target.Host, r.Target.Instance)}
	}
	if r.Progress != nil {
		ctx = withProgress(ctx, r.Target, r.Progress)
	}
	return s.Engine.RestartNow(ctx, r.Target, r.Force)
}

// RestartNow is Session.RestartNow on the engine.
func (e *Engine) RestartNow(ctx context.Context, t Target, force bool) (*RestartResult, error) {
	out := &Outcome{}
	res := &RestartResult{Outcome: out}
	e.info(ctx, "reading the instance before the restart", map[string]any{"host": t.Host, "instance": t.Instance})
	obs, err := e.foundWith(ctx, t, nil)
	if err != nil {
		return res, err
	}
	startedBefore := obs.Instance.ProcessStartTime
	a, p, notNeeded, err := ifi.PlanRestartNow(obs.Observed, force)
	if err != nil {
		out.Action = ifi.ActionRefuse
		return res, decided(t, ifi.Desired{}, out.Action, err, nil)
	}
	out.Assessment, out.Read, out.ReadAt = a, obs.Instance, obs.ReadAt
	out.Verification, out.SQLPort = obs.Observed.Verification, obs.Instance.TCPPort
	out.Warnings = append(slices.Clone(obs.Warnings), p.Warnings...)
	if !p.Restart {
		out.Action = ifi.ActionNone
		res.NotNeeded = notNeeded
		e.info(ctx, "no restart needed", map[string]any{"host": t.Host, "instance": t.Instance})
		return res, nil
	}
	out.Action, res.Reason = ifi.ActionRestart, p.RestartReason
	e.info(ctx, "restart needed: "+p.RestartReason, map[string]any{"host": t.Host, "instance": t.Instance})
	h, err := e.host(t)
	if err != nil {
		return res, err
	}
	out.Assessment = nil // until the read-back says what is true
	var back *contract.ReadInstanceResult
	refused, err := e.gatedRestart(ctx, t, t, obs, p.RestartReason, out, out, true, func(g *restartGate) error {
		requested := e.clock().Now()
		g.ready = e.sqlReady(obs.SQLTarget)
		var err error
		back, err = e.restart(ctx, h, t, a.ServiceName, p.RestartReason, nil, out, g)
		if err == nil {
			err = e.readyAfter(ctx, g, t, obs.SQLTarget, out)
		}
		if err == nil {
			out.LastRestart = ifi.MeasureRestart(requested, e.clock().Now())
		}
		return err
	})
	if refused != nil {
		return res, restartNowRefused(refused)
	}
	if err != nil {
		return e.restartRecovered(ctx, t, out, res, err)
	}
	readAt := e.clock().Now()
	obs, a, err = e.readBack(ctx, t, ifi.RestartNowDesired, back, out)
	if err != nil {
		return res, err
	}
	a = e.learn(ctx, t, ifi.RestartNowDesired, obs, a, startedBefore, out)
	out.Assessment, out.Read, out.ReadAt = a, obs.Instance, readAt
	out.Verification, out.SQLPort = obs.Observed.Verification, obs.Instance.TCPPort
	out.Warnings = append(out.Warnings, obs.Warnings...)
	e.info(ctx, "restart done", map[string]any{"host": t.Host, "instance": t.Instance})
	return res, checked(out.Restarted, t, "", a, out)
}

// restartRecovered is the end of a restart on its own that failed: recover reads
// the instance back (the Engine may run again, the restart completed by the host's
// guard), and says whether the failure was the connection's only.
func (e *Engine) restartRecovered(ctx context.Context, t Target, out *Outcome, res *RestartResult, err error) (*RestartResult, error) {
	rout, rerr := e.recover(ctx, t, ifi.RestartNowDesired, true, out, err)
	res.Outcome = rout
	return res, rerr
}

// restartNowRefused is the gate's refusal (the group's restart lock) as a restart
// on its own says it: without the resource's restart argument as a way out.
func restartNowRefused(err error) error {
	var ce *Error
	if !errors.As(err, &ce) || ce.Refusal == nil {
		return err
	}
	c := *ce
	c.Refusal = ifi.RestartNowRefusal(ce.Refusal)
	return &c
}

// progressKey carries a restart's progress listener in its context (withProgress).
type progressKey struct{}

type progressListener struct {
	mu   sync.Mutex // one send at a time
	t    Target
	send func(string)
	// phase: the last phase of the host's restart said (debug's "restart in
	// progress" says every poll; the listener hears each phase once).
	phase string
}

// withProgress has the engine's log lines of t's operation under ctx also sent to
// send, as sentences for the user (progress).
func withProgress(ctx context.Context, t Target, send func(string)) context.Context {
	return context.WithValue(ctx, progressKey{}, &progressListener{t: t, send: send})
}

// progress sends a log line (info: every one; debug: a restart's new phase) to the
// listener ctx carries, if any.
func progress(ctx context.Context, debug bool, msg string, fields map[string]any) {
	l, _ := ctx.Value(progressKey{}).(*progressListener)
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if debug {
		phase, _ := fields["phase"].(string)
		if msg != "restart in progress" || phase == "" || phase == l.phase {
			return
		}
		l.phase = phase
		l.send(fmt.Sprintf("%s: restart in progress, phase %s", l.t, phase))
		return
	}
	var extra []string
	for _, k := range []string{"phase", "waited", "max_parallel_restarts", "group", "primary", "error"} {
		if v, ok := fields[k]; ok {
			extra = append(extra, fmt.Sprintf("%s %v", k, v))
		}
	}
	line := fmt.Sprintf("%s: %s", l.t, msg)
	if len(extra) > 0 {
		line += " (" + strings.Join(extra, ", ") + ")"
	}
	l.send(line)
}
