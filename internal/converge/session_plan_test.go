package converge

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// The rules of Session.Plan, on the fake host: what planned_action a user sees, and
// what the plan says with it.

// refreshed is the memo a plan's refresh of defaultTarget against d leaves in s's
// run (Session.Read).
func refreshed(t *testing.T, s *Session, d ifi.Desired) *Memo {
	t.Helper()
	res, err := s.Read(context.Background(), ReadRequest{Request: Request{Target: defaultTarget, Desired: d}})
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	return res.Memo
}

// actionOf is a prediction's planned_action, "(unknown)" when the plan cannot tell.
func actionOf(p *Prediction) string {
	if p == nil || p.Action == nil {
		return "(unknown)"
	}
	return string(*p.Action)
}

// warningWith is the first warning of ws with code, nil when none.
func warningWith(ws []ifi.Warning, code string) *ifi.Warning {
	for i := range ws {
		if ws[i].Code == code {
			return &ws[i]
		}
	}
	return nil
}

func pendingRestart() *fakeHost {
	h := newFakeHost().granted(svcSID)
	h.runningIFI = false // granted, not restarted since
	return h
}

func withoutIFI() *fakeHost {
	h := newFakeHost()
	h.runningIFI = true // revoked, not restarted since
	return h
}

// A plan that cannot know the instance, the provider or the arguments predicts an
// unknown action (the apply may change anything, restart included) without
// touching the host; it says why, except when the instance has no name yet to say
// it with.
func TestSessionPlanUnknown(t *testing.T) {
	for _, tc := range []struct {
		name    string
		req     func(*PlanRequest)
		wantWhy string // "": no warning
	}{
		{"host or instance unknown", func(r *PlanRequest) { r.NameUnknown = true }, ""},
		{"provider configuration unknown", func(r *PlanRequest) { r.ConfigUnknown = true }, "the provider's configuration is not known until apply"},
		{"an argument unknown", func(r *PlanRequest) { r.ArgsUnknown = true }, "some of its arguments are not known until apply"},
	} {
		for _, create := range []bool{true, false} {
			t.Run(tc.name+map[bool]string{true: ", create", false: ", update"}[create], func(t *testing.T) {
				w := newWorld(newFakeHost())
				r := PlanRequest{Request: Request{Target: defaultTarget, Desired: enable}, Create: create}
				tc.req(&r)
				p, err := NewSession(w.engine).Plan(context.Background(), r)
				if err != nil {
					t.Fatalf("Plan: %v", err)
				}
				if p.Action != nil {
					t.Errorf("planned_action %s, want unknown", actionOf(p))
				}
				if !slices.Equal(p.MayChange, ifi.AllFields) {
					t.Errorf("may change %v, want every fact", p.MayChange)
				}
				if w.host.reads != 0 || w.checker.checks != 0 {
					t.Errorf("the plan read the host (%d reads, %d SQL checks), want none", w.host.reads, w.checker.checks)
				}
				if tc.wantWhy == "" {
					if len(p.Warnings) != 0 {
						t.Errorf("warnings %v, want none", codes(p.Warnings))
					}
					return
				}
				if len(p.Warnings) != 1 || p.Warnings[0].Code != ifi.WarnPlannedAction ||
					!strings.Contains(p.Warnings[0].Summary, "apply may restart SQL Server (not known at plan time)") ||
					!strings.Contains(p.Warnings[0].Detail, tc.wantWhy) || !strings.Contains(p.Warnings[0].Detail, defaultTarget.Host) {
					t.Errorf("warnings %+v, want one planned_action warning naming the host and saying %q", p.Warnings, tc.wantWhy)
				}
			})
		}
	}
}

// An update is predicted from the read the state holds (the plan's refresh), not
// from a read of its own: an unverified change is verified, no read is unknown,
// and otherwise the action is ifi.Predict's on that read.
func TestSessionPlanUpdate(t *testing.T) {
	unverified := &Unverified{Op: "update", At: "2026-12-01T10:00:00Z", Error: "the WinRM connection was reset"}
	for _, tc := range []struct {
		name       string
		host       *fakeHost
		refresh    bool            // the state holds the refresh's read
		afterwards func(*fakeHost) // the host changes after the refresh
		unverified *Unverified
		want       string // the planned_action, or "(unknown)" when none is known
		wantWarn   string // a planned_action warning's text; "": no warning
	}{
		{name: "unverified update", host: newFakeHost(), refresh: true, unverified: unverified,
			want: string(ifi.ActionVerify), wantWarn: "The update of instance MSSQLSERVER on sql01.example.com at 2026-12-01T10:00:00Z failed after its change was sent (the WinRM connection was reset)"},
		{name: "unverified update without a read", host: newFakeHost(), unverified: unverified,
			want: string(ifi.ActionVerify), wantWarn: "this update reads the instance, finishes what is missing"},
		{name: "no read in the state", host: newFakeHost(),
			want: "(unknown)", wantWarn: "the state holds no read of it (a plan with refresh records one)"},
		{name: "the read lacks the grant", host: newFakeHost(), refresh: true,
			want: string(ifi.ActionGrantAndRestart), wantWarn: "MSSQLSERVER"},
		{name: "the read is converged", host: newFakeHost().granted(svcSID), refresh: true,
			want: string(ifi.ActionNone)},
		{name: "the host changed after the refresh: the read counts", host: newFakeHost(), refresh: true,
			afterwards: func(h *fakeHost) { h.granted(svcSID) }, want: string(ifi.ActionGrantAndRestart), wantWarn: "MSSQLSERVER"},
		{name: "the running Engine has IFI without the grant", host: withoutIFI(), refresh: true,
			want: string(ifi.ActionGrant), wantWarn: "MSSQLSERVER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(tc.host)
			s := NewSession(w.engine)
			var m *Memo
			if tc.refresh {
				m = refreshed(t, s, enable)
			}
			if tc.afterwards != nil {
				tc.afterwards(w.host)
			}
			reads, checks := w.host.reads, w.checker.checks
			p, err := s.Plan(context.Background(), PlanRequest{Request: Request{Target: defaultTarget, Desired: enable, Memo: m}, Unverified: tc.unverified})
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if actionOf(p) != tc.want {
				t.Errorf("planned_action %s, want %s", actionOf(p), tc.want)
			}
			if w.host.reads != reads || w.checker.checks != checks {
				t.Errorf("the update's plan read the host (%d reads, %d SQL checks), want none", w.host.reads-reads, w.checker.checks-checks)
			}
			pw := warningWith(p.Warnings, ifi.WarnPlannedAction)
			switch {
			case tc.wantWarn == "" && len(p.Warnings) != 0:
				t.Errorf("warnings %v, want none", codes(p.Warnings))
			case tc.wantWarn != "" && (pw == nil || !strings.Contains(pw.Summary+" "+pw.Detail, tc.wantWarn)):
				t.Errorf("warnings %+v, want a planned_action warning saying %q", p.Warnings, tc.wantWarn)
			}
			if tc.unverified != nil && (pw == nil || !strings.HasPrefix(pw.Summary, "Unverified change of")) {
				t.Errorf("warnings %+v, want the unverified change's", p.Warnings)
			}
		})
	}
}

// Nothing to do and nothing else changed: the plan keeps the state's
// planned_action (an empty plan); a change of anything else, or an action, does not.
func TestSessionPlanKeepState(t *testing.T) {
	for _, tc := range []struct {
		name      string
		host      *fakeHost
		unchanged bool
		want      bool
	}{
		{"converged and unchanged", newFakeHost().granted(svcSID), true, true},
		{"converged, an argument changed", newFakeHost().granted(svcSID), false, false},
		{"unchanged but the host lacks the grant", newFakeHost(), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(tc.host)
			s := NewSession(w.engine)
			m := refreshed(t, s, enable)
			p, err := s.Plan(context.Background(), PlanRequest{Request: Request{Target: defaultTarget, Desired: enable, Memo: m},
				Unchanged: tc.unchanged, Drift: tc.unchanged})
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if p.KeepState != tc.want {
				t.Errorf("keep state %v (planned_action %s), want %v", p.KeepState, actionOf(p), tc.want)
			}
		})
	}
}

// A plan marks unknown exactly the facts its action may change (ifi.MayChange)
// whose value after the apply it cannot tell, shows the others it changes known
// (ifi.Assessment.After), and every other one as the state has it. A create's
// plan shows no value it predicts.
func TestSessionPlanMayChange(t *testing.T) {
	restartUnknown := []ifi.Field{ifi.FieldRestartPending, ifi.FieldVerifiedBy, ifi.FieldIFIEnabled, ifi.FieldMemoryModel}
	grantee := []ifi.Field{ifi.FieldGranteeSID, ifi.FieldPrivilegeGranted}
	for _, tc := range []struct {
		name           string
		host           *fakeHost
		desired        ifi.Desired
		create         bool
		granteeChanged bool
		want           ifi.Action
		wantFields     []ifi.Field
		wantKnown      map[ifi.Field]any
	}{
		{name: "grant", host: newFakeHost(), desired: withRestartNever(enable), want: ifi.ActionGrant,
			wantKnown: map[ifi.Field]any{ifi.FieldPrivilegeGranted: true, ifi.FieldRestartPending: true, ifi.FieldVerifiedBy: "sql_dmv"}},
		{name: "grant and restart", host: newFakeHost(), desired: enable, want: ifi.ActionGrantAndRestart, wantFields: restartUnknown,
			wantKnown: map[ifi.Field]any{ifi.FieldPrivilegeGranted: true, ifi.FieldAvailabilityRole: nil}},
		{name: "none", host: newFakeHost().granted(svcSID), desired: enable, want: ifi.ActionNone},
		{name: "grant to another grantee", host: newFakeHost(), desired: withRestartNever(enable), granteeChanged: true,
			want: ifi.ActionGrant, wantKnown: map[ifi.Field]any{ifi.FieldPrivilegeGranted: true, ifi.FieldRestartPending: true,
				ifi.FieldVerifiedBy: "sql_dmv", ifi.FieldGranteeSID: svcSID}},
		{name: "a create's grant and restart", host: newFakeHost(), desired: enable, create: true,
			want: ifi.ActionGrantAndRestart, wantFields: append([]ifi.Field{ifi.FieldPrivilegeGranted, ifi.FieldRestartPending,
				ifi.FieldVerifiedBy, ifi.FieldIFIEnabled, ifi.FieldAvailabilityRole, ifi.FieldMemoryModel}, grantee...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(tc.host)
			s := NewSession(w.engine)
			var m *Memo
			if !tc.create {
				m = refreshed(t, s, tc.desired)
			}
			p, err := s.Plan(context.Background(), PlanRequest{Request: Request{Target: defaultTarget, Desired: tc.desired, Memo: m},
				Create: tc.create, GranteeChanged: tc.granteeChanged})
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if actionOf(p) != string(tc.want) {
				t.Fatalf("planned_action %s, want %s", actionOf(p), tc.want)
			}
			if !slices.Equal(p.MayChange, tc.wantFields) {
				t.Errorf("may change %v, want %v", p.MayChange, tc.wantFields)
			}
			if !maps.Equal(p.Known, tc.wantKnown) && (len(p.Known) > 0 || len(tc.wantKnown) > 0) {
				t.Errorf("known %v, want %v", p.Known, tc.wantKnown)
			}
			// Together they are what ifi.MayChange lists.
			all := slices.Concat(p.MayChange, slices.Collect(maps.Keys(p.Known)))
			want := ifi.MayChange(tc.want, false, tc.granteeChanged || tc.create)
			for _, f := range want {
				if !slices.Contains(all, f) {
					t.Errorf("%s neither unknown nor known; ifi.MayChange lists it", f)
				}
			}
			for _, f := range all {
				if !slices.Contains(want, f) {
					t.Errorf("%s changes, but ifi.MayChange does not list it", f)
				}
			}
		})
	}
}

// A create's plan reads the host (one read_instance, one SQL check) and predicts
// from it; it says what the apply would say of the instance, and what the create
// asks, for the destroy half of a replace.
func TestSessionPlanCreate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		host     *fakeHost
		tde      []string
		want     ifi.Action
		wantWarn []string
	}{
		{name: "lacking the grant", host: newFakeHost(), want: ifi.ActionGrantAndRestart, wantWarn: []string{ifi.WarnPlannedAction}},
		{name: "converged", host: newFakeHost().granted(svcSID), want: ifi.ActionNone},
		{name: "a standing condition", host: newFakeHost().granted(svcSID), tde: []string{"Payroll"}, want: ifi.ActionNone, wantWarn: []string{ifi.WarnTDE}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(tc.host)
			w.checker.tde = tc.tde
			p, err := NewSession(w.engine).Plan(context.Background(), PlanRequest{Request: Request{Target: defaultTarget, Desired: enable}, Create: true})
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if actionOf(p) != string(tc.want) {
				t.Errorf("planned_action %s, want %s", actionOf(p), tc.want)
			}
			if w.host.reads != 1 || w.checker.checks != 1 {
				t.Errorf("%d reads and %d SQL checks, want one of each", w.host.reads, w.checker.checks)
			}
			if !slices.Equal(codes(p.Warnings), tc.wantWarn) {
				t.Errorf("warnings %v, want %v", codes(p.Warnings), tc.wantWarn)
			}
			want := ifi.Replacement{Host: defaultTarget.Host, Instance: defaultTarget.Instance, Enabled: true, Grantee: ifi.GranteeServiceSID, GranteeSID: svcSID}
			if p.Replacement == nil || *p.Replacement != want {
				t.Errorf("replacement %+v, want %+v", p.Replacement, want)
			}
			if p.Clustered || p.KeepState {
				t.Errorf("clustered %v, keep state %v; want neither", p.Clustered, p.KeepState)
			}
		})
	}
}

// The create of a replace is planned again during the apply, after this run's
// destroy: it predicts from what the destroy found (the plan the user approved),
// without reading the host, however the instance is spelled. A destroy that found
// nothing, or of another host, leaves the create to read the host.
func TestSessionPlanCreateAfterDestroy(t *testing.T) {
	for _, tc := range []struct {
		name      string
		destroy   Target
		failing   bool // the destroy fails before it reads back
		create    Target
		want      ifi.Action
		wantReads bool
	}{
		{name: "the destroyed instance", destroy: defaultTarget, create: defaultTarget, want: ifi.ActionNone},
		{name: "spelled otherwise", destroy: defaultTarget, create: Target{Host: "SQL01.Example.com.", Instance: "mssqlserver"}, want: ifi.ActionNone},
		{name: "destroyed spelled otherwise", destroy: Target{Host: "SQL01.Example.com.", Instance: "MSSQLSERVER"}, create: defaultTarget, want: ifi.ActionNone},
		{name: "another host", destroy: defaultTarget, create: Target{Host: "sql02.example.com", Instance: "MSSQLSERVER"}, want: ifi.ActionGrant, wantReads: true},
		{name: "a failed destroy", destroy: defaultTarget, failing: true, create: defaultTarget, want: ifi.ActionNone, wantReads: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(newFakeHost().granted(svcSID))
			if tc.failing {
				w.host.setRightErr = func(int, contract.SetRightParams) error { return errBoom }
			}
			s := NewSession(w.engine)
			_, err := s.Destroy(context.Background(), Request{Target: tc.destroy, Desired: enable})
			if (err != nil) != tc.failing {
				t.Fatalf("Destroy: %v", err)
			}
			if !tc.failing && w.host.holds(svcSID) {
				t.Fatal("the destroy kept the grant")
			}
			reads, checks := w.host.reads, w.checker.checks
			p, err := s.Plan(context.Background(), PlanRequest{Request: Request{Target: tc.create, Desired: enable}, Create: true})
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if actionOf(p) != string(tc.want) {
				t.Errorf("planned_action %s, want %s", actionOf(p), tc.want)
			}
			if read := w.host.reads != reads || w.checker.checks != checks; read != tc.wantReads {
				t.Errorf("the create's plan read the host: %v (%d reads, %d checks), want %v", read, w.host.reads-reads, w.checker.checks-checks, tc.wantReads)
			}
		})
	}
}

// A create's plan that cannot read the host is an error naming it, not an unknown
// prediction: Terraform plans the create again during its apply, and an unknown
// value where the plan knew one is its "inconsistent final plan".
func TestSessionPlanCreateReadFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"the connection is reset", errBoom},
		{"the connection is refused", transientErr{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(newFakeHost())
			w.host.readErr = func(int) error { return tc.err }
			p, err := NewSession(w.engine).Plan(context.Background(), PlanRequest{Request: Request{Target: defaultTarget, Desired: enable}, Create: true})
			if err == nil {
				t.Fatalf("Plan: planned_action %s, warnings %v; want an error", actionOf(p), codes(p.Warnings))
			}
			if p != nil {
				t.Errorf("prediction %+v beside the error, want none", p)
			}
			if !strings.Contains(err.Error(), defaultTarget.Host) {
				t.Errorf("error %q does not name the host", err)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("error %v (%T), want a *converge.Error", err, err)
			}
		})
	}
}

// A run that holds restarts plans a restart-needing grant as a grant and says which
// restart waits; with nothing to do (or restart = "never" asked anyway) it says
// nothing of it.
func TestSessionPlanHoldRestarts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		host     *fakeHost
		desired  ifi.Desired
		create   bool
		want     ifi.Action
		wantHeld bool
		quiet    bool // no warning at all
	}{
		{name: "update that would restart", host: newFakeHost(), desired: enable, want: ifi.ActionGrant, wantHeld: true},
		{name: "create that would restart", host: newFakeHost(), desired: enable, create: true, want: ifi.ActionGrant, wantHeld: true},
		{name: "restart never asked", host: newFakeHost(), desired: withRestartNever(enable), want: ifi.ActionGrant},
		{name: "a grant without restart", host: withoutIFI(), desired: enable, want: ifi.ActionGrant},
		{name: "converged", host: newFakeHost().granted(svcSID), desired: enable, want: ifi.ActionNone, quiet: true},
		{name: "a pending restart", host: pendingRestart(), desired: enable, want: ifi.ActionNone, quiet: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(tc.host)
			s := NewSession(w.engine)
			s.HoldRestarts = true
			var m *Memo
			if !tc.create {
				m = refreshed(t, s, tc.desired)
			}
			p, err := s.Plan(context.Background(), PlanRequest{Request: Request{Target: defaultTarget, Desired: tc.desired, Memo: m}, Create: tc.create})
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if actionOf(p) != string(tc.want) {
				t.Errorf("planned_action %s, want %s", actionOf(p), tc.want)
			}
			held := warningWith(p.Warnings, ifi.WarnRestartHeld)
			if (held != nil) != tc.wantHeld {
				t.Errorf("warnings %v, want restart_held %v", codes(p.Warnings), tc.wantHeld)
			}
			if held != nil && (!strings.Contains(held.Detail, string(ifi.ActionGrantAndRestart)) || !strings.Contains(held.Summary, "allow_restarts = false")) {
				t.Errorf("restart_held %+v, want it to name grant_and_restart and allow_restarts", held)
			}
			if tc.quiet && len(p.Warnings) != 0 {
				t.Errorf("warnings %v, want none", codes(p.Warnings))
			}
		})
	}
}

// clusterPlanWorld is a Session over a failover cluster instance (SQL01 the owner,
// SQL02 and SQL03 the other possible owners, none holding the right) and the
// request of the resource that manages it through SQL01.
func clusterPlanWorld(d ifi.Desired) (*fakeCluster, *Session, Request) {
	c := newFakeCluster()
	e, _, ct := clusterWorld(c)
	nodes := map[string]string{}
	for _, n := range c.order {
		nodes[n] = addrOf(n)
	}
	return c, NewSession(e), Request{Target: ct.Target, Desired: d, Nodes: nodes, SQLHost: ct.SQLHost}
}

// A plan of a failover cluster instance predicts the cluster path: a create's plan
// reads the cluster and says it found one (the apply then takes the cluster path
// without reading again), with what the read said (here: a virtual name the cluster
// does not report) before the plan's own warnings; an update's plan after this run's
// refresh predicts from what the refresh read, while one whose nodes changed reads
// the cluster again. What may change includes the cluster's attributes.
func TestSessionPlanCluster(t *testing.T) {
	yes := true
	d := withRestartNever(enable)
	t.Run("create", func(t *testing.T) {
		c, s, r := clusterPlanWorld(d)
		c.noVirtualName, r.SQLHost = true, ""
		p, err := s.Plan(context.Background(), PlanRequest{Request: r, Create: true})
		if err != nil {
			t.Fatal(err)
		}
		if !p.Clustered || actionOf(p) != string(ifi.ActionGrant) {
			t.Fatalf("clustered %v, planned %s; want the cluster path's grant", p.Clustered, actionOf(p))
		}
		if cs := codes(p.Warnings); len(cs) == 0 || cs[0] != WarnSQLPortUnknown || cs[len(cs)-1] != ifi.WarnPlannedAction {
			t.Errorf("warnings %v; want the read's warning of the unknown virtual name first, the plan's last", cs)
		}
		if !slices.Contains(p.MayChange, ifi.FieldClusterNodes) || !slices.Contains(p.MayChange, ifi.FieldIFISurvivesFailover) {
			t.Errorf("may change %v; want cluster_nodes and ifi_survives_failover", p.MayChange)
		}
	})
	t.Run("update after this run's refresh", func(t *testing.T) {
		c, s, r := clusterPlanWorld(d)
		r.Clustered = &yes
		res, err := s.Read(context.Background(), ReadRequest{Request: r})
		if err != nil || !res.Clustered() {
			t.Fatalf("refresh: clustered %v, %v", res.Clustered(), err)
		}
		reads := c.reads
		r.Memo = res.Memo
		p, err := s.Plan(context.Background(), PlanRequest{Request: r, NodesUnchanged: true})
		if err != nil || actionOf(p) != string(ifi.ActionGrant) {
			t.Fatalf("plan: %s, %v; want grant", actionOf(p), err)
		}
		if c.reads != reads {
			t.Errorf("the plan read the cluster %d more times; want the refresh's read", c.reads-reads)
		}
		if _, err := s.Plan(context.Background(), PlanRequest{Request: r}); err != nil || c.reads != reads+1 {
			t.Errorf("a plan whose nodes changed: %v, %d reads; want one read of the cluster", err, c.reads-reads)
		}
	})
	t.Run("the cluster cannot be read", func(t *testing.T) {
		c, s, r := clusterPlanWorld(d)
		r.Clustered = &yes
		c.nodes["SQL01"].clusterErr = errors.New("the Cluster service is not running")
		p, err := s.Plan(context.Background(), PlanRequest{Request: r})
		if err != nil || p.Action != nil {
			t.Fatalf("plan: %s, %v; want an unknown prediction", actionOf(p), err)
		}
		if w := warningWith(p.Warnings, ifi.WarnPlannedAction); w == nil || !strings.Contains(w.Detail, "reading its failover cluster at plan time failed") ||
			!strings.Contains(w.Detail, "the Cluster service is not running") {
			t.Errorf("warnings %+v; want the unknown plan to say the cluster read failed, and why", p.Warnings)
		}
	})
	t.Run("two resources, one role", func(t *testing.T) {
		_, s, r := clusterPlanWorld(d)
		r.Clustered = &yes
		if _, err := s.Plan(context.Background(), PlanRequest{Request: r}); err != nil {
			t.Fatal(err)
		}
		other := r
		other.Target.Host = addrOf("SQL02") // the same role through another node
		_, err := s.Plan(context.Background(), PlanRequest{Request: other})
		var ce *Error
		if !errors.As(err, &ce) || ce.Kind != KindRefused || ce.Refusal == nil || !strings.Contains(ce.Refusal.Detail+ce.Refusal.Summary, "SQL Server (MSSQLSERVER)") {
			t.Errorf("the second resource's plan: %v; want the two-resources refusal naming the role", err)
		}
	})
	t.Run("restarts held", func(t *testing.T) {
		_, s, r := clusterPlanWorld(withRestartPolicy(enable, ifi.RestartFailover))
		r.Clustered = &yes
		s.HoldRestarts = true
		p, err := s.Plan(context.Background(), PlanRequest{Request: r})
		if err != nil || actionOf(p) != string(ifi.ActionGrant) {
			t.Fatalf("plan: %s, %v; want the grant without the failover", actionOf(p), err)
		}
		if warningWith(p.Warnings, ifi.WarnRestartHeld) == nil {
			t.Errorf("warnings %v; want the held failover said", codes(p.Warnings))
		}
	})
}

// The plan after a failed update verifies; a run that holds restarts says the
// restart the verify may have made waits, unless the restart policy is never; the
// NTLM fallback is said (the verify may change the host).
func TestSessionPlanUnverifiedHoldRestarts(t *testing.T) {
	u := &Unverified{Op: "update", At: "2026-12-01T10:00:00Z", Error: "the WinRM connection was reset"}
	for _, tc := range []struct {
		name     string
		hold     bool
		restart  ifi.RestartPolicy
		wantHeld bool
	}{
		{name: "held, if_needed", hold: true, restart: ifi.RestartIfNeeded, wantHeld: true},
		{name: "held, never", hold: true, restart: ifi.RestartNever},
		{name: "allowed, if_needed", restart: ifi.RestartIfNeeded},
		{name: "allowed, never", restart: ifi.RestartNever},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(newFakeHost())
			w.host.ntlm = "no SPN for sql01"
			s := NewSession(w.engine)
			s.HoldRestarts = tc.hold
			p, err := s.Plan(context.Background(), PlanRequest{Request: Request{Target: defaultTarget, Desired: withRestartPolicy(enable, tc.restart)}, Unverified: u})
			if err != nil || actionOf(p) != string(ifi.ActionVerify) {
				t.Fatalf("Plan: %s, %v; want verify", actionOf(p), err)
			}
			if held := warningWith(p.Warnings, ifi.WarnRestartHeld) != nil; held != tc.wantHeld {
				t.Errorf("warnings %v, want restart_held %v", codes(p.Warnings), tc.wantHeld)
			}
			if p.NTLMFallback != "no SPN for sql01" {
				t.Errorf("NTLM fallback %q, want it said", p.NTLMFallback)
			}
		})
	}
}

// A memo with a read but no verification of it is no read to predict from.
func TestSessionPlanMemoWithoutVerification(t *testing.T) {
	w := newWorld(newFakeHost())
	m := NewMemo(defaultTarget)
	m.Read, m.ReadAt = w.host.reportLocked("MSSQLSERVER"), fakeBoot
	p, err := NewSession(w.engine).Plan(context.Background(), PlanRequest{Request: Request{Target: defaultTarget, Desired: enable, Memo: m}})
	if err != nil || p.Action != nil {
		t.Errorf("Plan: %s, %v; want unknown", actionOf(p), err)
	}
}

// An update's apply is held to what its plan showed known: one as planned stores
// it; one whose read-back differs (SQL Server did not answer it, so the running
// Engine's IFI is not known) fails, naming the fact, instead of leaving Terraform
// an inconsistent result; the state then holds what the host reports.
func TestSessionApplyHeldToKnownPlan(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sqlFails  bool
		wantError string
	}{
		{name: "as planned"},
		{name: "SQL Server does not answer the read-back", sqlFails: true, wantError: "restart_pending is null, the plan said true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(newFakeHost())
			s := NewSession(w.engine)
			d := withRestartNever(enable)
			m := refreshed(t, s, d)
			p, err := s.Plan(context.Background(), PlanRequest{Request: Request{Target: defaultTarget, Desired: d, Memo: m}, Drift: true})
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if actionOf(p) != string(ifi.ActionGrant) || p.Known[ifi.FieldRestartPending] != true {
				t.Fatalf("plan %s, known %v; want grant with restart_pending true", actionOf(p), p.Known)
			}
			if tc.sqlFails {
				w.checker.checkErr = errors.New("the login's connection was reset")
			}
			res, err := s.Apply(context.Background(), ApplyRequest{Request: Request{Target: defaultTarget, Desired: d, Memo: m}, Planned: p.Action})
			if tc.wantError == "" {
				if err != nil {
					t.Fatalf("Apply: %v", err)
				}
				if perr := ifi.ExpectedAfter(p.Known, res.Outcome.Assessment); perr != nil {
					t.Errorf("the state differs from the plan: %v", perr)
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Kind != KindAfterDiffers || !strings.Contains(err.Error(), tc.wantError) || !ce.Changed {
				t.Fatalf("Apply: %v; want %s saying %q, the host changed (%+v)", err, KindAfterDiffers, tc.wantError, res.Outcome.Assessment)
			}
			if res.Outcome == nil || res.Outcome.Assessment == nil || !res.Outcome.Assessment.PrivilegeGranted {
				t.Errorf("outcome %+v; want the read-back, the right granted", res.Outcome)
			}
		})
	}
}

// A saved plan's apply decides from the host as it is now: a plan that only grants
// (the running Engine still had IFI on), applied after the Engine restarted without
// the right (so the apply would have to grant and restart), is refused as changed
// since the plan, before anything is sent, even within the plan's read freshness.
func TestSessionApplyRefusesHostChangedSincePlan(t *testing.T) {
	h := newFakeHost().granted(svcSID)
	w := newWorld(h)
	s := NewSession(w.engine)
	d := enable
	refreshed(t, s, d) // the instance as the last apply left it
	h.mu.Lock()
	h.holders = nil // revoked outside Terraform: the running Engine keeps IFI
	h.mu.Unlock()
	m := refreshed(t, s, d)
	p, err := s.Plan(context.Background(), PlanRequest{Request: Request{Target: defaultTarget, Desired: d, Memo: m}, Drift: true})
	if err != nil || actionOf(p) != string(ifi.ActionGrant) {
		t.Fatalf("plan %s, %v; want grant", actionOf(p), err)
	}
	// The Engine restarts without the right between the plan and its apply.
	h.mu.Lock()
	started := fakeBoot.Add(30 * time.Minute)
	h.ri.ProcessStartTime = &started
	h.runningIFI = h.effective()
	ops := h.setRightOps
	h.mu.Unlock()
	res, err := NewSession(w.engine).Apply(context.Background(), ApplyRequest{Request: Request{Target: defaultTarget, Desired: d, Memo: m}, Planned: p.Action})
	var ce *Error
	want := "instance MSSQLSERVER on sql01.example.com changed since the plan: apply would grant_and_restart, the plan said grant"
	if !errors.As(err, &ce) || ce.Kind != KindRefused || ce.Refusal == nil || ce.Refusal.Summary != want || ce.Changed {
		t.Fatalf("Apply: %v; want %s %q, nothing changed", err, KindRefused, want)
	}
	if h.setRightOps != ops || h.restarts != 0 || h.holds(svcSID) {
		t.Errorf("the refused apply changed the host: set_right %d -> %d, restarts %d, holds %v", ops, h.setRightOps, h.restarts, h.holds(svcSID))
	}
	if res.Outcome != nil && res.Outcome.Assessment != nil {
		t.Errorf("outcome %+v; want nothing to store", res.Outcome.Assessment)
	}
}

// The plan's read stands for the host only when SQL Server confirms it: an apply
// within the read's freshness whose SQL check gets no answer reads the host again
// rather than deciding from the plan's read; one SQL Server answers from the Engine
// the plan read does not.
func TestSessionApplyUnconfirmedPlanReadReadsTheHost(t *testing.T) {
	for _, tc := range []struct {
		name      string
		checkErr  error
		wantReads int
	}{
		{name: "SQL Server answers from the Engine the plan read", wantReads: 0},
		{name: "SQL Server does not answer", checkErr: errors.New("the login's connection was reset"), wantReads: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost()
			w := newWorld(h)
			s := NewSession(w.engine)
			d := withRestartNever(enable)
			m := refreshed(t, s, d)
			p, err := s.Plan(context.Background(), PlanRequest{Request: Request{Target: defaultTarget, Desired: d, Memo: m}, Drift: true})
			if err != nil || actionOf(p) != string(ifi.ActionGrant) {
				t.Fatalf("plan %s, %v; want grant", actionOf(p), err)
			}
			w.checker.checkErr = tc.checkErr
			reads := h.reads
			_, err = NewSession(w.engine).Apply(context.Background(), ApplyRequest{Request: Request{Target: defaultTarget, Desired: d, Memo: m}, Planned: p.Action})
			if tc.checkErr == nil && err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if got := h.reads - reads; got != tc.wantReads {
				t.Errorf("the apply read the host %d times (%v); want %d", got, err, tc.wantReads)
			}
		})
	}
}
