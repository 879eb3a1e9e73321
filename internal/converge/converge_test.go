package converge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract/contracttest"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

var enable = ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartIfNeeded}

// wantError checks that err is an *Error of kind k and returns it.
func wantError(t *testing.T, err error, k Kind) *Error {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T), want a *converge.Error of kind %s", err, err, k)
	}
	if ce.Kind != k {
		t.Fatalf("error kind %s (%v), want %s", ce.Kind, err, k)
	}
	if ce.Target != defaultTarget {
		t.Errorf("error names %+v, want %+v", ce.Target, defaultTarget)
	}
	if !strings.Contains(ce.Error(), defaultTarget.Host) {
		t.Errorf("error %q does not name the host", ce.Error())
	}
	return ce
}

func codes(ws []ifi.Warning) []string {
	var c []string
	for _, w := range ws {
		c = append(c, w.Code)
	}
	return c
}

func wantWarning(t *testing.T, ws []ifi.Warning, code string) {
	t.Helper()
	if !ifi.HasWarning(ws, code) {
		t.Errorf("warnings %v, want %s", codes(ws), code)
	}
}

// The loop's successful branches: what the user finds in the state afterwards.
func TestApplySucceeds(t *testing.T) {
	for _, tc := range []struct {
		name        string
		host        *fakeHost
		desired     ifi.Desired
		noSQL       bool
		wantGranted bool
		wantIFI     *bool // nil: unverified
		wantChanged bool
		wantRestart bool
		wantWarn    []string
		replicas    []contract.Replica
	}{
		{name: "nothing to do", host: newFakeHost().granted(svcSID), desired: enable,
			wantGranted: true, wantIFI: ptr(true)},
		{name: "grant and restart", host: newFakeHost(), desired: enable,
			wantGranted: true, wantIFI: ptr(true), wantChanged: true, wantRestart: true},
		{name: "revoke and restart", host: newFakeHost().granted(svcSID), desired: ifi.Desired{Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartIfNeeded},
			wantGranted: false, wantIFI: ptr(false), wantChanged: true, wantRestart: true},
		{name: "restart never leaves a pending restart", host: newFakeHost(),
			desired:     ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartNever},
			wantGranted: true, wantIFI: ptr(false), wantChanged: true, wantWarn: []string{ifi.WarnRestartPending}},
		{name: "without SQL the error log verifies and the restart waits on nothing", host: func() *fakeHost {
			h := newFakeHost()
			h.ri.ErrorLog = contract.ErrorLogInfo{Found: true, Enabled: ptr(false)}
			// Windows tells the Engine is in no availability group.
			h.ri.HADR = &contract.HADRInfo{KeyFound: true, Enabled: new(int), KeyWritten: ptrTime(fakeBoot.Add(-time.Hour))}
			return h
		}(), desired: enable, noSQL: true,
			wantGranted: true, wantIFI: ptr(true), wantChanged: true, wantRestart: true, wantWarn: []string{ifi.WarnBackupsUnchecked}},
		{name: "a secondary replica restarts as usual", host: newFakeHost(), desired: enable, replicas: []contract.Replica{{Group: "AG1", Local: true, Role: "SECONDARY", Connected: "CONNECTED", Health: "HEALTHY"}},
			wantGranted: true, wantIFI: ptr(true), wantChanged: true, wantRestart: true},
		{name: "a primary replica restarts when opted in, with a warning", host: newFakeHost(),
			desired:     ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartIfNeededIncludingPrimary},
			replicas:    []contract.Replica{{Group: "AG1", Local: true, Role: "PRIMARY", Connected: "CONNECTED", Health: "HEALTHY"}},
			wantGranted: true, wantIFI: ptr(true), wantChanged: true, wantRestart: true, wantWarn: []string{ifi.WarnPrimaryRestart}},
		{name: "stopped service: grant, no restart", host: func() *fakeHost {
			h := newFakeHost()
			h.ri.ServiceState = contract.StateStopped
			return h
		}(), desired: enable, wantGranted: true, wantChanged: true, wantWarn: []string{ifi.WarnNotRunning}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(tc.host)
			w.engine.Clock = fakeClock{now: time.Now()} // waits end at once: no real pause, and a wait that would not end fails fast
			w.checker.replicas = tc.replicas
			if tc.noSQL {
				w.clients.checker = nil
			}
			out, err := w.engine.Apply(context.Background(), defaultTarget, tc.desired)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			a := out.Assessment
			if a == nil {
				t.Fatal("no assessment to store")
			}
			if out.Enabled != tc.desired.Enabled {
				t.Errorf("enabled in state %v, want the asked %v", out.Enabled, tc.desired.Enabled)
			}
			if a.PrivilegeGranted != tc.wantGranted || w.host.holds(svcSID) != tc.wantGranted {
				t.Errorf("privilege_granted %v (host holds %v), want %v", a.PrivilegeGranted, w.host.holds(svcSID), tc.wantGranted)
			}
			if (a.RunningIFI == nil) != (tc.wantIFI == nil) || (a.RunningIFI != nil && *a.RunningIFI != *tc.wantIFI) {
				t.Errorf("ifi_enabled %v, want %v", contracttest.TriState(a.RunningIFI), contracttest.TriState(tc.wantIFI))
			}
			if out.Changed != tc.wantChanged || out.Restarted != tc.wantRestart || (w.host.restarts > 0) != tc.wantRestart {
				t.Errorf("changed %v restarted %v (host restarts %d), want %v %v", out.Changed, out.Restarted, w.host.restarts, tc.wantChanged, tc.wantRestart)
			}
			if tc.wantRestart && !tc.noSQL && w.checker.waits != 1 {
				t.Errorf("waited %d times for SQL Server after the restart, want 1", w.checker.waits)
			}
			for _, c := range tc.wantWarn {
				wantWarning(t, out.Warnings, c)
			}
			if len(tc.wantWarn) == 0 && len(out.Warnings) > 0 {
				t.Errorf("unexpected warnings %v", codes(out.Warnings))
			}
		})
	}
}

func ptr(b bool) *bool { return &b }

func ptrTime(t time.Time) *time.Time { return &t }

// Failures before anything changed: the state stays as it was (no assessment), the
// host is untouched, and the error says which step failed.
func TestApplyFailsBeforeAnyChange(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*world)
		d     ifi.Desired
		kind  Kind
		check func(*testing.T, *Error)
	}{
		{name: "WinRM client cannot be set up", setup: func(w *world) { w.clients.hostErr = errBoom }, kind: KindHostSetup},
		{name: "read_instance fails", setup: func(w *world) { w.host.readErr = func(int) error { return errBoom } }, kind: KindObserveFailed,
			check: func(t *testing.T, e *Error) {
				if !errors.Is(e, errBoom) {
					t.Errorf("error %v does not wrap the host's error", e)
				}
			}},
		{name: "instance not installed", setup: func(w *world) { w.host.installed = false }, kind: KindNotFound,
			check: func(t *testing.T, e *Error) {
				if e.Instance == nil || e.Installed() != "none" {
					t.Errorf("installed instances %q, want none", e.Installed())
				}
			}},
		{name: "clustered instance needing a restart is refused", setup: func(w *world) { w.host.ri.Clustered = true }, kind: KindRefused,
			check: func(t *testing.T, e *Error) {
				if e.Refusal == nil || !strings.Contains(e.Refusal.Summary, "Clustered") {
					t.Errorf("refusal %+v, want the clustered refusal", e.Refusal)
				}
			}},
		{name: "primary replica needing a restart is refused", setup: func(w *world) {
			w.checker.replicas = []contract.Replica{{Group: "AG2", Local: true, Role: "SECONDARY", Connected: "CONNECTED", Health: "HEALTHY"}, {Group: "AG1", Local: true, Role: "PRIMARY", Connected: "CONNECTED", Health: "HEALTHY"}}
		}, kind: KindRefused, check: func(t *testing.T, e *Error) {
			if e.Refusal == nil || !strings.Contains(e.Refusal.Summary, "Primary availability replica") ||
				!strings.Contains(e.Refusal.Detail, "AG1, AG2") || !strings.Contains(e.Refusal.Detail, "FAILOVER") ||
				!strings.Contains(e.Refusal.Detail, `restart = "if_needed_including_primary"`) {
				t.Errorf("refusal %+v, want the primary-replica refusal naming both groups, the failover and the opt-in", e.Refusal)
			}
		}},
		{name: "without SQL and without Windows' word on the role, a restart is refused", setup: func(w *world) {
			w.clients.checker = nil
			w.host.ri.ErrorLog = contract.ErrorLogInfo{Found: true, Enabled: ptr(false)}
		}, kind: KindRefused, check: func(t *testing.T, e *Error) {
			if e.Refusal == nil || !strings.Contains(e.Refusal.Summary, "role unknown") || !strings.Contains(e.Refusal.Detail, "VIEW SERVER STATE") {
				t.Errorf("refusal %+v, want the unknown-role refusal naming the permission", e.Refusal)
			}
		}},
		{name: "a failed SQL check (a wrong password, a TDS drop, a CA mismatch) leaves the role unknown: refused", setup: func(w *world) {
			w.checker.checkErr = errBoom
			w.host.ri.ErrorLog = contract.ErrorLogInfo{Found: true, Enabled: ptr(false)}
		}, kind: KindRefused, check: func(t *testing.T, e *Error) {
			if e.Refusal == nil || !strings.Contains(e.Refusal.Detail, "asking it failed") {
				t.Errorf("refusal %+v, want the unknown-role refusal", e.Refusal)
			}
		}},
		{name: "a backup running is refused", setup: func(w *world) {
			w.checker.requests = []contract.Request{{Session: 57, Command: "BACKUP DATABASE"}}
		}, kind: KindRefused},
		{name: "a secondary whose group is not healthy is refused", setup: func(w *world) {
			w.checker.replicas = []contract.Replica{{Group: "AG1", Local: true, Role: "SECONDARY", Connected: "CONNECTED", Health: "NOT_HEALTHY"}}
		}, kind: KindRefused},
		{name: "replica resolving its role needing a restart is refused", setup: func(w *world) {
			w.checker.replicas = []contract.Replica{{Group: "AG1", Local: true, Role: "RESOLVING", Connected: "CONNECTED", Health: "HEALTHY"}}
		}, kind: KindRefused},
		{name: "Group Policy that does not list the grantee is refused", setup: func(w *world) {
			w.host.ri.GroupPolicy = contract.GroupPolicyInfo{Known: true, Defined: true, Holders: []contract.Principal{{SID: acctSID}}}
		}, kind: KindRefused},
		{name: "unresolvable start account", setup: func(w *world) {
			w.host.ri.StartAccount, w.host.ri.StartAccountSID = `CORP\gone`, ""
		}, d: ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceAccount, Restart: ifi.RestartIfNeeded}, kind: KindDecideFailed},
		{name: "the first set_right fails", setup: func(w *world) {
			w.host.setRightErr = func(int, contract.SetRightParams) error { return errBoom }
		}, kind: KindSetRightFailed, check: func(t *testing.T, e *Error) {
			if e.Step == nil || !e.Step.Grant || e.Step.SID != svcSID {
				t.Errorf("failed step %+v, want the grant to %s", e.Step, svcSID)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(newFakeHost())
			w.engine.Clock = fakeClock{now: time.Now()} // waits end at once: no real pause, and a wait that would not end fails fast
			tc.setup(w)
			d := tc.d
			if d == (ifi.Desired{}) {
				d = enable
			}
			out, err := w.engine.Apply(context.Background(), defaultTarget, d)
			e := wantError(t, err, tc.kind)
			if e.Changed || out.Changed {
				t.Errorf("changed %v/%v, want nothing changed", e.Changed, out.Changed)
			}
			if out.Assessment != nil {
				t.Errorf("an assessment to store after a failure that changed nothing: %+v", out.Assessment)
			}
			if w.host.holds(svcSID) || w.host.restarts != 0 {
				t.Errorf("the host was changed: holds %v, restarts %d", w.host.holds(svcSID), w.host.restarts)
			}
			if w.host.reads > 1 {
				t.Errorf("%d reads; nothing changed, so nothing to read back", w.host.reads)
			}
			if tc.check != nil {
				tc.check(t, e)
			}
		})
	}
}

// Failures after a change: the error says the host was changed, and the outcome
// says what is true now (read back), so the next plan shows what is left to do.
func TestApplyFailsAfterAChange(t *testing.T) {
	for _, tc := range []struct {
		name          string
		host          func() *fakeHost
		setup         func(*world)
		d             ifi.Desired
		kind          Kind
		wantRestarted bool
		wantGranted   bool
		wantEnabled   bool // the `enabled` the state then holds: the asked value, whatever failed
		wantIFI       *bool
	}{
		{
			name: "the grant fails after the revoke of the previous grantee",
			host: func() *fakeHost { return newFakeHost().granted(acctSID) },
			setup: func(w *world) {
				w.host.setRightErr = func(n int, p contract.SetRightParams) error {
					if p.Grant {
						return errBoom
					}
					return nil
				}
			},
			d:    ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartIfNeeded, PriorGranteeSID: acctSID},
			kind: KindSetRightFailed, wantGranted: false, wantEnabled: true, wantIFI: ptr(true),
		},
		{
			name: "the restart fails and leaves the service stopped",
			host: newFakeHost,
			setup: func(w *world) {
				w.host.restartErr, w.host.restartStops = errBoom, true
				w.engine.Clock = fakeClock{now: time.Now()} // the pauses between the sends pass at once
			},
			d: enable, kind: KindRestartFailed, wantGranted: true, wantEnabled: true, wantIFI: nil,
		},
		{
			name:  "SQL Server does not accept connections after the restart",
			host:  newFakeHost,
			setup: func(w *world) { w.checker.waitErr = context.DeadlineExceeded },
			d:     enable, kind: KindNotReady, wantRestarted: true, wantGranted: true, wantEnabled: true, wantIFI: ptr(true),
		},
		{
			name:  "IFI is not as asked after the restart",
			host:  newFakeHost,
			setup: func(w *world) { w.host.restartNoEffect = true },
			d:     enable, kind: KindCheckFailed, wantRestarted: true, wantGranted: true, wantEnabled: true, wantIFI: ptr(false),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(tc.host())
			tc.setup(w)
			out, err := w.engine.Apply(context.Background(), defaultTarget, tc.d)
			e := wantError(t, err, tc.kind)
			if !e.Changed || !out.Changed {
				t.Errorf("changed %v/%v, want the host reported as changed", e.Changed, out.Changed)
			}
			if e.Restarted != tc.wantRestarted {
				t.Errorf("restarted %v, want %v", e.Restarted, tc.wantRestarted)
			}
			a := out.Assessment
			if a == nil {
				t.Fatalf("no assessment after a change; warnings %v", codes(out.Warnings))
			}
			if a.PrivilegeGranted != tc.wantGranted {
				t.Errorf("privilege_granted %v, want %v", a.PrivilegeGranted, tc.wantGranted)
			}
			if out.Enabled != tc.wantEnabled {
				t.Errorf("enabled in state %v, want %v", out.Enabled, tc.wantEnabled)
			}
			if contracttest.TriState(a.RunningIFI) != contracttest.TriState(tc.wantIFI) {
				t.Errorf("ifi_enabled %s, want %s", contracttest.TriState(a.RunningIFI), contracttest.TriState(tc.wantIFI))
			}
		})
	}
}

// A failed restart that also ends the operation's deadline: the read-back still
// runs, on its own short deadline.
func TestApplyRecoveryOutlivesTheDeadline(t *testing.T) {
	w := newWorld(newFakeHost())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.host.onRestart = cancel
	w.host.restartErr = context.Canceled
	out, err := w.engine.Apply(ctx, defaultTarget, enable)
	_ = wantError(t, err, KindRestartFailed)
	if out.Assessment == nil || !out.Assessment.PrivilegeGranted {
		t.Fatalf("after the failed restart the state says %+v, want the grant read back", out.Assessment)
	}
}

// When the read-back after a failure fails too, nothing is known: the state keeps
// its values and a warning says it may be out of date.
func TestApplyRecoveryCannotReadBack(t *testing.T) {
	w := newWorld(newFakeHost())
	w.engine.Clock = &sleepClock{now: time.Now()} // the retry pauses take no real time
	w.host.restartErr = errBoom
	w.host.readErr = func(n int) error {
		if n > 1 {
			return errBoom
		}
		return nil
	}
	out, err := w.engine.Apply(context.Background(), defaultTarget, enable)
	e := wantError(t, err, KindRestartFailed)
	if !e.Changed {
		t.Error("the error does not say the host was changed")
	}
	if out.Assessment != nil {
		t.Errorf("an assessment although nothing could be read: %+v", out.Assessment)
	}
	wantWarning(t, out.Warnings, WarnStateStale)
}

// The read-back after a successful change fails: the error wraps why and says
// what had been done; nothing is stored.
func TestApplyReadBackFails(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*fakeHost)
		kind  Kind
	}{
		{name: "read_instance fails", kind: KindReadBackFailed, setup: func(h *fakeHost) {
			h.noReadBack = true
			h.readErr = func(n int) error {
				if n == 2 {
					return errBoom
				}
				return nil
			}
		}},
		{name: "the instance is gone", kind: KindVanished, setup: func(h *fakeHost) { h.noReadBack, h.uninstallAfterRead = true, 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(newFakeHost())
			tc.setup(w.host)
			out, err := w.engine.Apply(context.Background(), defaultTarget, enable)
			e := wantError(t, err, tc.kind)
			if !e.Changed || !e.Restarted {
				t.Errorf("changed %v restarted %v, want both", e.Changed, e.Restarted)
			}
			if tc.kind == KindReadBackFailed {
				var inner *Error
				if !errors.As(e.Err, &inner) || inner.Kind != KindObserveFailed || !errors.Is(e, errBoom) {
					t.Errorf("read-back error wraps %v, want the observation's error", e.Err)
				}
			}
			if out.Assessment != nil {
				t.Errorf("an assessment although the read-back failed: %+v", out.Assessment)
			}
		})
	}
}

// restart_instance gets the time the operation has left, minus a margin for the
// read-back, and at least 30 seconds.
func TestRestartTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		left time.Duration // until the deadline; 0: no deadline
		want int
	}{
		{name: "no deadline", want: 600},
		{name: "ten minutes left", left: 10 * time.Minute, want: 570},
		{name: "almost nothing left", left: 10 * time.Second, want: 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(newFakeHost())
			ctx := context.Background()
			if tc.left > 0 {
				dl := time.Now().Add(time.Hour)
				w.engine.Clock = fakeClock{now: dl.Add(-tc.left)}
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, dl)
				defer cancel()
			}
			if _, err := w.engine.Apply(ctx, defaultTarget, enable); err != nil {
				t.Fatal(err)
			}
			if len(w.host.restartParams) != 1 || w.host.restartParams[0].TimeoutSeconds != tc.want {
				t.Fatalf("restart_instance calls %+v, want one with %d seconds", w.host.restartParams, tc.want)
			}
		})
	}
}

// What an observation says when SQL Server cannot be asked.
func TestObserveVerification(t *testing.T) {
	for _, tc := range []struct {
		name       string
		setup      func(*world)
		target     Target
		wantSource ifi.Source
		wantWarn   string
		wantPort   int
	}{
		{name: "SQL Server answers", wantSource: ifi.SourceSQLDMV, wantPort: 1433},
		{name: "sql_port overrides the host's port", target: Target{SQLPort: 14333}, wantSource: ifi.SourceSQLDMV, wantPort: 14333},
		{name: "the SQL client cannot be set up", setup: func(w *world) { w.clients.checkerErr = errBoom },
			wantSource: ifi.SourceErrorLog, wantWarn: WarnSQLSetup},
		{name: "the port is unknown", setup: func(w *world) { w.host.ri.TCPPort = 0 },
			wantSource: ifi.SourceErrorLog, wantWarn: WarnSQLPortUnknown},
		{name: "the SQL check fails", setup: func(w *world) { w.checker.checkErr = errBoom },
			wantSource: ifi.SourceErrorLog, wantWarn: WarnSQLCheck, wantPort: 1433},
		{name: "a stopped service is not asked", setup: func(w *world) { w.host.ri.ServiceState = contract.StateStopped },
			wantSource: ifi.SourceNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(newFakeHost())
			w.host.ri.ErrorLog = contract.ErrorLogInfo{Found: true, Enabled: ptr(false)}
			if tc.setup != nil {
				tc.setup(w)
			}
			tgt := defaultTarget
			tgt.SQLPort = tc.target.SQLPort
			o, err := w.engine.Observe(context.Background(), tgt)
			if err != nil {
				t.Fatal(err)
			}
			if got := o.Observed.Verification.Source; got != tc.wantSource {
				t.Errorf("verified by %s, want %s", got, tc.wantSource)
			}
			if tc.wantWarn != "" {
				wantWarning(t, o.Warnings, tc.wantWarn)
				if d := o.Warnings[0].Detail; !strings.Contains(d, tgt.Host) || !strings.Contains(d, tgt.Instance) {
					t.Errorf("warning %q does not name the instance and host", d)
				}
			} else if len(o.Warnings) > 0 {
				t.Errorf("unexpected warnings %v", codes(o.Warnings))
			}
			if tc.wantPort != 0 && (len(w.checker.targets) != 1 || w.checker.targets[0].Port != tc.wantPort) {
				t.Errorf("SQL Server asked at %+v, want port %d", w.checker.targets, tc.wantPort)
			}
			if tc.wantSource == ifi.SourceNone && w.checker.checks != 0 {
				t.Errorf("SQL Server asked %d times while stopped", w.checker.checks)
			}
		})
	}
}

// A refresh: drift shows as `enabled` holding the opposite of the wish.
func TestRead(t *testing.T) {
	w := newWorld(newFakeHost().granted(svcSID))
	out, err := w.engine.Read(context.Background(), defaultTarget, enable)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Enabled || !out.Assessment.Converged {
		t.Errorf("enabled %v converged %v, want true true", out.Enabled, out.Assessment.Converged)
	}

	w.host.granted() // someone revoked the right and restarted
	out, err = w.engine.Read(context.Background(), defaultTarget, enable)
	if err != nil {
		t.Fatal(err)
	}
	if out.Enabled || out.Assessment.PrivilegeGranted {
		t.Errorf("after the revoke: enabled %v privilege_granted %v, want false false", out.Enabled, out.Assessment.PrivilegeGranted)
	}
	if w.host.setRights != 0 || w.host.restarts != 0 {
		t.Error("a refresh changed the host")
	}

	w.host.installed = false
	_, err = w.engine.Read(context.Background(), defaultTarget, enable)
	_ = wantError(t, err, KindNotFound)
}

// The data source's read: warnings about a wish are left out, those about the
// instance stay.
func TestDescribe(t *testing.T) {
	h := newFakeHost().granted(svcSID)
	h.ri.ServiceSIDType = 0 // a wish warning: the service SID does not count
	w := newWorld(h)
	w.checker.tde = []string{"Payroll"}
	out, err := w.engine.Describe(context.Background(), defaultTarget, "")
	if err != nil {
		t.Fatal(err)
	}
	wantWarning(t, out.Warnings, ifi.WarnTDE)
	for _, c := range wishWarnings {
		if ifi.HasWarning(out.Warnings, c) {
			t.Errorf("warning %s about a wish in the data source's read", c)
		}
	}
	if out.Assessment.GranteeSID != svcSID {
		t.Errorf("grantee_sid %s, want the service SID", out.Assessment.GranteeSID)
	}
}

// The data source's grantee decides whose grant privilege_granted reports: a grant
// to the start account is not a grant to the service SID.
func TestDescribeGrantee(t *testing.T) {
	for _, tc := range []struct {
		grantee     ifi.Grantee
		wantSID     string
		wantGranted bool
	}{
		{"", svcSID, false},
		{ifi.GranteeServiceSID, svcSID, false},
		{ifi.GranteeServiceAccount, acctSID, true},
	} {
		w := newWorld(newFakeHost().granted(acctSID))
		out, err := w.engine.Describe(context.Background(), defaultTarget, tc.grantee)
		if err != nil {
			t.Fatal(err)
		}
		if out.Assessment.GranteeSID != tc.wantSID || out.Assessment.PrivilegeGranted != tc.wantGranted {
			t.Errorf("grantee %q: grantee_sid %s, privilege_granted %v; want %s, %v", tc.grantee,
				out.Assessment.GranteeSID, out.Assessment.PrivilegeGranted, tc.wantSID, tc.wantGranted)
		}
	}
}

// Destroy revokes the grant, never restarts, and says what stays in effect.
func TestDestroy(t *testing.T) {
	t.Run("revokes without a restart", func(t *testing.T) {
		w := newWorld(newFakeHost().granted(svcSID))
		out, err := w.engine.Destroy(context.Background(), defaultTarget, enable)
		if err != nil {
			t.Fatal(err)
		}
		if w.host.holds(svcSID) || w.host.restarts != 0 || !out.Changed {
			t.Errorf("holds %v restarts %d changed %v, want revoked, no restart, changed", w.host.holds(svcSID), w.host.restarts, out.Changed)
		}
		wantWarning(t, out.Warnings, ifi.WarnStaysOnDestroy)
	})
	t.Run("Group Policy lists the grantee: nothing revoked", func(t *testing.T) {
		h := newFakeHost().granted(svcSID)
		h.ri.GroupPolicy = contract.GroupPolicyInfo{Known: true, Defined: true, Holders: []contract.Principal{{SID: svcSID}}}
		w := newWorld(h)
		out, err := w.engine.Destroy(context.Background(), defaultTarget, enable)
		if err != nil {
			t.Fatal(err)
		}
		if !w.host.holds(svcSID) || out.Changed {
			t.Error("revoked a grant the Group Policy lists")
		}
		wantWarning(t, out.Warnings, ifi.WarnGroupPolicy)
	})
	t.Run("the instance is gone", func(t *testing.T) {
		h := newFakeHost()
		h.installed = false
		w := newWorld(h)
		_, err := w.engine.Destroy(context.Background(), defaultTarget, enable)
		_ = wantError(t, err, KindNotFound)
		if h.setRights != 0 {
			t.Error("set_right ran for an instance that is gone")
		}
	})
	t.Run("the revoke fails", func(t *testing.T) {
		w := newWorld(newFakeHost().granted(svcSID))
		w.host.setRightErr = func(int, contract.SetRightParams) error { return errBoom }
		out, err := w.engine.Destroy(context.Background(), defaultTarget, enable)
		e := wantError(t, err, KindSetRightFailed)
		if e.Changed || out.Changed || e.Step == nil || e.Step.Grant || e.Step.SID != svcSID {
			t.Errorf("error %+v, want the failed revoke of %s with nothing changed", e, svcSID)
		}
		if !w.host.holds(svcSID) {
			t.Error("the grant is gone although the revoke failed")
		}
	})
	t.Run("the host cannot be read", func(t *testing.T) {
		w := newWorld(newFakeHost().granted(svcSID))
		w.host.readErr = func(int) error { return errBoom }
		_, err := w.engine.Destroy(context.Background(), defaultTarget, enable)
		_ = wantError(t, err, KindObserveFailed)
	})
}

// The restart's answer is lost and restart_status cannot be read either, but the
// host did restart: the read-back shows the instance as asked, so the apply succeeds
// with a warning naming the error instead of failing (and tainting).
func TestApplyConvergedDespiteTheConnection(t *testing.T) {
	w := newWorld(newFakeHost())
	w.host.restartErr, w.host.restartErrAfterEffect = errBoom, true
	w.host.statusErr = errBoom
	w.engine.Clock = fakeClock{now: time.Now()} // the pause after the lost answer passes at once
	out, err := w.engine.Apply(context.Background(), defaultTarget, enable)
	if err != nil {
		t.Fatalf("Apply = %v; want success with a warning", err)
	}
	if !slices.Contains(codes(out.Warnings), WarnRecovered) {
		t.Fatalf("warnings %v; want %s", codes(out.Warnings), WarnRecovered)
	}
	if out.Assessment == nil || !out.Assessment.PrivilegeGranted || !out.Restarted {
		t.Fatalf("outcome %+v", out)
	}
	if w.host.statuses != 1 { // the host's own answer: waiting does not heal it
		t.Errorf("restart_status asked %d times; want once", w.host.statuses)
	}
}

// The restart's answer is lost and restart_status then meets the network's
// failures (WinRM refusing connections while the host restarts): the engine asks
// again until the host answers, and the apply succeeds as a followed restart, not
// as a recovery.
func TestApplyFollowsTheRestartThroughNetworkFailures(t *testing.T) {
	w := newWorld(newFakeHost())
	w.host.restartErr, w.host.restartErrAfterEffect = transientErr{}, true
	w.host.statusErr, w.host.statusErrs = transientErr{}, 5
	w.engine.Clock = fakeClock{now: time.Now()} // the pauses between attempts pass at once
	out, err := w.engine.Apply(context.Background(), defaultTarget, enable)
	if err != nil {
		t.Fatalf("Apply = %v; want the restart followed to its end", err)
	}
	if slices.Contains(codes(out.Warnings), WarnRecovered) || !out.Restarted {
		t.Fatalf("warnings %v, restarted %v; want the restart seen to finish", codes(out.Warnings), out.Restarted)
	}
	if w.host.statuses != 6 {
		t.Errorf("restart_status asked %d times; want 6 (5 failures, then the answer)", w.host.statuses)
	}
}

// The same lost answers, but the host did not restart: the apply fails and the
// state records what is true (granted, restart pending).
func TestApplyNotConvergedAfterTheConnection(t *testing.T) {
	w := newWorld(newFakeHost())
	w.engine.Clock = &sleepClock{now: time.Now()} // the retry pauses take no real time
	w.host.restartErr = errBoom
	w.host.statusErr = errBoom
	out, err := w.engine.Apply(context.Background(), defaultTarget, enable)
	e := wantError(t, err, KindRestartFailed)
	var unfinished *RestartUnfinishedError
	if !errors.As(e, &unfinished) {
		t.Fatalf("error %v; want the restart reported as not seen to finish", err)
	}
	if out.Assessment == nil || !out.Assessment.PrivilegeGranted {
		t.Fatalf("outcome %+v", out.Assessment)
	}
}

// Every restart_instance request is lost on the way and the host has no record of
// any: the engine sends it at most maxRestartSends times, then says nothing was
// stopped.
func TestApplyRestartRequestNeverArrives(t *testing.T) {
	w := newWorld(newFakeHost())
	w.engine.Clock = &sleepClock{now: time.Now()} // the retry pauses take no real time
	w.host.restartErr = errBoom
	_, err := w.engine.Apply(context.Background(), defaultTarget, enable)
	var unfinished *RestartUnfinishedError
	if !errors.As(err, &unfinished) || !unfinished.NotReceived {
		t.Fatalf("error %v; want the request reported as not received", err)
	}
	if w.host.restarts != maxRestartSends {
		t.Fatalf("restart_instance sent %d times, want %d", w.host.restarts, maxRestartSends)
	}
}

// A restart that ran and failed on the host is reported with the host's account
// (Windows error, error log), at once, without polling to the deadline.
func TestApplyRestartOutcomeFailed(t *testing.T) {
	w := newWorld(newFakeHost())
	w.host.restartResult = &contract.RestartInstanceResult{Found: true, Phase: contract.PhaseDone, Finished: true,
		Error: contract.RestartStartFailed, Message: "MSSQLSERVER stopped but did not start after 3 attempts: it is Stopped (Windows error 1067).",
		Win32ExitCode: 1067, ErrorLogTail: []string{"Error: 17058"}, ServiceState: contract.StateStopped}
	_, err := w.engine.Apply(context.Background(), defaultTarget, enable)
	e := wantError(t, err, KindRestartFailed)
	if e.Restart == nil || e.Restart.Win32ExitCode != 1067 || !strings.Contains(err.Error(), "17058") || w.host.statuses != 0 {
		t.Fatalf("error %v (restart %+v, %d status polls)", err, e.Restart, w.host.statuses)
	}
}

// A restart to turn IFI off that leaves it on, because the start account is in a
// group nested in Administrators that the host does not expand: the apply succeeds
// with a warning and a lesson, and with the lesson the next apply and refresh
// neither restart nor show a diff.
func TestApplyIneffectiveRestartWarnsOnce(t *testing.T) {
	h := newFakeHost().granted(winsid.Administrators, svcSID)
	h.hiddenAdmin = true
	w := newWorld(h)
	disable := ifi.Desired{Enabled: false, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartIfNeeded}
	out, err := w.engine.Apply(context.Background(), defaultTarget, disable)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if h.restarts != 1 || h.holds(svcSID) {
		t.Fatalf("restarts %d, grant held %v: want one restart and the grant revoked", h.restarts, h.holds(svcSID))
	}
	wantWarning(t, out.Warnings, ifi.WarnHiddenMembership)
	a := out.Assessment
	if out.IneffectiveRestart == nil || out.Enabled || a.RestartPending == nil || *a.RestartPending || contracttest.TriState(a.RunningIFI) != "true" {
		t.Fatalf("lesson %v, enabled %v, restart_pending %s, ifi %s; want a lesson, false, false, true",
			out.IneffectiveRestart, out.Enabled, contracttest.TriState(a.RestartPending), contracttest.TriState(a.RunningIFI))
	}

	d := disable
	d.IneffectiveRestart = out.IneffectiveRestart
	rd, err := w.engine.Read(context.Background(), defaultTarget, d)
	if err != nil {
		t.Fatal(err)
	}
	if rd.Enabled || rd.IneffectiveRestart != d.IneffectiveRestart {
		t.Errorf("refresh: enabled %v, lesson %v; want false (no diff) and the lesson kept", rd.Enabled, rd.IneffectiveRestart)
	}
	wantWarning(t, rd.Warnings, ifi.WarnHiddenMembership)
	again, err := w.engine.Apply(context.Background(), defaultTarget, d)
	if err != nil {
		t.Fatal(err)
	}
	if h.restarts != 1 || again.Changed || again.IneffectiveRestart != d.IneffectiveRestart {
		t.Errorf("second apply: restarts %d, changed %v, lesson %v; want no restart, no change, the lesson kept",
			h.restarts, again.Changed, again.IneffectiveRestart)
	}

	// Without the lesson (as before it existed) the next apply restarts again.
	if _, err := w.engine.Apply(context.Background(), defaultTarget, disable); err != nil || h.restarts != 2 {
		t.Errorf("apply without the lesson: err %v, restarts %d; want a second restart", err, h.restarts)
	}
}

// IFI left on by a restart that did not start the Engine anew is not a hidden
// membership: the check fails, naming the restart, and nothing is learned.
func TestApplyRestartWithoutNewProcessIsNotALesson(t *testing.T) {
	h := newFakeHost().granted(svcSID)
	h.restartNoEffect = true
	w := newWorld(h)
	out, err := w.engine.Apply(context.Background(), defaultTarget,
		ifi.Desired{Enabled: false, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartIfNeeded})
	e := wantError(t, err, KindCheckFailed)
	if !strings.Contains(e.Error(), "did not really restart") || out.IneffectiveRestart != nil {
		t.Errorf("error %v, lesson %v; want the check error and no lesson", e, out.IneffectiveRestart)
	}
}

// An apply changes the host in one host operation (one powershell.exe): with a
// restart, restart_instance carries the grant and reads the instance back; without
// one, set_right reads it back. Either way read_instance runs once, before.
func TestApplyChangesInOneOperation(t *testing.T) {
	t.Run("grant and restart", func(t *testing.T) {
		w := newWorld(newFakeHost())
		if _, err := w.engine.Apply(context.Background(), defaultTarget, enable); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		h := w.host
		if h.reads != 1 || h.setRightOps != 0 || h.restarts != 1 || h.statuses != 0 {
			t.Errorf("read_instance %d, set_right %d, restart_instance %d, restart_status %d; want 1, 0, 1, 0",
				h.reads, h.setRightOps, h.restarts, h.statuses)
		}
		p := h.restartParams[0]
		if len(p.Changes) != 1 || p.Changes[0] != (contract.RightChange{SID: svcSID, Grant: true}) || !p.ReadBack {
			t.Errorf("restart_instance params %+v: want the grant to the service SID and a read-back", p)
		}
		if !h.holds(svcSID) {
			t.Error("the grant did not reach the host")
		}
	})
	t.Run("grant without restart", func(t *testing.T) {
		w := newWorld(newFakeHost())
		never := enable
		never.Restart = ifi.RestartNever
		out, err := w.engine.Apply(context.Background(), defaultTarget, never)
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if h := w.host; h.reads != 1 || h.setRightOps != 1 || h.restarts != 0 {
			t.Errorf("read_instance %d, set_right %d, restart_instance %d; want 1, 1, 0", h.reads, h.setRightOps, h.restarts)
		}
		if out.Assessment == nil || !out.Assessment.PrivilegeGranted {
			t.Errorf("the read-back does not show the grant: %+v", out.Assessment)
		}
	})
	// Both rights without a restart: one set_right makes both changes (one
	// powershell.exe), and reads the instance back (issue 41).
	t.Run("both rights without restart in one set_right", func(t *testing.T) {
		w := newWorld(newFakeHost().withLockPages())
		both := enable
		both.Restart = ifi.RestartNever
		on := true
		both.LockPages = &on
		out, err := w.engine.Apply(context.Background(), defaultTarget, both)
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if h := w.host; h.reads != 1 || h.setRightOps != 1 || h.setRights != 2 || h.restarts != 0 {
			t.Errorf("read_instance %d, set_right %d (changes %d), restart_instance %d; want 1, 1 (2), 0", h.reads, h.setRightOps, h.setRights, h.restarts)
		}
		if !w.host.holds(svcSID) || !slices.Contains(w.host.lockHolders, svcSID) {
			t.Errorf("holders after the apply: IFI %v, Lock Pages %v; want the service SID in both", w.host.holders, w.host.lockHolders)
		}
		if a := out.Assessment; a == nil || !a.PrivilegeGranted || a.LockPages == nil || !a.LockPages.Granted {
			t.Errorf("the read-back does not show both grants: %+v", a)
		}
	})
	// The host refuses the second change of the set_right: the first was made, and
	// the error names the one that failed.
	t.Run("both rights, the second refused", func(t *testing.T) {
		w := newWorld(newFakeHost().withLockPages())
		w.host.setRightErr = func(n int, p contract.SetRightParams) error {
			if p.Right != contract.RightLockMemory {
				return nil
			}
			return &fakeScriptError{code: "lsa_error", err: fmt.Errorf("Changing %s for %s on SQL01 failed: Access is denied", p.Right, p.SID)}
		}
		both := enable
		both.Restart = ifi.RestartNever
		on := true
		both.LockPages = &on
		out, err := w.engine.Apply(context.Background(), defaultTarget, both)
		var ce *Error
		if !errors.As(err, &ce) || ce.Kind != KindSetRightFailed || ce.Step == nil || ce.Step.RightOf() != contract.RightLockMemory || !ce.Changed {
			t.Fatalf("Apply: %v (%+v); want Lock Pages' grant failed after a change", err, ce)
		}
		if w.host.setRightOps != 1 || !out.Changed || !w.host.holds(svcSID) {
			t.Errorf("set_right %d, changed %t, IFI holders %v; want one request and the IFI grant made", w.host.setRightOps, out.Changed, w.host.holders)
		}
	})
	t.Run("a change the host refuses stops nothing", func(t *testing.T) {
		w := newWorld(newFakeHost())
		w.host.setRightErr = func(int, contract.SetRightParams) error { return errBoom }
		out, err := w.engine.Apply(context.Background(), defaultTarget, enable)
		e := wantError(t, err, KindSetRightFailed)
		if e.Step == nil || e.Step.SID != svcSID || e.Changed || w.host.restarts != 0 || out.Assessment != nil {
			t.Errorf("error %+v, restarts %d, assessment %v: want the grant step named, nothing changed or restarted", e, w.host.restarts, out.Assessment)
		}
	})
}

// An apply right after the plan's refresh uses that refresh's read_instance instead
// of reading the host again (SQL Server is still asked); an older read, one from the
// future, or none, and the apply reads.
func TestApplyUsesTheFreshPlanRead(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		age       time.Duration
		freshness time.Duration
		noRead    bool
		wantReads int
	}{
		{name: "read 5 s ago", age: 5 * time.Second, wantReads: 0},
		{name: "read at the window's edge", age: DefaultReadFreshness, wantReads: 0},
		{name: "read 31 s ago", age: DefaultReadFreshness + time.Second, wantReads: 1},
		{name: "read in the future", age: -time.Second, wantReads: 1},
		{name: "reuse turned off", age: time.Second, freshness: -1, wantReads: 1},
		{name: "no earlier read", noRead: true, wantReads: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(newFakeHost())
			w.engine.Clock = fakeClock{now: now}
			w.engine.ReadFreshness = tc.freshness
			target := defaultTarget
			if !tc.noRead {
				plan, err := New(w.clients).Read(context.Background(), defaultTarget, enable)
				if err != nil {
					t.Fatal(err)
				}
				target.Read, target.ReadAt = plan.Read, now.Add(-tc.age)
				w.host.reads = 0
			}
			out, err := w.engine.Apply(context.Background(), target, enable)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if w.host.reads != tc.wantReads || w.host.restarts != 1 || !w.host.holds(svcSID) {
				t.Errorf("read_instance %d (want %d), restarts %d, grant held %v", w.host.reads, tc.wantReads, w.host.restarts, w.host.holds(svcSID))
			}
			if w.checker.checks == 0 {
				t.Error("SQL Server was not asked")
			}
			if out.Read == nil || !out.ReadAt.Equal(now) || out.Read.ProcessStartTime.Equal(fakeBoot) {
				t.Errorf("the outcome's read is %v at %v; want the read-back after the restart, at %v", out.Read, out.ReadAt, now)
			}
		})
	}
}

// The apply does what the plan predicted (Desired.Planned), or nothing: a host that
// now needs a restart the plan did not announce is refused before any change, with
// the provider's own words; a host that needs what was planned goes ahead.
func TestApplyKeepsToThePlannedAction(t *testing.T) {
	for _, tc := range []struct {
		name    string
		planned ifi.Action
		wantErr bool
	}{
		{"planned grant_and_restart", ifi.ActionGrantAndRestart, false},
		{"planned grant only", ifi.ActionGrant, true},
		{"planned none", ifi.ActionNone, true},
		{"planned refuse", ifi.ActionRefuse, true},
		{"verify: no expectation", ifi.ActionVerify, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(newFakeHost())
			d := enable
			d.Planned = tc.planned
			out, err := w.engine.Apply(context.Background(), defaultTarget, d)
			if !tc.wantErr {
				if err != nil || out.Action != ifi.ActionGrantAndRestart {
					t.Fatalf("Apply: action %q, err %v; want grant_and_restart", out.Action, err)
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Kind != KindRefused || ce.Refusal == nil {
				t.Fatalf("Apply: %v; want a refusal", err)
			}
			if !strings.Contains(ce.Refusal.Summary, "changed since the plan: apply would grant_and_restart, the plan said "+string(tc.planned)) ||
				!strings.Contains(ce.Refusal.Detail, "Nothing was changed") ||
				strings.Contains(ce.Refusal.Detail, "outside Terraform") { // the apply does not know why the host reads differently
				t.Errorf("refusal %q: %q", ce.Refusal.Summary, ce.Refusal.Detail)
			}
			if out.Changed || w.host.restarts != 0 || w.host.holds(svcSID) {
				t.Errorf("the refused apply changed the host: changed %v, restarts %d, granted %v", out.Changed, w.host.restarts, w.host.holds(svcSID))
			}
		})
	}
}

// An instance gone when read back after a failed restart is not assessed: the
// error stands, and a warning says what it holds now is unknown.
func TestApplyRecoveryFindsTheInstanceGone(t *testing.T) {
	w := newWorld(newFakeHost())
	w.engine.Clock = &sleepClock{now: time.Now()} // the retry pauses take no real time
	w.host.restartErr = errBoom
	w.host.uninstallAfterRead = 1
	out, err := w.engine.Apply(context.Background(), defaultTarget, enable)
	_ = wantError(t, err, KindRestartFailed)
	if out.Assessment != nil {
		t.Errorf("an assessment of an instance that is gone: %+v", out.Assessment)
	}
	wantWarning(t, out.Warnings, WarnStateStale)
}
