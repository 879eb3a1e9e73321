package converge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

// Warning codes of the observation (the decision's are ifi.Warn*).
const (
	WarnSQLSetup       = "sql_setup"        // the SQL client could not be set up
	WarnSQLPortUnknown = "sql_port_unknown" // the host reports no TCP port and none is configured
	WarnSQLCheck       = "sql_check"        // asking SQL Server failed
	WarnStateStale     = "state_stale"      // after a failure the host could not be read back
	WarnRecovered      = "recovered"        // after a connection failure the host was read back as asked
)

// Observation is one look at an instance: one read_instance and at most one SQL
// connection.
type Observation struct {
	Target   Target
	Instance *contract.ReadInstanceResult
	// ReadAt is when the read of Instance was sent (it may be the run's shared read
	// of the host, hostReads); zero when the observation was given a known read.
	ReadAt   time.Time
	Observed ifi.Observed
	// SQLTarget is where SQL Server listens; nil when SQL is not configured or the
	// port is unknown.
	SQLTarget *contract.SQLTarget
	// Warnings say what could not be verified and why.
	Warnings []ifi.Warning

	// groups are the instance's availability groups and where each one's primary is
	// asked (group_lock.go); replica is its own replica's server name.
	groups  []replicaGroup
	replica string
	// confirmed: SQL Server answered, from the Engine process Instance reports
	// (answeredFor), so a known read stands for the host as it is now.
	confirmed bool
}

// Observe reads the instance and verifies IFI. Errors are *Error of kind
// KindHostSetup or KindObserveFailed; an instance that is not installed is not an
// error here (Instance.Found is false).
func (e *Engine) Observe(ctx context.Context, t Target) (*Observation, error) {
	return e.observe(ctx, t, nil)
}

// observe is Observe; a known read of the instance (a change's read-back) stands in
// for read_instance.
func (e *Engine) observe(ctx context.Context, t Target, known *contract.ReadInstanceResult) (*Observation, error) {
	checker, setupErr := e.Clients.SQLChecker()
	ri := known
	var readAt time.Time
	early := &earlyCheck{}
	if ri == nil {
		h, err := e.host(t)
		if err != nil {
			return nil, err
		}
		// When the port is known before the read, SQL Server is asked while the host
		// is read; the early answer counts only when the host then reports a running
		// Engine at that port.
		early = e.startEarlyCheck(ctx, t, checker)
		defer early.discard()

		ri, readAt, err = e.readInstanceAt(ctx, h, t, "")
		if err != nil {
			return nil, &Error{Kind: KindObserveFailed, Target: t, Err: err}
		}
	}
	o := &Observation{Target: t, Instance: ri, ReadAt: readAt, Observed: ifi.Observed{Host: t.Host, Instance: ri}}
	if !ri.Found {
		return o, nil
	}
	site := sqlSite{at: sqlTarget(t, t.Host, ri), where: "at", fallback: "the error log",
		unknown: ifi.Warning{Code: WarnSQLPortUnknown, Summary: "SQL Server's port is unknown",
			Detail: fmt.Sprintf("The host does not report a TCP port for %s (dynamic ports or TCP disabled), so SQL Server "+
				"cannot be asked; verification falls back to the error log.", t)}}
	v, err := e.checkSQL(ctx, o, ri, checker, setupErr, site, early)
	if err != nil {
		return nil, err
	}
	o.Observed.Verification = v
	return o, nil
}

// sqlSite is where an observation asks SQL Server, and how its warnings say so.
type sqlSite struct {
	// at is where SQL Server is asked; nil when that is not known (unknown is then
	// the warning).
	at      *contract.SQLTarget
	unknown ifi.Warning
	// where names the place before its host:port ("at", "at its virtual name");
	// fallback is what verification falls back to without SQL Server's answer.
	where, fallback string
}

// checkSQL is the SQL check of an observation o (of t, o.Target): it asks SQL
// Server at site when ri, the instance whose Engine answers there, runs (the early
// check's answer standing in when it asked at that port), asks the primaries of its
// availability groups, records the SQL target, the warnings and the groups in o, and
// returns the Verification of ri.
func (e *Engine) checkSQL(ctx context.Context, o *Observation, ri *contract.ReadInstanceResult, checker contract.SQLChecker, setupErr error,
	site sqlSite, early *earlyCheck) (ifi.Verification, error) {
	t := o.Target
	// A configured sql block whose answer is missing leaves the gate's questions
	// unknown, not unasked.
	v := ifi.Verification{Source: ifi.SourceNone, SQLConfigured: checker != nil || setupErr != nil}
	var dmv *bool // what sys.dm_server_services says, when SQL Server answered

	if setupErr != nil {
		o.Warnings = append(o.Warnings, ifi.Warning{Code: WarnSQLSetup, Summary: "SQL verification is not available",
			Detail: fmt.Sprintf("The SQL client could not be set up for %s: %v. Verification falls back to %s.", t, setupErr, site.fallback),
			Err:    setupErr})
	}
	if checker != nil {
		o.SQLTarget = site.at
		if o.SQLTarget == nil {
			o.Warnings = append(o.Warnings, site.unknown)
		} else if ri != nil && ri.ServiceState == contract.StateRunning {
			port := o.SQLTarget.Port
			rep, err := early.result(port)
			if !early.used(port) {
				early.discard() // it asked at another port
				e.debug(ctx, "sql check", map[string]any{"host": o.SQLTarget.Host, "instance": t.Instance, "sql_port": port})
				rep, err = checker.Check(ctx, *o.SQLTarget)
			}
			// A port SQL Server answered at is waited on after a restart until the
			// deadline; any other fails within a minute (the checker's WaitReady).
			o.SQLTarget.AnsweredTDS = err == nil || contract.SQLServerAnswered(err)
			if err == nil {
				// The answer counts only from the Engine the host reported.
				if err = answeredFor(t, o.SQLTarget, ri, rep); err != nil {
					o.SQLTarget.AnsweredTDS = false
				}
				o.confirmed = err == nil
			}
			if err != nil {
				where := fmt.Sprintf("%s %s:%d", site.where, safetext.Escape(o.SQLTarget.Host), port)
				w, lerr := e.sqlCheckFailed(t, where, port, site.fallback, err)
				if lerr != nil {
					return v, lerr
				}
				o.Warnings = append(o.Warnings, w)
			} else {
				dmv = fromReport(&v, rep)
				if len(v.AG.Groups) > 0 {
					e.askPrimaries(ctx, o, checker, rep, v.AG)
				}
			}
		}
	}
	v.Source, v.Enabled = ifi.Verify(ri, dmv)
	return v, nil
}

// sqlCheckFailed is what a failed SQL check of t (asked where, at port) means. A
// logon failure (contract.SQLLogonFailed: the configured login is refused) is an
// error, KindSQLLogonFailed, unless SQL verification is optional
// (Engine.SQLOptional): a login that never works must not pass for a check that
// could not be made now. Any other failure (nothing answers, no answer in time,
// the connection dropped), and a logon failure when SQL verification is optional,
// is a WarnSQLCheck warning, verification falling back to fallback; the restart
// gate then refuses what needs SQL Server's answer.
func (e *Engine) sqlCheckFailed(t Target, where string, port int, fallback string, err error) (ifi.Warning, error) {
	w := ifi.Warning{Code: WarnSQLCheck, Summary: "IFI could not be verified through SQL Server", Err: err,
		Detail: fmt.Sprintf("Asking SQL Server for %s %s failed; verification falls back to %s.", t, where, fallback)}
	if !contract.SQLLogonFailed(err) {
		return w, nil
	}
	if !e.SQLOptional {
		return w, &Error{Kind: KindSQLLogonFailed, Target: t, SQLPort: port, Err: err}
	}
	w.Detail = fmt.Sprintf("SQL Server answered for %s %s and refused the SQL login; as SQL verification is optional, verification "+
		"falls back to %s.", t, where, fallback)
	return w, nil
}

// fromReport fills v with what SQL Server reported, and returns what
// sys.dm_server_services says of IFI (nil when it has no such column or a NULL).
func fromReport(v *ifi.Verification, rep *contract.SQLReport) *bool {
	v.SQLVersion = rep.ProductVersion
	v.Clustered = rep.Clustered
	if rep.EncryptedDatabases != nil {
		v.TDEDatabases = slices.Sorted(slices.Values(rep.EncryptedDatabases))
	} else {
		v.TDEDatabases = []string{}
	}
	v.AG = agMembership(rep)
	v.RunningBackups = rep.RunningBackups()
	v.MemoryModel, v.MaxServerMemoryMB, v.Edition = rep.MemoryModel, rep.MaxServerMemoryMB, rep.Edition
	if rep.IFIColumnPresent {
		return rep.IFIEnabled
	}
	return nil
}

// earlyCheck is a SQL check started before read_instance answered; the zero value
// (no port known up front, or no SQL client) has nothing to offer.
type earlyCheck struct {
	port   int
	cancel context.CancelFunc
	done   chan struct{} // closed when rep and err are set
	rep    *contract.SQLReport
	err    error
}

// startEarlyCheck asks SQL Server at the port known before the read (sql_port, else
// the port the last observation saw), concurrently with the caller.
func (e *Engine) startEarlyCheck(ctx context.Context, t Target, checker contract.SQLChecker) *earlyCheck {
	port := t.SQLPort
	if port == 0 {
		port = t.SQLPortHint
	}
	if checker == nil || port == 0 {
		return &earlyCheck{}
	}
	cctx, cancel := context.WithCancel(ctx)
	ec := &earlyCheck{port: port, cancel: cancel, done: make(chan struct{})}
	e.debug(ctx, "sql check", map[string]any{"host": t.Host, "instance": t.Instance, "sql_port": port, "overlapped": true})
	go func() {
		defer close(ec.done)
		ec.rep, ec.err = checker.Check(cctx, contract.SQLTarget{Host: t.Host, Port: port, Instance: t.Instance})
	}()
	return ec
}

// used says whether the early check asked SQL Server at port.
func (ec *earlyCheck) used(port int) bool { return ec.done != nil && ec.port == port }

// result waits for the early check when it asked at port; otherwise it returns
// nothing (the caller checks again).
func (ec *earlyCheck) result(port int) (*contract.SQLReport, error) {
	if !ec.used(port) {
		return nil, nil
	}
	<-ec.done
	return ec.rep, ec.err
}

// discard ends the early check and waits for it, so that nothing outlives the
// observation.
func (ec *earlyCheck) discard() {
	if ec.done == nil {
		return
	}
	ec.cancel()
	<-ec.done
}

// sqlTarget is where SQL Server of t listens on host: the configured port, else the
// one the host reports for ri (nil when none is read); nil when neither is known,
// or host is "".
func sqlTarget(t Target, host string, ri *contract.ReadInstanceResult) *contract.SQLTarget {
	port := t.SQLPort
	if port == 0 && ri != nil {
		port = ri.TCPPort
	}
	if port == 0 || host == "" {
		return nil
	}
	return &contract.SQLTarget{Host: host, Port: port, Instance: t.Instance}
}

// freshRead is t.Read when Apply may use it instead of reading the host: an
// installed instance, read at most ReadFreshness ago (a time in the future, from a
// clock that moved back or another machine's, does not count as fresh).
func (e *Engine) freshRead(t Target) *contract.ReadInstanceResult {
	limit := e.ReadFreshness
	if limit == 0 {
		limit = DefaultReadFreshness
	}
	if t.Read == nil || !t.Read.Found || limit < 0 || t.ReadAt.IsZero() {
		return nil
	}
	age := e.clock().Now().Sub(t.ReadAt)
	if age < 0 || age > limit {
		return nil
	}
	return t.Read
}

// host opens the host's client, as the engine's view of it (trackedHost): the
// changes sent through it end the host's shared read.
func (e *Engine) host(t Target) (Host, error) {
	h, err := e.Clients.Host(t.Host, t.Port)
	if err != nil {
		return nil, &Error{Kind: KindHostSetup, Target: t, Err: err}
	}
	return &trackedHost{Host: h, reads: &e.reads, key: newHostReadKey(t)}, nil
}

// IdleReleaser is a host's client that keeps its connection open for a next
// operation (remote's, for a few seconds): ReleaseIdle closes what is kept idle.
type IdleReleaser interface {
	ReleaseIdle()
}

// releaseIdle tells t's host's client that this operation is done with the host, so
// that the connection it kept for a next operation goes now instead of after its idle
// time: a refresh of a fleet kept one per host refreshed within that time (issue 28's
// memory target). The next operation, if any, connects anew and resumes the TLS
// session.
func (e *Engine) releaseIdle(t Target) {
	h, err := e.Clients.Host(t.Host, t.Port)
	if err != nil {
		return
	}
	if r, ok := h.(IdleReleaser); ok {
		r.ReleaseIdle()
	}
}

// readInstance is one read of t's instance on h, the host of t (node: the failover
// cluster node it is, "" for none): taken from the run's shared read of the host
// (hostReads) when h can read a host at once, else one read_instance. Its error is
// the host's own.
func (e *Engine) readInstance(ctx context.Context, h Host, t Target, node string) (*contract.ReadInstanceResult, error) {
	ri, _, err := e.readInstanceAt(ctx, h, t, node)
	return ri, err
}

// readInstanceAt is readInstance, and when the read was sent.
func (e *Engine) readInstanceAt(ctx context.Context, h Host, t Target, node string) (*contract.ReadInstanceResult, time.Time, error) {
	fields := map[string]any{"host": t.Host, "instance": t.Instance}
	if node != "" {
		fields["node"] = node
	}
	if th, ok := h.(*trackedHost); ok {
		if hr := th.reader(); hr != nil {
			if ri, at, ok, err := e.sharedInstance(ctx, hr, t); ok {
				return ri, at, err
			}
		}
	}
	at := e.clock().Now()
	e.debug(ctx, "read_instance", fields)
	ri, err := h.ReadInstance(ctx, contract.ReadInstanceParams{Instance: t.Instance, Right: contract.RightManageVolume})
	return ri, at, err
}

// notFound is the KindNotFound error of t when ri says its instance is not
// installed; nil when it is.
func notFound(t Target, ri *contract.ReadInstanceResult) error {
	if ri.Found {
		return nil
	}
	return &Error{Kind: KindNotFound, Target: t, Instance: ri}
}

// found observes t once and turns a missing instance into a KindNotFound error.
func (e *Engine) found(ctx context.Context, t Target) (*Observation, error) {
	o, err := e.observe(ctx, t, nil)
	if err != nil {
		return nil, err
	}
	if err := notFound(t, o.Instance); err != nil {
		return nil, err
	}
	return o, nil
}

// RefusedFailure is implemented by host errors (remote.Error) that can say whether
// the connection was refused, reset or closed without an answer (the host or its
// WinRM service away for a while), as opposed to a name that does not resolve or
// any answer of the host.
type RefusedFailure interface {
	Refused() bool
}

// refused reports whether err is such a failure.
func refused(err error) bool {
	var rf RefusedFailure
	return errors.As(err, &rf) && rf.Refused()
}

// observeRiding is observe, asked again while the connection is refused, with the
// restart's follow-up pauses (retryPause), for as long as ctx's deadline leaves
// time for the pause: every read of an apply, and the read of a create's plan
// (ReadRiding), rides through a blip of the host's WinRM within its timeout. Without
// a deadline it asks once (every wait has a deadline). When the deadline comes, the
// error is the last refusal's (which names the host and what to check), not the
// deadline's.
func (e *Engine) observeRiding(ctx context.Context, t Target, known *contract.ReadInstanceResult) (*Observation, error) {
	var last error
	for failures := 1; ; failures++ {
		obs, err := e.observe(ctx, t, known)
		switch {
		case err == nil:
			return obs, nil
		case !refused(err):
			if last != nil && ctx.Err() != nil {
				return nil, last // the deadline ended an attempt: the refusal is the news
			}
			return nil, err
		}
		last = err
		pause := retryPause(failures)
		dl, ok := ctx.Deadline()
		if !ok || !e.clock().Now().Add(pause).Before(dl) {
			return nil, last
		}
		e.info(ctx, "the host refused the connection: asking again within the timeout", map[string]any{"host": t.Host,
			"instance": t.Instance, "error": err.Error(), "attempt": failures, "left": dl.Sub(e.clock().Now()).Round(time.Second).String()})
		if e.clock().Sleep(ctx, pause) != nil {
			return nil, last
		}
	}
}

// foundWith is found, riding through refused connections (observeRiding); a known
// read stands in for read_instance (observe).
func (e *Engine) foundWith(ctx context.Context, t Target, known *contract.ReadInstanceResult) (*Observation, error) {
	o, err := e.observeRiding(ctx, t, known)
	if err != nil {
		return nil, err
	}
	if err := notFound(t, o.Instance); err != nil {
		return nil, err
	}
	return o, nil
}

// agMembership sums up the instance's availability group replicas: primary when it
// is the primary of any group, resolving when it is resolving in any other, else
// secondary; and each replica it can see that is not connected and HEALTHY.
func agMembership(rep *contract.SQLReport) *ifi.AGMembership {
	m := &ifi.AGMembership{Groups: []string{}, Unhealthy: unhealthyReplicas(rep.Replicas)}
	for _, r := range rep.Replicas {
		if !r.Local {
			continue
		}
		if !slices.Contains(m.Groups, r.Group) {
			m.Groups = append(m.Groups, r.Group)
		}
		switch {
		case r.Role == "PRIMARY":
			m.Role = ifi.RolePrimary
		case r.Role == "SECONDARY" && m.Role == "":
			m.Role = ifi.RoleSecondary
		case r.Role != "SECONDARY" && m.Role != ifi.RolePrimary:
			m.Role = ifi.RoleResolving // RESOLVING, or a role this build does not know
		}
	}
	slices.Sort(m.Groups)
	return m
}

func orUnknown(s string) string {
	if s == "" {
		return "UNKNOWN"
	}
	return s
}
