package converge

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// Tests that pin decisions mutation testing found unguarded (make mutate).

// movingClock stands still until the test moves it.
type movingClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *movingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *movingClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

func (c *movingClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// The outcome's read time is when what it reports was read: the plan's read when
// the apply reused it, else the apply's own read; after a change, the change's
// read-back (as old as the change) or the read after it.
func TestApplyRecordsWhenItRead(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		granted    bool // nothing to do
		planAge    time.Duration
		noPlanRead bool
		noReadBack bool
		wantReads  int
		wantAt     time.Time
	}{
		{name: "nothing to do, plan read 5 s ago", granted: true, planAge: 5 * time.Second, wantReads: 0, wantAt: t0.Add(-5 * time.Second)},
		{name: "nothing to do, plan read too old", granted: true, planAge: DefaultReadFreshness + time.Second, wantReads: 1, wantAt: t0},
		{name: "nothing to do, no plan read", granted: true, noPlanRead: true, wantReads: 1, wantAt: t0},
		{name: "restart, read back by the restart", noPlanRead: true, wantReads: 1, wantAt: t0},
		{name: "restart, read after it", noPlanRead: true, noReadBack: true, wantReads: 2, wantAt: t0.Add(time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost()
			if tc.granted {
				h.granted(svcSID)
			}
			w := newWorld(h)
			clock := &movingClock{now: t0}
			w.engine.Clock = clock
			target := defaultTarget
			if !tc.noPlanRead {
				plan, err := New(w.clients).Read(context.Background(), defaultTarget, enable)
				if err != nil {
					t.Fatal(err)
				}
				target.Read, target.ReadAt = plan.Read, t0.Add(-tc.planAge)
			}
			h.reads = 0
			h.noReadBack = tc.noReadBack
			h.onRestart = func() { clock.advance(time.Minute) }
			out, err := w.engine.Apply(context.Background(), target, enable)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if h.reads != tc.wantReads {
				t.Errorf("read_instance %d times, want %d", h.reads, tc.wantReads)
			}
			if !out.ReadAt.Equal(tc.wantAt) {
				t.Errorf("read at %v, want %v", out.ReadAt, tc.wantAt)
			}
			if out.SQLPort != 1433 || out.Read == nil {
				t.Errorf("SQL port %d, read %v; want the instance's 1433", out.SQLPort, out.Read)
			}
		})
	}
}

// A restart that went as asked forgets an earlier lesson.
func TestApplyForgetsALessonAfterAnExpectedRestart(t *testing.T) {
	w := newWorld(newFakeHost())
	d := enable
	d.IneffectiveRestart = &ifi.IneffectiveRestart{StartAccountSID: acctSID, Holders: []string{winsid.Administrators}}
	out, err := w.engine.Apply(context.Background(), defaultTarget, d)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if w.host.restarts != 1 || out.IneffectiveRestart != nil {
		t.Errorf("restarts %d, lesson %v; want one restart and the lesson forgotten", w.host.restarts, out.IneffectiveRestart)
	}
}

// Without the Engine's start time after the restart, nothing is learned: the check
// names the restart.
func TestApplyLearnsNothingWithoutTheStartTime(t *testing.T) {
	h := newFakeHost().granted(winsid.Administrators, svcSID)
	h.hiddenAdmin = true
	h.noReadBack = true
	h.beforeRead = func(context.Context) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.restarts > 0 {
			h.ri.ProcessStartTime = nil
		}
		return nil
	}
	w := newWorld(h)
	out, err := w.engine.Apply(context.Background(), defaultTarget, ifi.Desired{Enabled: false, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartIfNeeded})
	_ = wantError(t, err, KindCheckFailed)
	if out.IneffectiveRestart != nil || h.restarts != 1 {
		t.Errorf("lesson %v, restarts %d; want none and one", out.IneffectiveRestart, h.restarts)
	}
}

// secondHostFails gives the host's client once, then fails to set it up: the
// read works, the change cannot start.
type secondHostFails struct {
	*fakeClients
	calls int
}

func (c *secondHostFails) Host(host string, port int) (Host, error) {
	if c.calls++; c.calls > 1 {
		return nil, errBoom
	}
	return c.fakeClients.Host(host, port)
}

// A host client that cannot be set up for the change fails the apply or the
// destroy before anything changes.
func TestChangeWithoutAHostClientChangesNothing(t *testing.T) {
	w := newWorld(newFakeHost())
	out, err := New(&secondHostFails{fakeClients: w.clients}).Apply(context.Background(), defaultTarget, enable)
	_ = wantError(t, err, KindHostSetup)
	if out.Changed || w.host.restarts != 0 || w.host.holds(svcSID) {
		t.Errorf("apply: changed %v, restarts %d", out.Changed, w.host.restarts)
	}
	w = newWorld(newFakeHost().granted(svcSID))
	out, err = New(&secondHostFails{fakeClients: w.clients}).Destroy(context.Background(), defaultTarget, enable)
	_ = wantError(t, err, KindHostSetup)
	if out.Changed || !w.host.holds(svcSID) {
		t.Errorf("destroy: changed %v, grant held %v", out.Changed, w.host.holds(svcSID))
	}
}

// A desired state the decision cannot assess is an error of Read, Describe and
// Destroy, not an empty success.
func TestUnassessableWishIsAnError(t *testing.T) {
	bad := ifi.Desired{Enabled: true, Grantee: "domain_admins", Restart: ifi.RestartIfNeeded}
	w := newWorld(newFakeHost().granted(svcSID))
	if out, err := w.engine.Read(context.Background(), defaultTarget, bad); out.Assessment != nil {
		t.Errorf("read: assessment %+v", out.Assessment)
	} else {
		_ = wantError(t, err, KindAssessFailed)
	}
	if _, err := w.engine.Describe(context.Background(), defaultTarget, "domain_admins"); err == nil {
		t.Error("describe with an unknown grantee succeeded")
	}
	out, err := w.engine.Destroy(context.Background(), defaultTarget, bad)
	_ = wantError(t, err, KindDecideFailed)
	if out.Changed || !w.host.holds(svcSID) {
		t.Errorf("destroy: changed %v, grant held %v", out.Changed, w.host.holds(svcSID))
	}
}

// Describe of a missing instance is KindNotFound; of one where the service SID
// holds the right, converged with SQL Server Setup's grant.
func TestDescribeMissingAndSetupsGrant(t *testing.T) {
	h := newFakeHost().granted(svcSID)
	h.installed = false
	if _, err := newWorld(h).engine.Describe(context.Background(), defaultTarget, ""); err == nil {
		t.Error("describe of a missing instance succeeded")
	} else {
		_ = wantError(t, err, KindNotFound)
	}
	out, err := newWorld(newFakeHost().granted(svcSID)).engine.Describe(context.Background(), defaultTarget, "")
	if err != nil {
		t.Fatal(err)
	}
	if !out.Assessment.Converged || !out.Enabled {
		t.Errorf("converged %v, enabled %v; the service SID holds the right as Setup grants it", out.Assessment.Converged, out.Enabled)
	}
}

// eventLogHost is a host whose changes leave no entry in its event log.
type eventLogHost struct{ *fakeHost }

const noEventLog = "the event source mssqlifi could not be registered (access denied)"

func (h eventLogHost) SetRight(ctx context.Context, p contract.SetRightParams) (*contract.SetRightResult, error) {
	res, err := h.fakeHost.SetRight(ctx, p)
	if res != nil {
		res.EventLogWarning = noEventLog
	}
	return res, err
}

func (h eventLogHost) RestartInstance(ctx context.Context, p contract.RestartInstanceParams) (*contract.RestartInstanceResult, error) {
	res, err := h.fakeHost.RestartInstance(ctx, p)
	if res != nil {
		res.EventLogWarning = noEventLog
	}
	return res, err
}

// A change the host could not record in its event log says so, once.
func TestChangeNotInTheEventLogIsAWarning(t *testing.T) {
	for _, d := range []ifi.Desired{enable, withRestartNever(enable)} {
		w := newWorld(newFakeHost())
		out, err := New(withHost{w.clients, eventLogHost{w.host}}).Apply(context.Background(), defaultTarget, d)
		if err != nil {
			t.Fatalf("Apply (restart %s): %v", d.Restart, err)
		}
		var n int
		for _, wn := range out.Warnings {
			if wn.Code == WarnEventLog {
				n++
				if !strings.Contains(wn.Detail, noEventLog) || !strings.Contains(wn.Detail, defaultTarget.Host) {
					t.Errorf("warning %q", wn.Detail)
				}
			}
		}
		if n != 1 {
			t.Errorf("restart %s: %d event log warnings in %v, want 1", d.Restart, n, codes(out.Warnings))
		}
	}
}

func withRestartNever(d ifi.Desired) ifi.Desired { d.Restart = ifi.RestartNever; return d }

// An apply's changes without a restart go as one set_right, which reads the
// instance back (a grantee move: the revoke, then the grant); a destroy's never
// reads back.
func TestTheApplysSetRightReadsBack(t *testing.T) {
	h := newFakeHost().granted(acctSID)
	d := withRestartNever(enable)
	d.PriorGranteeSID = acctSID
	if _, err := newWorld(h).engine.Apply(context.Background(), defaultTarget, d); err != nil {
		t.Fatal(err)
	}
	want := []contract.RightChange{{Right: contract.RightManageVolume, SID: acctSID, Grant: false}, {Right: contract.RightManageVolume, SID: svcSID, Grant: true}}
	if seen := h.setRightRequests; len(seen) != 1 || !slices.Equal(seen[0].Changes, want) || seen[0].ReadBack != defaultTarget.Instance {
		t.Errorf("apply's set_right requests %+v: want one, the revoke then the grant, with a read-back", seen)
	}
	h = newFakeHost().granted(svcSID)
	if _, err := newWorld(h).engine.Destroy(context.Background(), defaultTarget, enable); err != nil {
		t.Fatal(err)
	}
	if seen := h.setRightRequests; len(seen) != 1 || seen[0].ReadBack != "" {
		t.Errorf("destroy's set_right requests %+v: want one revoke without a read-back", seen)
	}
}

// A grant the host already had (someone granted it since the plan's read) changes
// nothing: the outcome says so.
func TestGrantTheHostAlreadyHadIsNoChange(t *testing.T) {
	w := newWorld(newFakeHost())
	plan, err := w.engine.Read(context.Background(), defaultTarget, enable)
	if err != nil {
		t.Fatal(err)
	}
	w.host.granted(svcSID)
	target := defaultTarget
	target.Read, target.ReadAt = plan.Read, plan.ReadAt
	out, err := w.engine.Apply(context.Background(), target, withRestartNever(enable))
	if err != nil {
		t.Fatal(err)
	}
	if w.host.setRightOps != 1 || out.Changed {
		t.Errorf("set_right %d, changed %v; want one request that changed nothing", w.host.setRightOps, out.Changed)
	}
}

// firstSendHost answers the first restart_instance with first (which may change the
// fake host's record); later requests reach the fake host. It counts the requests.
type firstSendHost struct {
	*fakeHost
	first func(p contract.RestartInstanceParams) (*contract.RestartInstanceResult, error)
	mu    sync.Mutex
	sends int
}

func (h *firstSendHost) RestartInstance(ctx context.Context, p contract.RestartInstanceParams) (*contract.RestartInstanceResult, error) {
	h.mu.Lock()
	h.sends++
	n := h.sends
	h.mu.Unlock()
	if n == 1 {
		return h.first(p)
	}
	return h.fakeHost.RestartInstance(ctx, p)
}

// withHost are the fake clients with another host.
type withHost struct {
	*fakeClients
	h Host
}

func (c withHost) Host(string, int) (Host, error) { return c.h, nil }

// A request the host lost after it accepted it is sent again.
func TestApplyResendsARequestTheHostLost(t *testing.T) {
	w := newWorld(newFakeHost())
	// The host accepts the first request, then loses it: restart_status finds no
	// request, as after a restart of the host's WinRM service.
	h := &firstSendHost{fakeHost: w.host, first: func(p contract.RestartInstanceParams) (*contract.RestartInstanceResult, error) {
		return &contract.RestartInstanceResult{Found: true, RestartID: p.RestartID, Phase: "stopping", ServiceName: "MSSQLSERVER"}, nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := New(withHost{w.clients, h}).Apply(ctx, defaultTarget, enable)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if h.sends != 2 || w.host.restarts != 1 || !out.Restarted || !w.host.holds(svcSID) {
		t.Errorf("restart_instance sent %d times (want 2), restarts %d (want 1), restarted %v", h.sends, w.host.restarts, out.Restarted)
	}
}

// An apply that recovers (the host converged despite a lost answer) keeps what the
// read-back says: the observation's and the assessment's warnings.
func TestApplyRecoveredKeepsTheReadBacksWarnings(t *testing.T) {
	t.Run("assessment", func(t *testing.T) {
		w := newWorld(newFakeHost())
		w.engine.Clock = fakeClock{now: time.Now()} // no real pause between retries
		w.checker.tde = []string{"Payroll"}
		w.host.restartErr, w.host.restartErrAfterEffect = errBoom, true
		w.host.statusErr = errBoom
		out, err := w.engine.Apply(context.Background(), defaultTarget, enable)
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		wantWarning(t, out.Warnings, WarnRecovered)
		wantWarning(t, out.Warnings, ifi.WarnTDE)
	})
	t.Run("observation", func(t *testing.T) {
		h := newFakeHost()
		h.onRestart = func() { h.ri.TCPPort = 0 } // after the restart SQL Server cannot be asked: the error log says
		off := false
		h.ri.ErrorLog.Found, h.ri.ErrorLog.Enabled = true, &off
		h.restartErr, h.restartErrAfterEffect = errBoom, true
		h.statusErr = errBoom
		w := newWorld(h)
		w.engine.Clock = fakeClock{now: time.Now()}
		d := enable
		d.Restart = ifi.RestartIfNeededIncludingPrimary
		out, err := w.engine.Apply(context.Background(), defaultTarget, d)
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		wantWarning(t, out.Warnings, WarnRecovered)
		wantWarning(t, out.Warnings, WarnSQLPortUnknown)
	})
}

// renamingHost restarts at the first request but answers "in progress"; its
// restart_status reports the finished restart under another id (as a host may
// after another apply joined it).
type renamingHost struct {
	*fakeHost
	mu    sync.Mutex
	sends int
}

func (h *renamingHost) RestartInstance(ctx context.Context, p contract.RestartInstanceParams) (*contract.RestartInstanceResult, error) {
	h.mu.Lock()
	h.sends++
	h.mu.Unlock()
	res, err := h.fakeHost.RestartInstance(ctx, p)
	if err != nil {
		return nil, err
	}
	r := *res
	r.Finished, r.Phase, r.Instance = false, "starting", nil
	return &r, nil
}

func (h *renamingHost) RestartStatus(ctx context.Context, p contract.RestartStatusParams) (*contract.RestartInstanceResult, error) {
	res, err := h.fakeHost.RestartStatus(ctx, p)
	if err != nil || res == nil {
		return res, err
	}
	r := *res
	r.RestartID = "0123456789abcdef0123456789abcdef"
	return &r, nil
}

// Once the host has the request, the restart it reports is followed to its end
// and never requested again.
func TestApplyNeverResendsARequestTheHostHas(t *testing.T) {
	w := newWorld(newFakeHost())
	h := &renamingHost{fakeHost: w.host}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := New(withHost{w.clients, h}).Apply(ctx, defaultTarget, enable)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if h.sends != 1 || w.host.restarts != 1 {
		t.Errorf("restart_instance sent %d times, restarts %d; want 1 and 1", h.sends, w.host.restarts)
	}
}

// Which failures the recovery may forgive: only the connection's (a lost request
// or answer, a restart no longer followed), never the host's own answer.
func TestConnectionFailure(t *testing.T) {
	scriptErr := &fakeScriptError{code: "lsa_error", err: errBoom}
	for name, c := range map[string]struct {
		err  error
		want bool
	}{
		"not an engine error":          {errBoom, false},
		"set_right, connection":        {&Error{Kind: KindSetRightFailed, Err: errBoom}, true},
		"restart, connection":          {&Error{Kind: KindRestartFailed, Err: errBoom}, true},
		"set_right, the host's answer": {&Error{Kind: KindSetRightFailed, Err: scriptErr}, false},
		"restart, failed on the host":  {&Error{Kind: KindRestartFailed, Err: &RestartOutcomeError{}}, false},
		"restart, no longer followed":  {&Error{Kind: KindRestartFailed, Err: &RestartUnfinishedError{Err: scriptErr}}, true},
		"not ready, connection":        {&Error{Kind: KindNotReady, Err: errBoom}, false},
		"read back failed, connection": {&Error{Kind: KindReadBackFailed, Err: errBoom}, false},
	} {
		if got := connectionFailure(c.err); got != c.want {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}

// lostGrantAnswerHost makes each set_right, then loses a grant's answer.
type lostGrantAnswerHost struct{ *fakeHost }

func (h lostGrantAnswerHost) SetRight(ctx context.Context, p contract.SetRightParams) (*contract.SetRightResult, error) {
	res, err := h.fakeHost.SetRight(ctx, p)
	grants := p.Grant
	for _, c := range p.Changes {
		grants = grants || c.Grant
	}
	if err != nil || !grants {
		return res, err
	}
	return nil, errBoom
}

// A grantee move under restart = "never" whose grant's answer was lost (after the
// revoke changed the host): the host holds the right as asked, though a restart is
// pending, so the apply succeeds with a warning.
func TestApplyRecoversALostSetRightAnswerWithoutRestart(t *testing.T) {
	h := newFakeHost().granted(acctSID)
	h.runningIFI = false // granted since the Engine started: a restart is pending
	w := newWorld(h)
	d := withRestartNever(enable)
	d.PriorGranteeSID = acctSID
	out, err := New(withHost{w.clients, lostGrantAnswerHost{w.host}}).Apply(context.Background(), defaultTarget, d)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	wantWarning(t, out.Warnings, WarnRecovered)
	if out.Restarted || !w.host.holds(svcSID) || out.SQLPort != 1433 || out.Assessment.RestartPending == nil || !*out.Assessment.RestartPending {
		t.Errorf("restarted %v, held %v, port %d, assessment %+v", out.Restarted, w.host.holds(svcSID), out.SQLPort, out.Assessment)
	}
}

// A restart whose answers were lost and whose effect cannot be verified is not
// forgiven: the restart may not have happened.
func TestApplyDoesNotForgiveAnUnverifiedRestart(t *testing.T) {
	h := newFakeHost()
	h.ri.TCPPort = 0 // SQL Server cannot be asked, and there is no error log line
	h.restartErr, h.restartErrAfterEffect = errBoom, true
	h.statusErr = errBoom
	d := enable
	d.Restart = ifi.RestartIfNeededIncludingPrimary
	w := newWorld(h)
	w.clients.checker = nil // no sql block: the restart goes ahead without knowing
	w.engine.Clock = fakeClock{now: time.Now()}
	out, err := w.engine.Apply(context.Background(), defaultTarget, d)
	_ = wantError(t, err, KindRestartFailed)
	if ifi.HasWarning(out.Warnings, WarnRecovered) || out.Assessment == nil || out.Assessment.RestartPending != nil {
		t.Errorf("warnings %v, assessment %+v", codes(out.Warnings), out.Assessment)
	}
}

// A restart with SQL credentials but no known port cannot learn whether a backup
// runs: the gate refuses it, and nothing is changed.
func TestRestartWithoutAPortRefusesWithASQLBlock(t *testing.T) {
	h := newFakeHost()
	h.ri.TCPPort = 0
	off := false
	h.ri.ErrorLog.Found, h.ri.ErrorLog.Enabled = true, &off
	d := enable
	d.Restart = ifi.RestartIfNeededIncludingPrimary
	w := newWorld(h)
	_, err := w.engine.Apply(context.Background(), defaultTarget, d)
	ce := wantError(t, err, KindRefused)
	if ce.Refusal == nil || !strings.Contains(ce.Refusal.Summary, "Running backups unknown") {
		t.Errorf("refusal %+v, want one about running backups", ce.Refusal)
	}
	if h.restarts != 0 || h.setRights != 0 || w.checker.waits != 0 {
		t.Errorf("restarts %d, set_right changes %d, waits %d: want nothing done", h.restarts, h.setRights, w.checker.waits)
	}
}

// The start account cannot be resolved any more when the instance is read after the
// change: the apply fails saying so; after a failed change the recovery keeps the
// change's error.
func TestReadBackThatCannotBeAssessed(t *testing.T) {
	unresolvable := func(h *fakeHost) func(context.Context) error {
		return func(context.Context) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.reads > 0 {
				h.ri.StartAccount, h.ri.StartAccountSID = `CORP\gone`, ""
			}
			return nil
		}
	}
	asAccount := ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceAccount, Restart: ifi.RestartIfNeeded}
	h := newFakeHost()
	h.noReadBack = true
	h.beforeRead = unresolvable(h)
	out, err := newWorld(h).engine.Apply(context.Background(), defaultTarget, asAccount)
	_ = wantError(t, err, KindAssessFailed)
	if !out.Changed || !h.holds(acctSID) {
		t.Errorf("changed %v, held %v", out.Changed, h.holds(acctSID))
	}
	h = newFakeHost()
	h.restartErr = errBoom
	h.statusErr = errBoom
	h.beforeRead = unresolvable(h)
	w := newWorld(h)
	w.engine.Clock = fakeClock{now: time.Now()}
	out, err = w.engine.Apply(context.Background(), defaultTarget, asAccount)
	_ = wantError(t, err, KindRestartFailed)
	if out.Assessment != nil {
		t.Errorf("assessment %+v after a read-back that cannot be assessed", out.Assessment)
	}
}

// Each error says what failed, on which host and instance.
func TestErrorSaysWhatFailed(t *testing.T) {
	tg := defaultTarget
	on := "instance MSSQLSERVER on sql01.example.com"
	for _, c := range []struct {
		e    Error
		want string
	}{
		{Error{Kind: KindHostSetup, Target: tg}, "cannot set up WinRM for sql01.example.com"},
		{Error{Kind: KindObserveFailed, Target: tg, Err: errBoom}, "cannot read " + on + ": " + errBoom.Error()},
		{Error{Kind: KindNotFound, Target: tg}, on + " is not installed (installed instances: none)"},
		{Error{Kind: KindVanished, Target: tg, Instance: &contract.ReadInstanceResult{InstalledInstances: []string{"SALES", "HR"}}},
			on + " is not installed (installed instances: SALES, HR)"},
		{Error{Kind: KindAssessFailed, Target: tg}, "cannot assess IFI on " + on},
		{Error{Kind: KindDecideFailed, Target: tg}, "cannot decide what to change on " + on},
		{Error{Kind: KindRefused, Target: tg}, "refused to change " + on},
		{Error{Kind: KindSetRightFailed, Target: tg, Step: &ifi.Step{Grant: true}}, "cannot grant SeManageVolumePrivilege on " + on},
		{Error{Kind: KindSetRightFailed, Target: tg, Step: &ifi.Step{Grant: false}}, "cannot revoke SeManageVolumePrivilege on " + on},
		{Error{Kind: KindSetRightFailed, Target: tg}, "cannot revoke SeManageVolumePrivilege on " + on},
		{Error{Kind: KindRestartFailed, Target: tg}, "cannot restart " + on},
		{Error{Kind: KindNotReady, Target: tg, SQLPort: 1433}, on + " did not accept connections on port 1433 after the restart"},
		{Error{Kind: KindReadBackFailed, Target: tg}, "cannot read back " + on + " after the change"},
		{Error{Kind: KindCheckFailed, Target: tg}, "IFI is not as asked on " + on + " after the restart"},
		{Error{Kind: KindRestartSlot, Target: tg, MaxParallelRestarts: 3}, "the restart of " + on + " did not begin: 3 other restart(s)"},
		{Error{Kind: Kind(99), Target: tg}, " on " + on},
	} {
		if got := c.e.Error(); !strings.HasPrefix(got, c.want) && !(c.e.Kind == Kind(99) && strings.HasSuffix(got, c.want)) {
			t.Errorf("%s: %q, want it to begin %q", c.e.Kind, got, c.want)
		}
	}
}

// A change of restart_instance that the host refuses (lsa_error) stops the request
// before anything stops: the error names the step, and the outcome says whether an
// earlier change of the same request went through.
func TestRestartRequestWithAFailedChange(t *testing.T) {
	for _, c := range []struct {
		name        string
		failSID     string
		wantChanged bool
	}{
		{"the revoke of the prior grantee fails", acctSID, false},
		{"the grant fails after the revoke", svcSID, true},
	} {
		h := newFakeHost().granted(acctSID)
		h.runningIFI = false
		h.setRightErr = func(_ int, p contract.SetRightParams) error {
			if p.SID == c.failSID {
				return errors.New("LsaAddAccountRights for " + p.SID + ": access denied")
			}
			return nil
		}
		d := enable
		d.PriorGranteeSID = acctSID
		out, err := newWorld(h).engine.Apply(context.Background(), defaultTarget, d)
		e := wantError(t, err, KindSetRightFailed)
		if e.Step == nil || e.Step.SID != c.failSID || out.Changed != c.wantChanged || h.statuses != 0 {
			t.Errorf("%s: step %+v, changed %v (want %v), restart_status %d", c.name, e.Step, out.Changed, c.wantChanged, h.statuses)
		}
	}
}

// restart_instance refused by the host (its script's error) fails at once, without
// asking after the restart.
func TestRestartRefusedByTheHostFailsAtOnce(t *testing.T) {
	h := newFakeHost()
	h.restartErr = &fakeScriptError{code: "clustered", err: errors.New("MSSQLSERVER is a failover cluster instance")}
	_, err := newWorld(h).engine.Apply(context.Background(), defaultTarget, enable)
	_ = wantError(t, err, KindRestartFailed)
	if h.restarts != 1 || h.statuses != 0 {
		t.Errorf("restart_instance %d, restart_status %d; want 1, 0", h.restarts, h.statuses)
	}
}

// A request lost on the way is sent again, even when the host reports another
// restart that finished: that one is not ours.
func TestApplyDoesNotTakeAnotherRestartForItsOwn(t *testing.T) {
	w := newWorld(newFakeHost())
	// The first request is lost before it arrives, while the host's record holds
	// another apply's finished restart.
	h := &firstSendHost{fakeHost: w.host, first: func(contract.RestartInstanceParams) (*contract.RestartInstanceResult, error) {
		w.host.mu.Lock()
		defer w.host.mu.Unlock()
		w.host.last = &contract.RestartInstanceResult{Found: true, RestartID: "00000000000000000000000000000001", Phase: contract.PhaseDone,
			Finished: true, ServiceName: "MSSQLSERVER", ServiceState: contract.StateRunning}
		return nil, errBoom
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e := New(withHost{w.clients, h})
	e.Clock = fakeClock{now: time.Now()}
	out, err := e.Apply(ctx, defaultTarget, enable)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if h.sends != 2 || w.host.restarts != 1 || !out.Restarted || out.Assessment.RestartPending == nil || *out.Assessment.RestartPending {
		t.Errorf("sent %d (want 2), restarts %d (want 1), restarted %v", h.sends, w.host.restarts, out.Restarted)
	}
}

// A request that joined another apply's restart follows that restart's id: sent
// again (the host lost it), it carries that id, so that the host starts at most one.
func TestApplyFollowsTheJoinedRestartsID(t *testing.T) {
	const joined = "0123456789abcdef0123456789abcdef"
	w := newWorld(newFakeHost())
	h := &firstSendHost{fakeHost: w.host, first: func(contract.RestartInstanceParams) (*contract.RestartInstanceResult, error) {
		return &contract.RestartInstanceResult{Found: true, Joined: true, RestartID: joined, Phase: "stopping", ServiceName: "MSSQLSERVER"}, nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := New(withHost{w.clients, h}).Apply(ctx, defaultTarget, enable); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if h.sends != 2 || len(w.host.restartParams) != 1 || w.host.restartParams[0].RestartID != joined {
		t.Errorf("sent %d, the host got %+v; want the joined restart's id sent again", h.sends, w.host.restartParams)
	}
}

// lostAnswerStatusHost restarts at the first request but loses its answer; the
// first restart_status then reports the restart still running.
type lostAnswerStatusHost struct {
	*firstSendHost
	statusMu sync.Mutex
	polls    int
}

func (h *lostAnswerStatusHost) RestartStatus(ctx context.Context, p contract.RestartStatusParams) (*contract.RestartInstanceResult, error) {
	res, err := h.fakeHost.RestartStatus(ctx, p)
	h.statusMu.Lock()
	h.polls++
	n := h.polls
	h.statusMu.Unlock()
	if err != nil || n > 1 {
		return res, err
	}
	r := *res
	r.Finished, r.Phase = false, "starting"
	return &r, nil
}

// A request whose answer was lost, that the host reports under its id, is followed
// to its end and not sent again.
func TestApplyFollowsItsRequestAfterALostAnswer(t *testing.T) {
	w := newWorld(newFakeHost())
	h := &lostAnswerStatusHost{firstSendHost: &firstSendHost{fakeHost: w.host, first: func(p contract.RestartInstanceParams) (*contract.RestartInstanceResult, error) {
		if _, err := w.host.RestartInstance(context.Background(), p); err != nil {
			return nil, err
		}
		return nil, errBoom
	}}}
	e := New(withHost{w.clients, h})
	e.Clock = fakeClock{now: time.Now()}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := e.Apply(ctx, defaultTarget, enable)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if h.sends != 1 || w.host.restarts != 1 || h.polls != 2 || !out.Restarted {
		t.Errorf("sent %d, restarts %d, polls %d, restarted %v; want 1, 1, 2, true", h.sends, w.host.restarts, h.polls, out.Restarted)
	}
}
