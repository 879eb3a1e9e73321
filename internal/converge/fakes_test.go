package converge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract/contracttest"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

var (
	svcSID  = contracttest.ServiceSID
	acctSID = contracttest.AccountSID
)

// fakeHost is a small model of one Windows host with the default instance: the
// right's holders, the service's state and what the running Engine has. set_right
// changes the holders; a restart gives the Engine IFI when the service SID or the
// start account holds the right. Failures are injected per call.
type fakeHost struct {
	mu         sync.Mutex
	ri         contract.ReadInstanceResult // what read_instance reports, apart from the holders
	holders    []string
	runningIFI bool
	installed  bool

	// Failures: readErr is asked before each read_instance (n counts from 1),
	// setRightErr before each set_right; restartErr fails restart_instance and
	// restartStops leaves the service stopped when it does.
	readErr      func(n int) error
	setRightErr  func(n int, p contract.SetRightParams) error
	restartErr   error
	restartStops bool
	// restartNoEffect: the restart does not change what the Engine runs with (as
	// when the service did not really restart).
	restartNoEffect bool
	// hiddenAdmin: the start account is in a group nested in Administrators that
	// read_instance does not report, so its token holds what Administrators holds.
	hiddenAdmin bool
	// noReadBack: set_right and restart_instance send no read-back (as when the
	// restart's outcome came from restart_status), so the engine reads the instance.
	noReadBack bool
	// uninstallAfterRead uninstalls the instance after that many reads.
	uninstallAfterRead int
	// onRestart runs when restart_instance is called (e.g. to end the context).
	onRestart func()
	// beforeRead runs at the start of each read_instance, outside the host's lock
	// (e.g. to wait until the SQL check has started).
	beforeRead func(ctx context.Context) error

	// lockHolders hold Lock Pages in Memory, reported when ri.LockPages is set
	// (withLockPages).
	lockHolders []string

	reads, setRights, restarts, statuses int
	setRightOps                          int // set_right requests (setRights counts changes)
	setRightRequests                     []contract.SetRightParams
	restartParams                        []contract.RestartInstanceParams
	// restartResult, when set, is restart_instance's answer (no effect on the host).
	restartResult *contract.RestartInstanceResult
	// restartErrAfterEffect: restart_instance restarts, then fails with restartErr.
	restartErrAfterEffect bool
	// otherRestarting: another instance of the host restarts, so restart_instance
	// refuses before its changes (the host's restart lease).
	otherRestarting bool
	// otherPrepared: that restart is a request prepared and not let go.
	otherPrepared bool
	// last is the last restart; statusErr fails restart_status.
	last      *contract.RestartInstanceResult
	statusErr error
	// statusErrs: when > 0, only the first statusErrs restart_status calls fail.
	statusErrs int
	// ntlm is why auth "negotiate" reached the host with NTLM ("": Kerberos), as
	// remote's client says it (NTLMFallback).
	ntlm string
	// releasedAfter is, for each ReleaseIdle, how many reads the host had answered.
	releasedAfter []int
}

// ReleaseIdle records that the engine let go of the host's idle connection.
func (h *fakeHost) ReleaseIdle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.releasedAfter = append(h.releasedAfter, h.reads)
}

// NTLMFallback is why the client reached the host with NTLM instead of Kerberos.
func (h *fakeHost) NTLMFallback() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ntlm
}

func newFakeHost() *fakeHost {
	ri := contracttest.RunningDefaultInstance()
	ri.InstalledInstances = []string{"MSSQLSERVER"}
	ri.TCPPort = 1433
	ri.ProcessStartTime = &fakeBoot
	return &fakeHost{installed: true, ri: *ri}
}

// withLockPages makes the host report who holds Lock Pages in Memory (lockHolders).
func (h *fakeHost) withLockPages() *fakeHost {
	h.ri.LockPages = &contract.RightRead{Right: contract.RightLockMemory, Holders: []contract.Principal{},
		GroupPolicy: contract.GroupPolicyInfo{Known: true}}
	return h
}

// fakeBoot is when the fake Engine first started; each restart starts it a minute later.
var fakeBoot = time.Date(2024, 5, 1, 8, 0, 0, 0, time.UTC)

// granted sets the holders and gives the running Engine what they give.
func (h *fakeHost) granted(sids ...string) *fakeHost {
	h.holders = slices.Clone(sids)
	h.runningIFI = h.effective()
	return h
}

func (h *fakeHost) effective() bool {
	return slices.Contains(h.holders, svcSID) || slices.Contains(h.holders, acctSID) ||
		h.hiddenAdmin && slices.Contains(h.holders, winsid.Administrators)
}

func (h *fakeHost) holds(sid string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.holders, sid)
}

func (h *fakeHost) ReadInstance(ctx context.Context, p contract.ReadInstanceParams) (*contract.ReadInstanceResult, error) {
	if h.beforeRead != nil {
		if err := h.beforeRead(ctx); err != nil {
			return nil, err
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read_instance: %w", err)
	}
	h.reads++
	if h.readErr != nil {
		if err := h.readErr(h.reads); err != nil {
			return nil, err
		}
	}
	if h.uninstallAfterRead > 0 && h.reads > h.uninstallAfterRead {
		h.installed = false
	}
	return h.reportLocked(p.Instance), nil
}

// reportLocked is the instance as read_instance (or a change's read-back) reports it.
func (h *fakeHost) reportLocked(instance string) *contract.ReadInstanceResult {
	if !h.installed || instance != h.ri.Instance {
		inst := []string{}
		if h.installed {
			inst = []string{h.ri.Instance}
		}
		return &contract.ReadInstanceResult{ComputerName: h.ri.ComputerName, InstalledInstances: inst}
	}
	ri := h.ri
	ri.RightHolders = nil
	for _, s := range h.holders {
		ri.RightHolders = append(ri.RightHolders, contract.Principal{SID: s})
	}
	if h.ri.LockPages != nil {
		lp := *h.ri.LockPages
		lp.Holders = []contract.Principal{}
		for _, s := range h.lockHolders {
			lp.Holders = append(lp.Holders, contract.Principal{SID: s})
		}
		ri.LockPages = &lp
	}
	return &ri
}

// fakeScriptError is a script's own error (remote.Error of KindScript): the host
// answered.
type fakeScriptError struct {
	code string
	err  error
}

func (e *fakeScriptError) Error() string      { return e.code + ": " + e.err.Error() }
func (e *fakeScriptError) Unwrap() error      { return e.err }
func (e *fakeScriptError) ScriptFailed() bool { return true }
func (e *fakeScriptError) ScriptCode() string { return e.code }

func (h *fakeHost) SetRight(ctx context.Context, p contract.SetRightParams) (*contract.SetRightResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.setRightOps++
	h.setRightRequests = append(h.setRightRequests, p)
	changes := p.Changes
	if len(changes) == 0 {
		changes = []contract.RightChange{{Right: p.Right, SID: p.SID, Grant: p.Grant}}
	}
	changed := false
	for _, c := range changes {
		ch, err := h.changeLocked(contract.SetRightParams{Right: c.RightOf(), SID: c.SID, Grant: c.Grant})
		if err != nil {
			return nil, err // the ones before it were made
		}
		changed = changed || ch
	}
	res := &contract.SetRightResult{Changed: changed}
	if p.ReadBack != "" && !h.noReadBack {
		res.Instance = h.reportLocked(p.ReadBack)
	}
	return res, nil
}

// changeLocked is one change of the holders (set_right's, or one of
// restart_instance's); setRightErr counts each.
func (h *fakeHost) changeLocked(p contract.SetRightParams) (bool, error) {
	h.setRights++
	if h.setRightErr != nil {
		if err := h.setRightErr(h.setRights, p); err != nil {
			return false, err
		}
	}
	holders := &h.holders
	if p.Right == contract.RightLockMemory {
		holders = &h.lockHolders
	}
	had := slices.Contains(*holders, p.SID)
	switch {
	case p.Grant && !had:
		*holders = append(*holders, p.SID)
	case !p.Grant && had:
		*holders = slices.DeleteFunc(*holders, func(s string) bool { return s == p.SID })
	}
	return had != p.Grant, nil
}

func (h *fakeHost) RestartInstance(ctx context.Context, p contract.RestartInstanceParams) (*contract.RestartInstanceResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.restartParams = append(h.restartParams, p)
	if h.otherRestarting {
		msg := "the restart of instance ETL on SQL01 is in progress (since 2026-12-01T10:00:00Z, phase stopping). Nothing was changed for MSSQLSERVER."
		if h.otherPrepared {
			msg = "request 0a1b to restart instance ETL on SQL01 is prepared (since 2026-12-01T10:00:00Z) and waits for its go line until 2026-12-01T10:00:30Z. Nothing was changed for MSSQLSERVER."
		}
		return nil, &fakeScriptError{code: contract.CodeRestartInProgress, err: errors.New(msg)}
	}
	changed := false
	for _, c := range p.Changes {
		ch, err := h.changeLocked(contract.SetRightParams{Right: c.RightOf(), SID: c.SID, Grant: c.Grant})
		if err != nil {
			// right_change.ps1 ends the request with lsa_error before anything stops.
			return nil, &fakeScriptError{code: "lsa_error", err: err}
		}
		changed = changed || ch
	}
	h.restarts++
	if h.onRestart != nil {
		h.onRestart()
	}
	if h.restartResult != nil {
		r := *h.restartResult
		r.RestartID = p.RestartID
		h.last = &r
		return &r, nil
	}
	if h.restartErr != nil && !h.restartErrAfterEffect {
		if h.restartStops {
			h.ri.ServiceState = contract.StateStopped
		}
		return nil, h.restartErr
	}
	if !h.restartNoEffect {
		started := fakeBoot.Add(time.Duration(h.restarts) * time.Minute)
		h.ri.ProcessStartTime = &started
		h.runningIFI = h.effective()
		if h.ri.ErrorLog.Found { // the new startup line
			on := h.runningIFI
			h.ri.ErrorLog.Enabled = &on
		}
	}
	h.last = &contract.RestartInstanceResult{Found: true, RestartID: p.RestartID, Phase: contract.PhaseDone, Finished: true,
		ServiceName: h.ri.ServiceName, ServiceState: contract.StateRunning}
	if h.restartErr != nil {
		return nil, h.restartErr // the restart happened; its answer was lost
	}
	res := *h.last
	res.Changed = changed
	if p.ReadBack && !h.noReadBack {
		res.Instance = h.reportLocked(p.Instance)
	}
	return &res, nil
}

// maxFakeStatuses bounds the restart_status questions one fake host answers.
const maxFakeStatuses = 1000

// RestartStatus reports the last restart (or none).
func (h *fakeHost) RestartStatus(ctx context.Context, p contract.RestartStatusParams) (*contract.RestartInstanceResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.statuses++
	if h.statuses > maxFakeStatuses {
		// No test's restart takes that many questions: the engine would ask on
		// forever (a test that never ends fails instead).
		panic(fmt.Sprintf("fakeHost: restart_status asked %d times; the engine does not stop asking", h.statuses))
	}
	if h.statusErr != nil && (h.statusErrs == 0 || h.statuses <= h.statusErrs) {
		return nil, h.statusErr
	}
	if h.last == nil {
		return &contract.RestartInstanceResult{ServiceName: h.ri.ServiceName}, nil
	}
	return h.last, nil
}

// fakeChecker answers for the fake host's running Engine.
type fakeChecker struct {
	mu       sync.Mutex // guards the counters: the check may run alongside read_instance
	h        *fakeHost
	checkErr error
	waitErr  error
	tde      []string
	replicas []contract.Replica // nil: Always On off
	requests []contract.Request

	// answer changes each report before the checker returns it (e.g. to answer as
	// another instance would).
	answer func(*contract.SQLReport)
	// onCheck runs at the start of each check, before its answer (e.g. to signal
	// that it started, or to wait); its error fails the check.
	onCheck func(ctx context.Context, t contract.SQLTarget) error

	checks  int
	waits   int
	targets []contract.SQLTarget

	// The group's primary (group_lock_fakes_test.go).
	noPrimaryName bool                      // the replica names no primary
	primarySees   func() []contract.Replica // nil: every replica HEALTHY
	groupErr      error                     // asking the primary fails
	lockedBy      string                    // another run restarts this replica
	lockErr       error                     // the lock cannot be asked for
	lockErrFor    map[string]error          // the lock of that group cannot be asked for
	healthErr     func(poll int) error      // the held lock's health question (poll from 1) fails
	lockGroups    []string                  // the groups whose lock was asked for, in order
	lockReplicas  []string                  // the replica each lock was asked for
	primaryAsks   []contract.SQLTarget
	lockTargets   []contract.SQLTarget
	locksHeld     int
	healthPolls   int
}

func (c *fakeChecker) Check(ctx context.Context, t contract.SQLTarget) (*contract.SQLReport, error) {
	c.mu.Lock()
	c.checks++
	c.targets = append(c.targets, t)
	c.mu.Unlock()
	if c.onCheck != nil {
		if err := c.onCheck(ctx, t); err != nil {
			return nil, err
		}
	}
	if c.checkErr != nil {
		return nil, c.checkErr
	}
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	on := c.h.runningIFI
	rep := &contract.SQLReport{InstanceName: c.h.ri.Instance, ProcessID: c.h.ri.ProcessID, LastStartup: c.h.ri.ProcessStartTime,
		ProductVersion: "16.0.4135.4", IFIColumnPresent: true, IFIEnabled: &on,
		EncryptedDatabases: c.tde, HADREnabled: c.replicas != nil, Replicas: c.replicas, Primaries: c.primaries(),
		Requests: append([]contract.Request{}, c.requests...)}
	if c.answer != nil {
		c.answer(rep)
	}
	return rep, nil
}

func (c *fakeChecker) WaitReady(ctx context.Context, t contract.SQLTarget) error {
	c.waits++
	return c.waitErr
}

// fakeClients hands out the fake host and checker.
type fakeClients struct {
	host       *fakeHost
	hostErr    error
	checker    *fakeChecker // nil: no SQL credentials
	checkerErr error
}

func (c *fakeClients) Host(string, int) (Host, error) {
	if c.hostErr != nil {
		return nil, c.hostErr
	}
	return c.host, nil
}

func (c *fakeClients) SQLChecker() (contract.SQLChecker, error) {
	if c.checkerErr != nil {
		return nil, c.checkerErr
	}
	if c.checker == nil {
		return nil, nil
	}
	return c.checker, nil
}

// fakeClock stands still at now.
type fakeClock struct{ now time.Time }

func (c fakeClock) Now() time.Time { return c.now }

func (c fakeClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// world is one test's host, checker and engine.
type world struct {
	host    *fakeHost
	checker *fakeChecker
	clients *fakeClients
	engine  *Engine
}

func newWorld(h *fakeHost) *world {
	ch := &fakeChecker{h: h}
	cl := &fakeClients{host: h, checker: ch}
	return &world{host: h, checker: ch, clients: cl, engine: New(cl)}
}

var errBoom = errors.New("the WinRM connection was reset")

var defaultTarget = Target{Host: "sql01.example.com", Instance: "MSSQLSERVER"}

// transientErr is the network's failure, as remote.Error reports a refused
// connection (TransientFailure).
type transientErr struct{}

func (transientErr) Error() string   { return "connect: connection refused" }
func (transientErr) Transient() bool { return true }

// notClustered is the cluster operations' answer on a host that is no cluster node.
func notClustered(h string) error {
	return &fakeScriptError{code: contract.CodeNotClustered, err: fmt.Errorf("root\\MSCluster does not answer on %s: it is not a failover cluster node", h)}
}

// The fake host is no cluster node.
func (h *fakeHost) ReadCluster(ctx context.Context, p contract.ReadClusterParams) (*contract.ReadClusterResult, error) {
	return nil, notClustered(h.ri.ComputerName)
}

func (h *fakeHost) ClusterMove(ctx context.Context, p contract.ClusterMoveParams) (*contract.ClusterActionResult, error) {
	return nil, notClustered(h.ri.ComputerName)
}

func (h *fakeHost) ClusterRestart(ctx context.Context, p contract.ClusterRestartParams) (*contract.ClusterActionResult, error) {
	return nil, notClustered(h.ri.ComputerName)
}

// logonErr is the checker's error for a login SQL Server refused (sqlcheck's
// *Error of a logon failure, such as error 18456): SQL Server answered.
type logonErr struct{}

func (logonErr) Error() string {
	return "SQL Server instance MSSQLSERVER at sql01.example.com:1433: login failed for ifi (error 18456)"
}
func (logonErr) LogonFailed() bool { return true }
func (logonErr) AnsweredTDS() bool { return true }
