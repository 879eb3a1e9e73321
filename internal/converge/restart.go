package converge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/testhooks"
)

// The restart is the host's job (design/restart.md): restart_instance makes the
// plan's changes of the right's holders, then runs the restart, watched by a guard
// process outside the WinRM shell that completes it should the script's process
// end; or it joins the restart in progress. It answers when the restart finished
// (with the instance read back) or reported an error; when the answer is lost, or a
// joined restart goes on, the engine polls restart_status. A lost connection never
// stops a restart half-way; the engine only stops asking.

// restartPollSeconds is how long restart_instance and restart_status wait on the host
// for the outcome before they answer with the phase reached.
const restartPollSeconds = 5

// restartRetryPause is the pause before asking again after a transport error; it
// doubles with each failure in a row, up to maxRestartRetryPause.
const (
	restartRetryPause    = time.Second
	maxRestartRetryPause = 5 * time.Second
)

// retryPause is the pause after the n-th failure in a row (n from 1).
func retryPause(n int) time.Duration {
	d := restartRetryPause
	for i := 1; i < n && d < maxRestartRetryPause; i++ {
		d *= 2
	}
	return min(d, maxRestartRetryPause)
}

// gatedRestart runs restart (the Engine's restart and the wait for SQL Server,
// standalone or through the cluster) under the restart gate: a restart slot for
// slot's host (restartSlot: its failure, recorded by slotOut, is err), then the
// restart lock of each availability group of groups (lockGroups: its refusal, which
// changed nothing, is refused), and after a restart that went well the wait until
// each group's primary sees the replica HEALTHY again (awaitHealthy, its warning in
// out). The locks and the slot are given back before it returns.
//
// gate: the restart may take the limit's slot only for the outage (a gated
// restart, restartGate) when slot's host can; else the slot is taken first.
func (e *Engine) gatedRestart(ctx context.Context, t, slot Target, groups *Observation, reason string, slotOut *Outcome, out ledger,
	gate bool, restart func(g *restartGate) error) (refused, err error) {
	if gate {
		h, herr := e.host(slot)
		gate = herr == nil && gatedRestarter(h) != nil
	}
	g, err := e.openGate(ctx, slot, gate, slotOut)
	if err != nil {
		return nil, err
	}
	defer g.close()
	// One replica of a group restarts at a time, across runs and states.
	held, err := e.lockGroups(ctx, t, groups, reason)
	if err != nil {
		return err, nil
	}
	defer held.release()
	if err = restart(g); err == nil {
		e.awaitHealthy(ctx, t, held, out)
	}
	return nil, err
}

// slotRefused reports whether err is a gated restart's refusal by its gate: no
// restart slot before the deadline (the host then changed nothing).
func slotRefused(err error) bool {
	var ce *Error
	return errors.As(err, &ce) && ce.Kind == KindRestartSlot
}

// maxRestartSends bounds how often restart_instance is sent when the host has no
// record of the request (it was lost on the way): a failure that persists ends the
// apply within seconds.
const maxRestartSends = 3

// ScriptFailure is implemented by host errors (remote.Error) that can say whether
// the host ran the script and it refused (true), as opposed to a transport failure
// after which the request may or may not have reached the host.
type ScriptFailure interface {
	ScriptFailed() bool
}

// TransientFailure is implemented by host errors (remote.Error) that can say
// whether they are the network's failure (a refused or reset connection, a timeout,
// a name that does not resolve, an HTTP 503 or 404 while WinRM restarts) rather
// than the host's answer: a restart in progress, or its read-back, is followed
// through those until the operation's deadline.
type TransientFailure interface {
	Transient() bool
}

// transient reports whether err is such a failure.
func transient(err error) bool {
	var tf TransientFailure
	return errors.As(err, &tf) && tf.Transient()
}

// hostAnswered reports whether err is the host's own refusal.
func hostAnswered(err error) bool {
	var sf ScriptFailure
	return errors.As(err, &sf) && sf.ScriptFailed()
}

// ScriptCoder is implemented by host errors (remote.Error) that carry the script's
// error code (contract.ScriptError.Error).
type ScriptCoder interface {
	ScriptCode() string
}

// codeLSAError is the scripts' error code for a change of the right's holders that
// failed (set_right.ps1, right_change.ps1).
const codeLSAError = "lsa_error"

// otherRestart reports whether a restart_instance error is the host's restart lease:
// another instance of the host is restarting, and nothing was changed.
func otherRestart(err error) bool {
	var sc ScriptCoder
	return hostAnswered(err) && errors.As(err, &sc) && sc.ScriptCode() == contract.CodeRestartInProgress
}

// changeFailed reports whether a restart_instance error is one of its changes that
// failed, before anything was stopped; i is then the index of the step whose SID
// the host's message names (0 when it names none).
func changeFailed(err error, steps []ifi.Step) (i int, ok bool) {
	var sc ScriptCoder
	if len(steps) == 0 || !hostAnswered(err) || !errors.As(err, &sc) || sc.ScriptCode() != codeLSAError {
		return 0, false
	}
	for i := range steps {
		if strings.Contains(err.Error(), steps[i].SID) {
			return i, true
		}
	}
	return 0, true
}

// RestartOutcomeError is a restart that ran on the host and failed: the host's
// account of it.
type RestartOutcomeError struct {
	Result contract.RestartInstanceResult
}

func (e *RestartOutcomeError) Error() string {
	r := e.Result
	msg := r.Message
	if msg == "" {
		msg = "the restart failed (" + r.Error + ")"
	}
	if len(r.ErrorLogTail) > 0 {
		msg += " Last lines of the SQL Server error log: " + strings.Join(r.ErrorLogTail, " | ")
	}
	return msg
}

// RestartUnfinishedError is a restart the engine stopped following before it ended:
// the deadline passed or the host could not be asked. It goes on on the host.
type RestartUnfinishedError struct {
	Phase string // the last phase reported, "" if none was
	Err   error  // why the engine stopped asking
	// NotReceived: the host has no record of the request after every send; nothing
	// was stopped.
	NotReceived bool
}

func (e *RestartUnfinishedError) Error() string {
	if e.NotReceived {
		return fmt.Sprintf("the restart request did not reach the host after %d attempts, so nothing was stopped: %v", maxRestartSends, e.Err)
	}
	phase := e.Phase
	if phase == "" {
		phase = "unknown"
	}
	return fmt.Sprintf("the restart was not seen to finish (last phase reported: %s); it goes on on the host, which completes it "+
		"whatever happens to this connection: %v", phase, e.Err)
}

func (e *RestartUnfinishedError) Unwrap() error { return e.Err }

// goLineSeconds is how long a prepared gated restart waits on the host for its go
// line (go_seconds): seconds, not the restart's timeout, since a prepared request
// holds the host's restart lease while it waits, and a provider killed between the
// prepared line and the go line (which sends neither the go line nor the shell's
// deletion) would otherwise keep every restart of the host refused until then.
// (Divided, with goSlotMargin, by testhooks.TimeDivisor, which is 1 outside the
// provider's acceptance tests.)
var goLineSeconds = 30 / testhooks.TimeDivisor()

// goSlotMargin is what of the go line's wait the provider keeps for sending the go
// line once it holds the slot: it waits for the slot at most the rest.
var goSlotMargin = 10 * time.Second / time.Duration(testhooks.TimeDivisor())

// errSlotLate: the limit's slot did not come within the go line's wait; the
// prepared request is let end (nothing changed) and sent again ungated.
var errSlotLate = errors.New("no restart slot within the go line's wait")

// slotWaitWhilePrepared is how long a prepared request (go_seconds goSeconds) waits
// for the limit's slot: the go line's wait less goSlotMargin, at least a second.
func (e *Engine) slotWaitWhilePrepared(goSeconds int) time.Duration {
	if e.goSlotWait > 0 {
		return e.goSlotWait
	}
	return max(time.Duration(goSeconds)*time.Second-goSlotMargin, time.Second)
}

// boundedGate is a restart's gate whose Prepared waits for the limit's slot at most
// wait: errSlotLate after that, while the restart's own deadline is still ahead.
type boundedGate struct {
	*restartGate
	wait time.Duration
}

func (b *boundedGate) Prepared(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, b.wait)
	defer cancel()
	if err := b.takeSlot(wctx); err != nil {
		if ctx.Err() == nil {
			return errSlotLate
		}
		return err
	}
	return nil
}

func newRestartID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// waitSeconds is the host-side wait for one request: restartPollSeconds, less when
// the deadline is nearer (at least 1 second).
func (e *Engine) waitSeconds(ctx context.Context) int {
	dl, ok := ctx.Deadline()
	if !ok {
		return restartPollSeconds
	}
	left := int(dl.Sub(e.clock().Now()) / time.Second)
	return max(min(left-2, restartPollSeconds), 1)
}

// restart makes the steps and restarts the Engine (and its running dependents)
// within the time the context leaves, keeping a margin for reading back. It returns
// as soon as the host reports the restart finished or failed, with the instance as
// restart_instance read it back after the restart (nil when the outcome came from
// restart_status).
//
// With a lazy gate (restartGate) and a host that can, each request is a gated
// restart: the limit's slot is taken when the host is prepared.
func (e *Engine) restart(ctx context.Context, h Host, t Target, service, reason string, steps []ifi.Step, out *Outcome, g *restartGate) (*contract.ReadInstanceResult, error) {
	id := newRestartID()
	changes := make([]contract.RightChange, 0, len(steps))
	for _, s := range steps {
		changes = append(changes, contract.RightChange{Right: s.Right, SID: s.SID, Grant: s.Grant})
	}
	params := func() contract.RestartInstanceParams {
		return contract.RestartInstanceParams{Instance: t.Instance, TimeoutSeconds: e.restartSeconds(ctx), RestartID: id,
			WaitSeconds: e.waitSeconds(ctx), Changes: changes, ReadBack: true}
	}
	gr := gatedRestarter(h)
	if g == nil || !g.lazy {
		gr = nil
	}
	send := func(p contract.RestartInstanceParams) (*contract.RestartInstanceResult, error) {
		if gr == nil {
			return h.RestartInstance(ctx, p)
		}
		gp := p
		gp.AwaitGo, gp.GoSeconds = true, min(goLineSeconds, p.TimeoutSeconds)
		res, err := gr.RestartInstanceGated(ctx, gp, &boundedGate{restartGate: g, wait: e.slotWaitWhilePrepared(gp.GoSeconds)})
		var np *contract.GateNotPassedError
		if !errors.As(err, &np) && !errors.Is(err, errSlotLate) {
			return res, err
		}
		// Nothing changed on the host (no go line was sent): the rest of this restart
		// goes as an ungated one, its slot taken first, as the host may not let the
		// gate's answers through, or the slot did not come within the go line's wait
		// (the prepared request has ended, changing nothing, and holds the host no
		// longer).
		e.info(ctx, "the gated restart did not pass its gate: sending it ungated", map[string]any{
			"host": t.Host, "instance": t.Instance, "restart_id": id, "error": err.Error()})
		gr = nil
		if serr := g.takeSlot(ctx); serr != nil {
			return nil, serr
		}
		return h.RestartInstance(ctx, p)
	}
	first := params()
	e.info(ctx, "restarting SQL Server", map[string]any{"host": t.Host, "instance": t.Instance, "timeout_seconds": first.TimeoutSeconds,
		"restart_id": id, "changes": fmt.Sprintf("%+v", steps)})
	changedBefore := out.Changed
	fail := func(err error, res *contract.RestartInstanceResult) (*contract.ReadInstanceResult, error) {
		if otherRestart(err) {
			// Refused before anything changed (the lease is looked at first).
			out.Changed = changedBefore
			return nil, out.fail(&Error{Kind: KindRestartInProgress, Target: t, Err: err})
		}
		if slotRefused(err) || scriptCode(err) == contract.CodeRestartNotStarted {
			// A gated restart that did not go (no slot before the deadline, or no go
			// line in time): nothing was changed or stopped.
			out.Changed = changedBefore
			var ce *Error
			if errors.As(err, &ce) && ce.Kind == KindRestartSlot {
				return nil, out.fail(ce)
			}
		}
		if scriptCode(err) == contract.CodeChangedNotRestarted {
			// The host made the changes, then its go was refused (nothing stopped): the
			// state records them as made (issue 37).
			out.Changed = true
		}
		if i, ok := changeFailed(err, steps); ok {
			// Nothing was stopped; the changes before the failed one were made.
			out.Changed = changedBefore || i > 0
			return nil, out.fail(&Error{Kind: KindSetRightFailed, Target: t, Err: err, Step: &steps[i]})
		}
		return nil, out.fail(&Error{Kind: KindRestartFailed, Target: t, Err: err, ServiceName: service, RestartReason: reason, Restart: res})
	}
	out.Changed = true // a restart request may have changed the holders and stopped services
	res, err := send(first)
	if err == nil {
		eventLogWarning(out, t, "", res.EventLogWarning)
	}
	if err != nil && (hostAnswered(err) || slotRefused(err)) {
		return fail(err, nil)
	}
	phase := ""
	sent := err == nil // the host has the request
	sends, lastSendErr := 1, err
	failures := 0 // transport failures in a row
	for polls := 0; ; polls++ {
		if err == nil {
			failures = 0
			if res.Found && (res.RestartID == id || res.Joined || sent) {
				if res.Joined && res.RestartID != id {
					e.info(ctx, "joined the restart in progress", map[string]any{"host": t.Host, "instance": t.Instance, "restart_id": res.RestartID})
					id = res.RestartID
				}
				sent = true
				phase = res.Phase
				if res.Error != "" {
					return fail(&RestartOutcomeError{Result: *res}, res)
				}
				if res.Finished {
					break
				}
			}
			e.debug(ctx, "restart in progress", map[string]any{"host": t.Host, "instance": t.Instance, "phase": res.Phase, "polls": polls})
		} else {
			e.info(ctx, "asking the host about the restart after an error", map[string]any{"host": t.Host, "instance": t.Instance, "error": err.Error(), "polls": polls})
			if ctx.Err() != nil {
				return fail(&RestartUnfinishedError{Phase: phase, Err: err}, nil)
			}
			failures++
			if serr := e.clock().Sleep(ctx, retryPause(failures)); serr != nil {
				return fail(&RestartUnfinishedError{Phase: phase, Err: err}, nil)
			}
		}
		if ctx.Err() != nil {
			return fail(&RestartUnfinishedError{Phase: phase, Err: ctx.Err()}, nil)
		}
		if !sent && err == nil {
			// The host has no record of this request (the first one was lost): send it
			// again; its id makes it start at most one restart.
			if sends++; sends > maxRestartSends {
				return fail(&RestartUnfinishedError{Phase: phase, Err: lastSendErr, NotReceived: true}, nil)
			}
			res, err = send(params())
			if err != nil && (hostAnswered(err) || slotRefused(err)) {
				return fail(err, nil)
			}
			sent = err == nil
			if err != nil {
				lastSendErr = err
			}
			continue
		}
		var serr error
		res, serr = h.RestartStatus(ctx, contract.RestartStatusParams{Instance: t.Instance, WaitSeconds: e.waitSeconds(ctx)})
		if serr != nil {
			if !transient(serr) {
				// The host's own answer (401, a script's error): waiting does not heal it.
				return fail(&RestartUnfinishedError{Phase: phase, Err: serr}, nil)
			}
			// The network's failure (WinRM restarting, a link down): ask again until
			// the deadline, as the restart goes on on the host.
			err = serr
			continue
		}
		err = nil
		if !res.Found || (res.RestartID != id && !sent) {
			sent = false
		}
	}
	out.Restarted = true
	return res.Instance, nil
}
