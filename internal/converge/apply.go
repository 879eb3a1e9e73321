package converge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/testhooks"
)

// Apply converges t to d: observe, decide, change the right's holders, restart the
// Engine when the plan says so, wait for SQL Server, read back and check.
//
// The Outcome is never nil. Its Assessment is what to store: nil when nothing is
// known to have changed (keep the previous state). After a failure once something
// changed, the instance is read back and the Outcome says what is true now (or
// carries a WarnStateStale warning when it could not be read). Errors are *Error.
func (e *Engine) Apply(ctx context.Context, t Target, d ifi.Desired) (*Outcome, error) {
	out := &Outcome{IneffectiveRestart: d.IneffectiveRestart}
	readAt := e.clock().Now()
	known := e.freshRead(t)
	if known != nil {
		readAt = t.ReadAt
		e.debug(ctx, "using the plan's read_instance", map[string]any{"host": t.Host, "instance": t.Instance,
			"age": e.clock().Now().Sub(t.ReadAt).String()})
	}
	obs, err := e.foundWith(ctx, t, known)
	if err == nil && known != nil && !obs.confirmed {
		// The plan's read stands for the host only while SQL Server answers from the
		// Engine process it reports: one restarted since (or no answer, which cannot
		// tell) leaves it the plan's, not the host's, so the apply reads the host.
		e.debug(ctx, "the plan's read_instance is not confirmed by SQL Server: reading the host", map[string]any{
			"host": t.Host, "instance": t.Instance})
		known, readAt = nil, e.clock().Now()
		obs, err = e.foundWith(ctx, t, nil)
	}
	if err != nil {
		return out, err
	}
	if known == nil && !obs.ReadAt.IsZero() {
		readAt = obs.ReadAt // the run's shared read of the host, sent before this apply
	}
	startedBefore := obs.Instance.ProcessStartTime
	a, p, err := ifi.PlanApply(d, obs.Observed)
	out.Action = ifi.ActionOf(a, p, err)
	if err := decided(t, d, out.Action, err, func() ifi.Prediction {
		now, _ := ifi.Predict(d, obs.Observed, false)
		return now
	}); err != nil {
		return out, err
	}
	e.info(ctx, "applying IFI", map[string]any{
		"host": t.Host, "instance": t.Instance, "steps": fmt.Sprintf("%+v", p.Steps), "restart": p.Restart, "reason": p.RestartReason,
	})
	h, err := e.host(t)
	if err != nil {
		return out, err
	}
	out.Warnings = slices.Clone(p.Warnings) // the plan's own, kept after a failure too

	// One powershell.exe for the change: the steps and the read-back in set_right, or
	// the steps, the restart and the read-back in restart_instance.
	var back *contract.ReadInstanceResult
	changeAt := e.clock().Now() // the read-back of the change is no older
	if p.Restart {
		refused, err := e.gatedRestart(ctx, t, t, obs, p.RestartReason, out, out, true, func(g *restartGate) error {
			requested := e.clock().Now()
			g.ready = e.sqlReady(obs.SQLTarget)
			var err error
			back, err = e.restart(ctx, h, t, a.ServiceName, p.RestartReason, p.Steps, out, g)
			if err == nil {
				err = e.readyAfter(ctx, g, t, obs.SQLTarget, out)
			}
			if err == nil {
				out.LastRestart = ifi.MeasureRestart(requested, e.clock().Now())
			}
			return err
		})
		if refused != nil {
			return out, refused
		}
		if err != nil {
			return e.recover(ctx, t, d, p.Restart, out, err)
		}
	} else {
		run := e.setRights(ctx, h, t, "", p.Steps, true, out)
		if run.err != nil {
			return e.recover(ctx, t, d, p.Restart, out, run.err)
		}
		back = run.back
	}

	if len(p.Steps) > 0 || out.Restarted {
		readAt = e.clock().Now()
		if back != nil {
			readAt = changeAt
		}
		obs, a, err = e.readBack(ctx, t, d, back, out)
		if err != nil {
			return out, err
		}
	}
	if out.Restarted {
		a = e.learn(ctx, t, d, obs, a, startedBefore, out)
	}
	out.Assessment = a
	out.SQLPort = obs.Instance.TCPPort
	out.Read, out.ReadAt = obs.Instance, readAt
	out.Verification = obs.Observed.Verification
	out.Enabled, out.LockPages = d.Enabled, d.LockPages
	out.Warnings = append(append(slices.Clone(obs.Warnings), a.Warnings...), out.Warnings...)
	if err := checked(out.Restarted, t, "", a, out); err != nil {
		return out, err
	}
	return out, nil
}

// checked is the last step of an apply: after a restart (restarted), SQL Server of
// t (node: the failover cluster node it runs on, "" for none), assessed as a, must
// report IFI as the right and start account should give (ifi.Check); else the
// error is KindCheckFailed, recorded by out.fail. Without a restart, or without an
// assessment of the running Engine (a nil), there is nothing to check.
func checked(restarted bool, t Target, node string, a *ifi.Assessment, out ledger) error {
	if !restarted || a == nil {
		return nil
	}
	if err := ifi.Check(a); err != nil {
		return out.fail(&Error{Kind: KindCheckFailed, Target: t, Err: err, Node: node})
	}
	return nil
}

// decided is what an apply's decision means (act, from ifi.PlanApply or
// ifi.PlanCluster, which returned err): a plan that no longer does what the plan
// phase said (d.Planned; now predicts what it would do now) is refused, and so is a
// refusal; any other error is KindDecideFailed; nil goes on.
func decided(t Target, d ifi.Desired, act ifi.Action, err error, now func() ifi.Prediction) error {
	if d.Planned != "" && d.Planned != ifi.ActionVerify && act != d.Planned && act != ifi.ActionRefuse {
		return &Error{Kind: KindRefused, Target: t, Err: err, Refusal: ifi.PlanChanged(t.Host, t.Instance, d.Planned, now())}
	}
	if err != nil {
		var ref *ifi.Refusal
		if errors.As(err, &ref) {
			return &Error{Kind: KindRefused, Target: t, Err: err, Refusal: ref}
		}
		return &Error{Kind: KindDecideFailed, Target: t, Err: err}
	}
	return nil
}

// learn is the end of an apply that restarted the Engine: when SQL Server reports
// IFI on although the right's holders the host reports do not reach the start
// account, and the Engine's process did start anew, the restart taught that the
// start account gets the right through something the host cannot see (a domain or
// nested group in Administrators). The lesson goes into out (for the private state)
// and a is assessed again with it, so that no further restart is planned for it.
// A restart that went as expected forgets any earlier lesson.
func (e *Engine) learn(ctx context.Context, t Target, d ifi.Desired, obs *Observation, a *ifi.Assessment,
	startedBefore *time.Time, out *Outcome) *ifi.Assessment {
	out.IneffectiveRestart = nil
	m := ifi.LearnIneffectiveRestart(a)
	after := obs.Instance.ProcessStartTime
	if m == nil || after == nil || (startedBefore != nil && !after.After(*startedBefore)) {
		return a // as expected, or the Engine did not start anew: ifi.Check says so
	}
	d.IneffectiveRestart = m
	la, err := ifi.Assess(d, obs.Observed)
	if err != nil || la.IneffectiveRestart == nil {
		return a
	}
	e.info(ctx, "the restart left IFI on: the start account gets the right through membership the host does not report", map[string]any{
		"host": t.Host, "instance": t.Instance, "start_account_sid": m.StartAccountSID, "process_start": after.String(),
	})
	out.IneffectiveRestart = m
	return la
}

// Read observes t and assesses it against d. A missing instance is a KindNotFound
// error; the Outcome is then empty.
func (e *Engine) Read(ctx context.Context, t Target, d ifi.Desired) (*Outcome, error) {
	readAt := e.clock().Now()
	obs, err := e.found(ctx, t)
	if err != nil {
		return &Outcome{}, err
	}
	return e.assessed(ctx, t, d, obs, readAt)
}

// assessed is the Outcome of a read: obs, made at readAt (or when its read was
// sent, the run's shared read of the host), assessed against d.
func (e *Engine) assessed(ctx context.Context, t Target, d ifi.Desired, obs *Observation, readAt time.Time) (*Outcome, error) {
	if !obs.ReadAt.IsZero() {
		readAt = obs.ReadAt
	}
	a, err := ifi.Assess(d, obs.Observed)
	if err != nil {
		return &Outcome{}, &Error{Kind: KindAssessFailed, Target: t, Err: err}
	}
	e.debug(ctx, "read IFI", map[string]any{
		"host": t.Host, "instance": t.Instance, "converged": a.Converged, "privilege_granted": a.PrivilegeGranted,
		"verified_by": string(a.VerifiedBy),
	})
	return &Outcome{
		Assessment:         a,
		IneffectiveRestart: d.IneffectiveRestart,
		Enabled:            EnabledInState(d, a),
		LockPages:          clonePtr(d.LockPages),
		Warnings:           append(slices.Clone(obs.Warnings), a.Warnings...),
		SQLPort:            obs.Instance.TCPPort,
		Read:               obs.Instance,
		ReadAt:             readAt,
		Verification:       obs.Observed.Verification,
	}, nil
}

// ReadRiding is Read, with a refused connection asked again within ctx's deadline,
// as every read of an apply is: for the plan of a create, which has nothing else to
// predict from (the resource's read timeout), so that a blip of the host's WinRM
// makes the plan wait rather than turn its prediction unknown, and for an apply's
// look before Apply (is the instance clustered?). A failure that persists is the
// error (KindObserveFailed, naming the host and what to check).
func (e *Engine) ReadRiding(ctx context.Context, t Target, d ifi.Desired) (*Outcome, error) {
	readAt := e.clock().Now()
	obs, err := e.foundWith(ctx, t, nil)
	if err != nil {
		return &Outcome{}, err
	}
	return e.assessed(ctx, t, d, obs, readAt)
}

// SetupReference is what SQL Server Setup does when asked to grant IFI: the right to
// the service SID, no restart. Describe assesses instances against it.
var SetupReference = ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartNever}

// wishWarnings are the decision's warnings about a wish, which Describe leaves out.
var wishWarnings = []string{ifi.WarnRestartPending, ifi.WarnStaysOn, ifi.WarnSIDTypeNone}

// Describe reads t without changing anything and assesses it against
// SetupReference with grantee ("" means the service SID), so PrivilegeGranted says
// whether that grantee holds the right. Its warnings describe the instance only,
// not a wish.
func (e *Engine) Describe(ctx context.Context, t Target, grantee ifi.Grantee) (*Outcome, error) {
	ref := SetupReference
	if grantee != "" {
		ref.Grantee = grantee
	}
	out, err := e.Read(ctx, t, ref)
	if err != nil {
		return out, err
	}
	out.Warnings = slices.DeleteFunc(out.Warnings, func(w ifi.Warning) bool { return slices.Contains(wishWarnings, w.Code) })
	return out, nil
}

// Destroy removes what an apply granted: it revokes the grantee's direct grant and
// never restarts. A missing instance is a KindNotFound error (nothing to revoke).
// Warnings say what stays in effect. It decides from t.Read (the refresh's read of
// the same run) while that is fresh, as Apply does, else it reads the host.
func (e *Engine) Destroy(ctx context.Context, t Target, d ifi.Desired) (*Outcome, error) {
	out := &Outcome{}
	obs, err := e.foundWith(ctx, t, e.freshRead(t))
	if err != nil {
		return out, err
	}
	a, p, ws, err := destroyPlan(t, "", d, obs.Observed)
	if err != nil {
		return out, err
	}
	h, err := e.host(t)
	if err != nil {
		return out, err
	}
	if run := e.setRights(ctx, h, t, "", p.Steps, false, out); run.err != nil {
		return out, run.err
	}
	out.Assessment = a
	out.Read, out.Verification = obs.Instance, obs.Observed.Verification // what the host had before
	out.Warnings = append(ws, out.Warnings...)
	return out, nil
}

// destroyPlan is the destroy's decision on one host, t's (node: the failover
// cluster node it is, "" for none), as observed there (o): what to revoke
// (ifi.PlanDestroy), which the destroy's steps (setRights) then make.
func destroyPlan(t Target, node string, d ifi.Desired, o ifi.Observed) (*ifi.Assessment, *ifi.Plan, []ifi.Warning, error) {
	a, p, ws, err := ifi.PlanDestroy(d, o)
	if err != nil {
		return nil, nil, nil, &Error{Kind: KindDecideFailed, Target: t, Err: err, Node: node}
	}
	return a, p, ws, nil
}

// rightsRun is what setRights did on one host.
type rightsRun struct {
	done    []ifi.Step // the steps the host confirmed, in order
	changed bool       // one of done changed the holders
	// back is the instance as the last step read it back (nil when not asked, or
	// the host did not send it).
	back *contract.ReadInstanceResult
	err  error // the failure (the later steps were not made), recorded by out.fail
}

// setRights runs steps in order on h, the host of t (node: the failover cluster
// node it is, "" for none), stopping at the first failure; out records whether any
// changed the host. With readBack, the last step reads the instance back in its own
// process. Several steps (both rights without a restart) go as one set_right
// (setRightsAtOnce): one powershell.exe.
func (e *Engine) setRights(ctx context.Context, h Host, t Target, node string, steps []ifi.Step, readBack bool, out ledger) rightsRun {
	if len(steps) > 1 && len(steps) <= contract.MaxRestartChanges {
		return e.setRightsAtOnce(ctx, h, t, node, steps, readBack, out)
	}
	var run rightsRun
	for i := range steps {
		s := steps[i]
		fields := map[string]any{"host": t.Host, "instance": t.Instance, "right": s.RightOf(), "sid": s.SID, "grant": s.Grant}
		if node != "" {
			fields["node"] = node
		}
		e.debug(ctx, "set_right", fields)
		p := contract.SetRightParams{Right: s.RightOf(), SID: s.SID, Grant: s.Grant}
		if readBack && i == len(steps)-1 {
			p.ReadBack = t.Instance
		}
		res, err := h.SetRight(ctx, p)
		if err != nil {
			if !hostAnswered(err) {
				out.unanswered()
			}
			run.back, run.err = nil, out.fail(&Error{Kind: KindSetRightFailed, Target: t, Err: err, Step: &s, Node: node})
			return run
		}
		run.done = append(run.done, s)
		if res != nil && res.Changed {
			run.changed = true
			out.changed()
		}
		if res != nil {
			run.back = res.Instance
			eventLogWarning(out, t, node, res.EventLogWarning)
		}
	}
	return run
}

// setRightsAtOnce is setRights with one set_right making every step in order
// (SetRightParams.Changes). When the host answers that one failed, the error names
// its right and SID: the steps before it were made, and out records a change. When
// it cannot tell which (no answer, or an LSA error that names none), the failure is
// the first step's and out records a change, so that what holds now is read back
// (unknown, not none).
func (e *Engine) setRightsAtOnce(ctx context.Context, h Host, t Target, node string, steps []ifi.Step, readBack bool, out ledger) rightsRun {
	var run rightsRun
	p := contract.SetRightParams{}
	for _, s := range steps {
		p.Changes = append(p.Changes, contract.RightChange{Right: s.RightOf(), SID: s.SID, Grant: s.Grant})
	}
	if readBack {
		p.ReadBack = t.Instance
	}
	fields := map[string]any{"host": t.Host, "instance": t.Instance, "changes": fmt.Sprintf("%+v", p.Changes)}
	if node != "" {
		fields["node"] = node
	}
	e.debug(ctx, "set_right", fields)
	res, err := h.SetRight(ctx, p)
	if err != nil {
		i := 0
		if !hostAnswered(err) {
			// Any of its changes may have been made before the answer was lost (as
			// the steps before a lost one were, one request each): read back.
			out.unanswered()
			out.changed()
		} else if j, ok := failedStep(err, steps); ok {
			i = j
			run.done = slices.Clone(steps[:i])
			if i > 0 {
				run.changed = true
				out.changed()
			}
		} else if _, ok := changeFailed(err, steps); ok {
			out.changed() // a change failed, which one is not said: what holds now is read back
		}
		run.err = out.fail(&Error{Kind: KindSetRightFailed, Target: t, Err: err, Step: &steps[i], Node: node})
		return run
	}
	run.done = slices.Clone(steps)
	if res != nil {
		if res.Changed {
			run.changed = true
			out.changed()
		}
		run.back = res.Instance
		eventLogWarning(out, t, node, res.EventLogWarning)
	}
	return run
}

// failedStep is the index of the step a host's error names, by its right and SID
// (Set-UserRight's errors name both); false when it names none.
func failedStep(err error, steps []ifi.Step) (int, bool) {
	msg := err.Error()
	for i, s := range steps {
		if strings.Contains(msg, s.RightOf()) && strings.Contains(msg, s.SID) {
			return i, true
		}
	}
	return 0, false
}

// waitReady waits until SQL Server accepts a login at st; without SQL credentials or
// a known port there is nothing to wait on.
func (e *Engine) waitReady(ctx context.Context, t Target, st *contract.SQLTarget, out ledger) error {
	return e.readyAfter(ctx, nil, t, st, out)
}

// sqlReady is the wait until SQL Server accepts a login at st; nil when there is
// nothing to wait on (no SQL credentials, no known port).
func (e *Engine) sqlReady(st *contract.SQLTarget) func(context.Context) error {
	checker, _ := e.Clients.SQLChecker()
	if checker == nil || st == nil {
		return nil
	}
	return func(ctx context.Context) error { return checker.WaitReady(ctx, *st) }
}

// readyAfter is waitReady after a restart through g (nil: none): the wait g began
// when the host said the Engine runs again (the slot went back after it), else its
// own.
func (e *Engine) readyAfter(ctx context.Context, g *restartGate, t Target, st *contract.SQLTarget, out ledger) error {
	began, err := false, error(nil)
	if g != nil {
		began, err = g.awaitReady(ctx)
	}
	if !began {
		ready := e.sqlReady(st)
		if ready == nil {
			return nil
		}
		err = ready(ctx)
	}
	if err != nil {
		return out.fail(&Error{Kind: KindNotReady, Target: t, Err: err, SQLPort: st.Port})
	}
	return nil
}

// readBack observes t after a change and assesses it again.
// The instance as the change's own process read it (known) saves a read_instance;
// SQL Server is asked in any case.
func (e *Engine) readBack(ctx context.Context, t Target, d ifi.Desired, known *contract.ReadInstanceResult, out *Outcome) (*Observation, *ifi.Assessment, error) {
	obs, err := e.observeRiding(ctx, t, known)
	if err != nil {
		return nil, nil, out.fail(&Error{Kind: KindReadBackFailed, Target: t, Err: err})
	}
	if !obs.Instance.Found {
		return nil, nil, out.fail(&Error{Kind: KindVanished, Target: t, Instance: obs.Instance})
	}
	a, err := ifi.Assess(d, obs.Observed)
	if err != nil {
		return nil, nil, out.fail(&Error{Kind: KindAssessFailed, Target: t, Err: err})
	}
	return obs, a, nil
}

// recover is the end of an apply whose step failed: once something changed, it
// reads the instance back (with a fresh, short deadline, since the operation's own
// may have run out) so that the Outcome says what is true now. When the failure was
// the connection's (not the host's refusal, nor a restart that failed on the host)
// and the host in fact converged (the Engine runs, and after a restart SQL Server
// reports IFI as asked), the apply succeeds with a warning naming the error.
func (e *Engine) recover(ctx context.Context, t Target, d ifi.Desired, restartPlanned bool, out *Outcome, err error) (*Outcome, error) {
	obs, ok := readAfterFailure(e, ctx, out.Changed, out, func(rctx context.Context) (*Observation, error) {
		obs, err := e.observeUntilDeadline(rctx, t)
		if err == nil {
			err = notFound(t, obs.Instance)
		}
		return obs, err
	}, func(error) string {
		return fmt.Sprintf("After the failure, %s could not be read back; what it holds now is unknown.", t)
	})
	if !ok {
		return out, err
	}
	a, aerr := ifi.Assess(d, obs.Observed)
	if aerr != nil {
		return out, err
	}
	out.Assessment = a
	out.SQLPort = obs.Instance.TCPPort
	out.Enabled, out.LockPages = d.Enabled, d.LockPages // the intent stays; the computed attributes say what the host has
	if connectionFailure(err) && a.Converged && obs.Instance.ServiceState == contract.StateRunning &&
		(!restartPlanned || a.RestartPending != nil && !*a.RestartPending) {
		e.info(ctx, "the host converged despite the error", map[string]any{"host": t.Host, "instance": t.Instance, "error": err.Error()})
		out.Restarted = out.Restarted || restartPlanned
		out.Warnings = append(out.Warnings, slices.Clone(obs.Warnings)...)
		out.Warnings = append(out.Warnings, a.Warnings...)
		out.Warnings = append(out.Warnings, ifi.Warning{Code: WarnRecovered, Summary: "The apply hit an error, but the host converged",
			Detail: fmt.Sprintf("On %s the apply failed part-way (%v), but reading the instance back shows it as asked: the error is "+
				"reported here instead of failing the apply.", t, err), Err: err})
		return out, nil
	}
	return out, err
}

// readAfterFailure is the read-back of an operation whose step failed: once it
// changed something (changed), look reads what is true now, with a fresh, short
// deadline (recoveryContext), so that the outcome can say so. When look fails, out
// records a WarnStateStale warning, stale saying from look's error what could not be
// read. It reports whether look read.
func readAfterFailure[O any](e *Engine, ctx context.Context, changed bool, out ledger, look func(context.Context) (O, error),
	stale func(error) string) (O, bool) {
	var none O
	if !changed {
		return none, false
	}
	rctx, cancel := e.recoveryContext(ctx)
	defer cancel()
	o, err := look(rctx)
	if err != nil {
		out.warn(ifi.Warning{Code: WarnStateStale, Summary: "State may be out of date", Detail: stale(err)})
		return none, false
	}
	return o, true
}

// recoveryContext is the context of the read-back after a failure: until the
// operation's deadline, and at least RecoveryTimeout from now (the operation's own
// deadline may have passed, or its context been cancelled, as by SIGINT).
func (e *Engine) recoveryContext(ctx context.Context) (context.Context, context.CancelFunc) {
	timeout := e.RecoveryTimeout
	if timeout == 0 {
		// Divided as the deadline is in the acceptance tests' binary
		// (testhooks.DeadlineDivisor; 1 in a release).
		timeout = DefaultRecoveryTimeout / time.Duration(testhooks.DeadlineDivisor())
	}
	deadline := e.clock().Now().Add(timeout)
	if dl, ok := ctx.Deadline(); ok && dl.After(deadline) && ctx.Err() == nil {
		deadline = dl
	}
	return context.WithDeadline(context.WithoutCancel(ctx), deadline)
}

// observeUntilDeadline is Observe, asked again with backoff while it fails with the
// network's failure (a restart in progress may keep WinRM away for a while) until
// ctx's deadline.
func (e *Engine) observeUntilDeadline(ctx context.Context, t Target) (*Observation, error) {
	for failures := 1; ; failures++ {
		obs, err := e.Observe(ctx, t)
		if err == nil || !transient(err) || ctx.Err() != nil {
			return obs, err
		}
		e.info(ctx, "reading the instance back after a failure: asking again", map[string]any{"host": t.Host, "instance": t.Instance,
			"error": err.Error(), "attempt": failures})
		if e.clock().Sleep(ctx, retryPause(failures)) != nil {
			return obs, err
		}
	}
}

// connectionFailure reports whether err is the connection's or the deadline's
// rather than the host's answer: a set_right or restart whose request or answer was
// lost, or a restart the engine stopped following.
func connectionFailure(err error) bool {
	var ce *Error
	if !errors.As(err, &ce) {
		return false
	}
	switch ce.Kind {
	case KindSetRightFailed, KindRestartFailed:
	default:
		return false
	}
	var outcome *RestartOutcomeError
	if errors.As(ce.Err, &outcome) {
		return false
	}
	var unfinished *RestartUnfinishedError
	if errors.As(ce.Err, &unfinished) {
		return true
	}
	return !hostAnswered(ce.Err)
}
