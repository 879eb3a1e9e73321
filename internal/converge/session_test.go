package converge

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// One instance, whatever the spelling of its host and name.
func TestInstanceKey(t *testing.T) {
	same := [][2][2]string{
		{{"127.0.2.2", "MSSQLSERVER"}, {"::ffff:127.0.2.2", "mssqlserver"}},
		{{"127.0.2.2", "REPORTING"}, {"[::ffff:7f00:202]", "Reporting"}},
		{{"SQL01.Example.com.", "A"}, {"sql01.example.com", "a"}},
		{{"fe80::1", "X"}, {"FE80:0:0:0:0:0:0:1", "x"}},
	}
	for _, p := range same {
		if a, b := NewInstanceKey(p[0][0], p[0][1]), NewInstanceKey(p[1][0], p[1][1]); a != b {
			t.Errorf("%v and %v are different instances (%v, %v), want one", p[0], p[1], a, b)
		}
	}
	differ := [][2][2]string{
		{{"127.0.2.2", "MSSQLSERVER"}, {"127.0.2.3", "MSSQLSERVER"}},
		{{"sql01", "A"}, {"sql01.example.com", "A"}},
		{{"sql01", "A"}, {"sql01", "B"}},
	}
	for _, p := range differ {
		if NewInstanceKey(p[0][0], p[0][1]) == NewInstanceKey(p[1][0], p[1][1]) {
			t.Errorf("%v and %v are one instance, want two", p[0], p[1])
		}
	}
}

// A second resource for one instance, however spelled, is refused at the instance
// argument, naming both resources; a second identical resource too.
func TestSessionClaim(t *testing.T) {
	s := NewSession(nil)
	on := true
	if err := s.Claim("127.0.2.2", "MSSQLSERVER", &on); err != nil {
		t.Fatalf("the first claim: %v", err)
	}
	for _, host := range []string{"::ffff:127.0.2.2", "127.0.2.2"} {
		err := s.Claim(host, "mssqlserver", nil)
		var ce *Error
		if !errors.As(err, &ce) || ce.Kind != KindRefused || ce.Argument != "instance" || ce.Refusal == nil {
			t.Fatalf("second claim through %s: %v, want a refusal at the instance argument", host, err)
		}
		for _, want := range []string{"Two resources manage one SQL Server instance", `host = "127.0.2.2", instance = "MSSQLSERVER", enabled = true`,
			`host = "` + host + `", instance = "mssqlserver"`, "Nothing was changed", "keep one resource per instance"} {
			if !strings.Contains(ce.Refusal.Summary+": "+ce.Refusal.Detail, want) {
				t.Errorf("second claim through %s: %q lacks %q", host, ce.Refusal.Detail, want)
			}
		}
	}
	if err := s.Claim("127.0.2.3", "MSSQLSERVER", nil); err != nil {
		t.Errorf("another host's instance: %v", err)
	}
}

// One resource reaching a cluster role twice in a run (its refresh, then its plan)
// is not a second resource; another resource through another node is refused at
// the host argument.
func TestSessionClaimRole(t *testing.T) {
	s := NewSession(nil)
	ca := &ifi.ClusterAssessment{Cluster: "CL1", Group: "SQL Server (MSSQLSERVER)", Instance: "MSSQLSERVER", VirtualName: "SQLFCI"}
	node1 := Target{Host: "node1", Instance: "MSSQLSERVER"}
	if err := s.claimRole(node1, ca); err != nil {
		t.Fatal(err)
	}
	if err := s.claimRole(node1, ca); err != nil {
		t.Errorf("the same resource again: %v", err)
	}
	err := s.claimRole(Target{Host: "node2", Instance: "MSSQLSERVER"}, ca)
	var ce *Error
	if !errors.As(err, &ce) || ce.Argument != "host" || !strings.Contains(ce.Refusal.Detail, `the role "SQL Server (MSSQLSERVER)" of cluster CL1`) {
		t.Errorf("through another node: %v, want a refusal at the host argument naming the role", err)
	}
}

// Advice said once per run: the first caller is told it is new; later ones who
// said it first.
func TestSessionOnce(t *testing.T) {
	s := NewSession(nil)
	if _, isNew := s.Once("logon sql01:5985", "A"); !isNew {
		t.Fatal("first: not new")
	}
	if first, isNew := s.Once("logon sql01:5985", "B"); isNew || first != "A" {
		t.Errorf("second: new %v, first %q; want not new, A", isNew, first)
	}
	if _, isNew := s.Once("logon sql02:5985", "B"); !isNew {
		t.Error("another key: not new")
	}
}

// applied runs one apply of defaultTarget in s, failing the test on an error.
func applied(t *testing.T, s *Session, r ApplyRequest) *Result {
	t.Helper()
	res, err := s.Apply(context.Background(), r)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return res
}

func action(a ifi.Action) *ifi.Action { return &a }

// The apply does what its plan said, or refuses before any change; the create of a
// replace after this run's destroy is held to nothing (its plan was made before the
// destroy changed the host).
func TestSessionApplyHoldsThePlan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		create  bool
		planned *ifi.Action
		refused bool
	}{
		{name: "update planned as grant", planned: action(ifi.ActionGrant), refused: true},
		{name: "create planned as grant", create: true, planned: action(ifi.ActionGrant), refused: true},
		{name: "update planned as none", planned: action(ifi.ActionNone), refused: true},
		{name: "update planned as grant_and_restart", planned: action(ifi.ActionGrantAndRestart)},
		{name: "the plan could not tell", create: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(newFakeHost()) // needs grant_and_restart
			s := NewSession(w.engine)
			res, err := s.Apply(context.Background(), ApplyRequest{Request: Request{Target: defaultTarget, Desired: enable}, Create: tc.create, Planned: tc.planned})
			if !tc.refused {
				if err != nil || !w.host.holds(svcSID) || w.host.restarts != 1 {
					t.Fatalf("Apply: %v (granted %v, %d restarts); want grant_and_restart", err, w.host.holds(svcSID), w.host.restarts)
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Kind != KindRefused || ce.Refusal == nil ||
				!strings.Contains(ce.Refusal.Summary, "changed since the plan: apply would grant_and_restart, the plan said "+string(*tc.planned)) {
				t.Fatalf("Apply: %v; want the plan-changed refusal", err)
			}
			if w.host.holds(svcSID) || w.host.restarts != 0 || w.host.setRightOps != 0 {
				t.Errorf("the refused apply changed the host (granted %v, %d restarts)", w.host.holds(svcSID), w.host.restarts)
			}
			if res == nil {
				t.Error("no result beside the refusal")
			}
		})
	}
}

// The create of a replace after this run's destroy goes ahead whatever its plan
// said, and its state holds the planned action (Terraform's planned value).
func TestSessionApplyCreateAfterDestroy(t *testing.T) {
	w := newWorld(newFakeHost().granted(svcSID))
	s := NewSession(w.engine)
	if _, err := s.Destroy(context.Background(), Request{Target: defaultTarget, Desired: enable}); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	p, err := s.Plan(context.Background(), PlanRequest{Request: Request{Target: defaultTarget, Desired: enable}, Create: true})
	if err != nil || actionOf(p) != string(ifi.ActionNone) {
		t.Fatalf("Plan: %s, %v; want none (from what the destroy found)", actionOf(p), err)
	}
	res, err := s.Apply(context.Background(), ApplyRequest{Request: Request{Target: defaultTarget, Desired: enable}, Create: true, Planned: p.Action})
	if err != nil {
		t.Fatalf("Apply: %v; want the grant the destroy took away", err)
	}
	if !w.host.holds(svcSID) || w.host.restarts != 0 {
		t.Errorf("granted %v, %d restarts; want the grant again, no restart", w.host.holds(svcSID), w.host.restarts)
	}
	if res.Action != ifi.ActionNone {
		t.Errorf("planned_action in state %s, want the plan's none", res.Action)
	}
	// Without this run's destroy, the same apply is refused.
	w2 := newWorld(newFakeHost())
	w2.host.runningIFI = true
	if _, err := NewSession(w2.engine).Apply(context.Background(), ApplyRequest{Request: Request{Target: defaultTarget, Desired: enable},
		Create: true, Planned: action(ifi.ActionNone)}); err == nil || w2.host.holds(svcSID) {
		t.Errorf("a create planned as none without a destroy: %v, granted %v; want a refusal", err, w2.host.holds(svcSID))
	}
}

// The state's planned_action after an apply is the plan's when it knew, else what
// the apply did.
func TestSessionApplyAction(t *testing.T) {
	for _, tc := range []struct {
		name         string
		host         *fakeHost
		planned      *ifi.Action
		want         ifi.Action
		wantRestarts int
	}{
		{name: "unknown plan", host: newFakeHost(), want: ifi.ActionGrantAndRestart, wantRestarts: 1},
		{name: "unknown plan, nothing to do", host: newFakeHost().granted(svcSID), want: ifi.ActionNone},
		{name: "planned verify", host: newFakeHost(), planned: action(ifi.ActionVerify), want: ifi.ActionVerify, wantRestarts: 1},
		{name: "planned grant_and_restart", host: newFakeHost(), planned: action(ifi.ActionGrantAndRestart), want: ifi.ActionGrantAndRestart, wantRestarts: 1},
		{name: "planned none", host: newFakeHost().granted(svcSID), planned: action(ifi.ActionNone), want: ifi.ActionNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(tc.host)
			res := applied(t, NewSession(w.engine), ApplyRequest{Request: Request{Target: defaultTarget, Desired: enable}, Planned: tc.planned})
			if res.Action != tc.want || w.host.restarts != tc.wantRestarts {
				t.Errorf("planned_action %q, %d restarts; want %q, %d", res.Action, w.host.restarts, tc.want, tc.wantRestarts)
			}
		})
	}
}

// The memo an apply leaves holds what it asked and its last read: the next plan
// predicts from it without reading the host, and is empty.
func TestSessionApplyMemo(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		t.Run(map[bool]string{true: "enabled", false: "disabled"}[enabled], func(t *testing.T) {
			d := enable
			d.Enabled = enabled
			w := newWorld(newFakeHost())
			if !enabled {
				w.host.granted(svcSID)
			}
			res := applied(t, NewSession(w.engine), ApplyRequest{Request: Request{Target: defaultTarget, Desired: d}, Create: true})
			m := res.Memo
			if m == nil || m.Enabled == nil || *m.Enabled != enabled {
				t.Fatalf("memo %+v, want enabled = %v", m, enabled)
			}
			if m.Read == nil || m.Verification == nil {
				t.Fatalf("memo %+v, want the apply's read", m)
			}
			m = DecodeMemo(m.Encode(), defaultTarget) // as the private state keeps it
			reads := w.host.reads
			p, err := NewSession(w.engine).Plan(context.Background(), PlanRequest{Request: Request{Target: defaultTarget, Desired: d, Memo: m},
				Unchanged: true, Drift: true})
			if err != nil || actionOf(p) != string(ifi.ActionNone) || !p.KeepState || len(p.Warnings) != 0 {
				t.Errorf("the next plan: %s, keep %v, warnings %v, %v; want an empty plan", actionOf(p), p.KeepState, codes(p.Warnings), err)
			}
			if w.host.reads != reads {
				t.Errorf("the next plan read the host %d times, want none", w.host.reads-reads)
			}
		})
	}
}

// Whether an instance takes the cluster path is the engine's choice: the memo's
// read says, else the state, else a read of the host.
func TestSessionApplyPath(t *testing.T) {
	clusterReq := func() (*fakeCluster, *Engine, Request) {
		c := newFakeCluster("SQL01")
		e, _, ct := clusterWorld(c)
		nodes := map[string]string{}
		for _, n := range c.order {
			nodes[n] = addrOf(n)
		}
		return c, e, Request{Target: ct.Target, Desired: withRestartNever(enable), Nodes: nodes, SQLHost: ct.SQLHost}
	}
	t.Run("a cluster node, not known", func(t *testing.T) {
		c, e, r := clusterReq()
		res := applied(t, NewSession(e), ApplyRequest{Request: r, Create: true})
		if !res.Clustered() || res.Outcome != nil {
			t.Fatalf("clustered %v, want the cluster path", res.Clustered())
		}
		for _, n := range c.order {
			if !c.nodes[n].holds(svcSID) {
				t.Errorf("%s lacks the grant, want every possible owner granted", n)
			}
		}
	})
	t.Run("a standalone instance, not known", func(t *testing.T) {
		w := newWorld(newFakeHost())
		res := applied(t, NewSession(w.engine), ApplyRequest{Request: Request{Target: defaultTarget, Desired: enable}, Create: true})
		if res.Clustered() || res.Outcome == nil || !w.host.holds(svcSID) {
			t.Errorf("clustered %v, granted %v; want the standalone path", res.Clustered(), w.host.holds(svcSID))
		}
	})
	t.Run("the state says clustered", func(t *testing.T) {
		w := newWorld(newFakeHost()) // no cluster node: the cluster path fails
		yes := true
		if _, err := NewSession(w.engine).Apply(context.Background(), ApplyRequest{Request: Request{Target: defaultTarget, Desired: enable, Clustered: &yes}}); err == nil || w.host.holds(svcSID) {
			t.Errorf("Apply: %v, granted %v; want the cluster path taken (and failing on a standalone host)", err, w.host.holds(svcSID))
		}
	})
	t.Run("the memo's read outranks the state", func(t *testing.T) {
		w := newWorld(newFakeHost())
		s := NewSession(w.engine)
		m := refreshed(t, s, enable)
		yes := true
		res := applied(t, s, ApplyRequest{Request: Request{Target: defaultTarget, Desired: enable, Memo: m, Clustered: &yes}})
		if res.Clustered() || !w.host.holds(svcSID) {
			t.Errorf("clustered %v, granted %v; want the standalone path the read found", res.Clustered(), w.host.holds(svcSID))
		}
	})
	t.Run("a read that fails changes nothing", func(t *testing.T) {
		w := newWorld(newFakeHost())
		w.host.readErr = func(int) error { return errBoom }
		if _, err := NewSession(w.engine).Apply(context.Background(), ApplyRequest{Request: Request{Target: defaultTarget, Desired: enable}, Create: true}); err == nil ||
			w.host.setRightOps != 0 || w.host.restarts != 0 {
			t.Errorf("Apply: %v (%d set_right, %d restarts); want the error, nothing changed", err, w.host.setRightOps, w.host.restarts)
		}
	})
}

// A run that holds restarts grants without restarting; the restart stays pending.
func TestSessionApplyHoldRestarts(t *testing.T) {
	for _, hold := range []bool{true, false} {
		t.Run(map[bool]string{true: "held", false: "allowed"}[hold], func(t *testing.T) {
			w := newWorld(newFakeHost())
			s := NewSession(w.engine)
			s.HoldRestarts = hold
			m := refreshed(t, s, enable)
			res := applied(t, s, ApplyRequest{Request: Request{Target: defaultTarget, Desired: enable, Memo: m}})
			want, restarts := ifi.ActionGrantAndRestart, 1
			if hold {
				want, restarts = ifi.ActionGrant, 0
			}
			if !w.host.holds(svcSID) || w.host.restarts != restarts || res.Action != want {
				t.Errorf("granted %v, %d restarts, action %s; want granted, %d, %s", w.host.holds(svcSID), w.host.restarts, res.Action, restarts, want)
			}
			if hold && (res.Outcome == nil || res.Outcome.Assessment == nil || res.Outcome.Assessment.RestartPending == nil || !*res.Outcome.Assessment.RestartPending) {
				t.Errorf("restart_pending not true after a held restart")
			}
		})
	}
}

// A refresh: an import adopts what the host has (enabled is whether the right is
// granted) against the arguments' defaults, with no planned action; otherwise the
// state's planned_action stays, and the memo's enabled (what the last apply asked)
// is what the instance is assessed against. A failed create's refresh says what its
// replace does.
func TestSessionRead(t *testing.T) {
	disabled := false
	for _, tc := range []struct {
		name        string
		host        *fakeHost
		desired     ifi.Desired
		memoEnabled *bool
		imported    bool
		planned     ifi.Action
		unverified  *Unverified
		wantEnabled bool
		wantDesired *ifi.Desired
		wantAction  ifi.Action
		wantFailed  bool
	}{
		{name: "import of a granted instance", host: newFakeHost().granted(svcSID), imported: true, planned: ifi.ActionGrant,
			desired:     ifi.Desired{Grantee: ifi.GranteeServiceAccount, Restart: ifi.RestartNever},
			wantEnabled: true, wantDesired: &ImportDefaults, wantAction: ifi.ActionNone},
		{name: "import of an instance without the grant", host: newFakeHost(), imported: true,
			wantEnabled: false, wantDesired: &ImportDefaults, wantAction: ifi.ActionNone},
		{name: "refresh keeps the planned action", host: newFakeHost().granted(svcSID), desired: enable, planned: ifi.ActionGrantAndRestart,
			wantEnabled: true, wantAction: ifi.ActionGrantAndRestart},
		{name: "refresh without a planned action", host: newFakeHost().granted(svcSID), desired: enable,
			wantEnabled: true, wantAction: ifi.ActionNone},
		{name: "the memo's enabled outranks the state's", host: newFakeHost(), desired: enable, memoEnabled: &disabled,
			wantEnabled: false, wantDesired: &ifi.Desired{Enabled: false, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartIfNeeded}, wantAction: ifi.ActionNone},
		{name: "a failed create", host: newFakeHost(), desired: enable, planned: ifi.ActionGrantAndRestart,
			unverified:  &Unverified{Op: "create", At: "2026-12-01T10:00:00Z", Error: "the WinRM connection was reset"},
			wantEnabled: true, wantAction: ifi.ActionGrantAndRestart, wantFailed: true},
		{name: "a failed update", host: newFakeHost(), desired: enable, planned: ifi.ActionGrantAndRestart,
			unverified:  &Unverified{Op: "update", At: "2026-12-01T10:00:00Z", Error: "the WinRM connection was reset"},
			wantEnabled: true, wantAction: ifi.ActionGrantAndRestart},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(tc.host)
			m := NewMemo(defaultTarget)
			m.Enabled = tc.memoEnabled
			res, err := NewSession(w.engine).Read(context.Background(), ReadRequest{Request: Request{Target: defaultTarget, Desired: tc.desired, Memo: m},
				Imported: tc.imported, Planned: tc.planned, Unverified: tc.unverified})
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if res.Enabled != tc.wantEnabled || res.Action != tc.wantAction {
				t.Errorf("enabled %v, planned_action %q; want %v, %q", res.Enabled, res.Action, tc.wantEnabled, tc.wantAction)
			}
			if d := tc.wantDesired; d != nil && (res.Desired.Enabled != d.Enabled || res.Desired.Grantee != d.Grantee || res.Desired.Restart != d.Restart) {
				t.Errorf("assessed against %+v, want %+v", res.Desired, *d)
			}
			if tc.imported && (res.Memo.Enabled == nil || *res.Memo.Enabled != tc.wantEnabled) {
				t.Errorf("the memo's enabled %v, want the adopted %v", res.Memo.Enabled, tc.wantEnabled)
			}
			if res.Assessment == nil {
				t.Fatal("no assessment")
			}
			if tc.memoEnabled != nil && !res.Assessment.Converged {
				t.Error("not converged against the memo's enabled = false")
			}
			fw := warningWith(res.Warnings, ifi.WarnFailedCreate)
			if (fw != nil) != tc.wantFailed {
				t.Errorf("warnings %v, want failed_create %v", codes(res.Warnings), tc.wantFailed)
			}
			if fw != nil && (!strings.Contains(fw.Summary, "its replace restarts SQL Server") || !strings.Contains(fw.Detail, "2026-12-01T10:00:00Z")) {
				t.Errorf("failed_create %+v, want it to say the replace restarts, and when the create failed", fw)
			}
		})
	}
}

// A destroy revokes the grant and remembers what the host had, for the create of a
// replace in this run (TestSessionPlanCreateAfterDestroy); a destroy that failed
// before it read remembers nothing.
func TestSessionDestroy(t *testing.T) {
	w := newWorld(newFakeHost().granted(svcSID))
	s := NewSession(w.engine)
	res, err := s.Destroy(context.Background(), Request{Target: defaultTarget, Desired: enable})
	if err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if w.host.holds(svcSID) || res.Outcome == nil {
		t.Errorf("granted %v after the destroy, outcome %v; want revoked", w.host.holds(svcSID), res.Outcome)
	}
	if b := s.destroyedBefore(Target{Host: "SQL01.EXAMPLE.COM", Instance: "mssqlserver"}); b == nil || b.Assessment == nil || !b.Assessment.PrivilegeGranted {
		t.Errorf("remembered %+v, want the host as it was (granted)", b)
	}
	w2 := newWorld(newFakeHost().granted(svcSID))
	w2.host.readErr = func(int) error { return errBoom }
	s2 := NewSession(w2.engine)
	if _, err := s2.Destroy(context.Background(), Request{Target: defaultTarget, Desired: enable}); err == nil {
		t.Fatal("Destroy: no error from a host that cannot be read")
	}
	if b := s2.destroyedBefore(defaultTarget); b != nil {
		t.Errorf("a failed destroy remembered %+v, want nothing", b)
	}
}

// sessionCluster is a cluster (SQL01 granted as asked) and a request naming its
// nodes, through SQL01.
func sessionCluster(granted ...string) (*fakeCluster, *Engine, Request) {
	c := newFakeCluster(granted...)
	e, _, ct := clusterWorld(c)
	nodes := map[string]string{}
	for _, n := range c.order {
		nodes[n] = addrOf(n)
	}
	return c, e, Request{Target: ct.Target, Desired: withRestartNever(enable), Nodes: nodes, SQLHost: ct.SQLHost}
}

// A refresh of a failover cluster instance not known as one: the host's read says
// clustered, so the cluster path reads every node; the result has the cluster part
// and the owner's assessment, the session keeps the read for the plan, and the
// memo keeps no read for the next operation. The NTLM fallback is said.
func TestSessionReadCluster(t *testing.T) {
	c, e, r := sessionCluster("SQL01", "SQL02", "SQL03")
	c.nodes["SQL01"].ntlm = "no SPN for sql01"
	s := NewSession(e)
	r.Memo = NewMemo(r.Target) // a read kept before the instance was known clustered
	r.Memo.Read, r.Memo.ReadAt, r.Memo.SQLPort = &contract.ReadInstanceResult{Found: true}, fakeBoot, 1433
	res, err := s.Read(context.Background(), ReadRequest{Request: r})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if !res.Clustered() || res.Outcome != nil {
		t.Fatalf("clustered %v, outcome %v; want the cluster path", res.Clustered(), res.Outcome)
	}
	if c.reads == 0 {
		t.Error("no read_cluster; want every node read")
	}
	if res.Assessment == nil || res.Assessment != res.Cluster.Cluster.OwnerAssessment {
		t.Errorf("assessment %+v, want the owner's", res.Assessment)
	}
	if seen := s.seenCluster(r.Target); seen == nil || seen != res.Cluster {
		t.Errorf("the session kept %v of the cluster, want this read", seen)
	}
	if res.Memo.Read != nil || res.Memo.Verification != nil || res.Memo.SQLPort != 0 {
		t.Errorf("memo %+v keeps a read; want none after a cluster's", res.Memo)
	}
	if res.NTLMFallback != "no SPN for sql01" {
		t.Errorf("NTLM fallback %q, want it said", res.NTLMFallback)
	}
}

// A refresh of an instance the state says is not clustered reads it standalone;
// one whose read fails, or whose cluster cannot be read, is the error.
func TestSessionReadClusterPaths(t *testing.T) {
	no := false
	w := newWorld(newFakeHost().granted(svcSID))
	res, err := NewSession(w.engine).Read(context.Background(), ReadRequest{Request: Request{Target: defaultTarget, Desired: enable, Clustered: &no}})
	if err != nil || res.Clustered() || res.Outcome == nil || res.Assessment == nil {
		t.Fatalf("Read: clustered %v, %v; want the standalone path", res.Clustered(), err)
	}
	w2 := newWorld(newFakeHost())
	w2.host.readErr = func(int) error { return errBoom }
	if res, err := NewSession(w2.engine).Read(context.Background(), ReadRequest{Request: Request{Target: defaultTarget, Desired: enable}}); err == nil || res.Assessment != nil {
		t.Errorf("Read of an unreadable host: %v, assessment %v; want the error", err, res.Assessment)
	}
	c, e, r := sessionCluster("SQL01")
	c.nodes["SQL01"].clusterErr = errors.New("the cluster service is not running")
	s := NewSession(e)
	res, err = s.Read(context.Background(), ReadRequest{Request: r})
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindClusterReadFailed || res.Cluster != nil || res.Assessment != nil {
		t.Errorf("Read of a cluster that cannot be read: %v, cluster %v; want the error", err, res.Cluster)
	}
	if s.seenCluster(r.Target) != nil {
		t.Error("the session kept a failed read of the cluster")
	}
}

// The import of a failover cluster instance adopts what its owner has: not
// granted, so enabled = false, in the result and the memo.
func TestSessionReadClusterImport(t *testing.T) {
	_, e, r := sessionCluster()
	yes := true
	r.Clustered = &yes
	res, err := NewSession(e).Read(context.Background(), ReadRequest{Request: r, Imported: true, Planned: ifi.ActionGrant})
	if err != nil || !res.Clustered() {
		t.Fatalf("Read: clustered %v, %v", res.Clustered(), err)
	}
	if res.Enabled || res.Memo.Enabled == nil || *res.Memo.Enabled || res.Action != ifi.ActionNone {
		t.Errorf("enabled %v, memo's %v, action %q; want the host's false, none", res.Enabled, res.Memo.Enabled, res.Action)
	}
	if d := res.Desired; !d.Enabled || d.Grantee != ifi.GranteeServiceSID || d.Restart != ifi.RestartIfNeeded {
		t.Errorf("assessed against %+v, want the arguments' defaults", d)
	}
}

// A refresh of a failover cluster instance whose owner cannot be read: the result
// still has an assessment (of the instance, nothing known), never nil.
func TestSessionReadClusterOwnerUnreadable(t *testing.T) {
	c, e, r := sessionCluster("SQL01", "SQL02", "SQL03")
	c.owner = "SQL02"
	c.nodes["SQL02"].down = true
	yes := true
	r.Clustered = &yes
	res, err := NewSession(e).Read(context.Background(), ReadRequest{Request: r})
	if err != nil || !res.Clustered() {
		t.Fatalf("Read: clustered %v, %v", res.Clustered(), err)
	}
	if res.Cluster.Cluster.OwnerAssessment != nil {
		t.Fatalf("the owner assessed %+v, want nothing known of it", res.Cluster.Cluster.OwnerAssessment)
	}
	if res.Assessment == nil || res.Assessment.Instance != "MSSQLSERVER" || res.Assessment.PrivilegeGranted {
		t.Errorf("assessment %+v, want one of MSSQLSERVER, nothing known", res.Assessment)
	}
}

// The destroy of a failover cluster instance revokes on every possible owner, on
// the cluster path, and says the NTLM fallback; the memo's said conditions are
// replaced by the destroy's (none of them standing).
func TestSessionDestroyCluster(t *testing.T) {
	c, e, r := sessionCluster("SQL01", "SQL02", "SQL03")
	c.nodes["SQL01"].ntlm = "no SPN for sql01"
	yes := true
	r.Clustered, r.Desired = &yes, enable
	r.Memo = NewMemo(r.Target)
	r.Memo.Said = []string{"0123456789abcdef"}
	res, err := NewSession(e).Destroy(context.Background(), r)
	if err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	for _, n := range c.order {
		if c.nodes[n].holds(svcSID) {
			t.Errorf("%s still holds the right", n)
		}
	}
	if !res.Clustered() || res.Outcome != nil {
		t.Errorf("clustered %v, want the cluster path", res.Clustered())
	}
	wantWarning(t, res.Warnings, ifi.WarnStaysOnDestroy)
	if len(res.Memo.Said) != 0 {
		t.Errorf("the memo holds %v as said; want what the destroy found (nothing standing)", res.Memo.Said)
	}
	if res.NTLMFallback != "no SPN for sql01" {
		t.Errorf("NTLM fallback %q, want it said by the destroy", res.NTLMFallback)
	}
}

// The data source reads a standalone instance standalone, a failover cluster
// instance on the cluster path against the grantee asked; a read that fails is
// the error.
func TestSessionDescribe(t *testing.T) {
	w := newWorld(newFakeHost().granted(svcSID))
	w.host.ntlm = "no SPN for sql01"
	s := NewSession(w.engine)
	res, err := s.Describe(context.Background(), Request{Target: defaultTarget}, "")
	if err != nil || res.Clustered() || res.Outcome == nil || res.Assessment == nil || !res.Assessment.PrivilegeGranted {
		t.Fatalf("Describe: clustered %v, assessment %+v, %v; want the standalone instance, granted", res.Clustered(), res.Assessment, err)
	}
	if res.NTLMFallback != "no SPN for sql01" {
		t.Errorf("NTLM fallback %q, want it said", res.NTLMFallback)
	}
	w2 := newWorld(newFakeHost())
	w2.host.readErr = func(int) error { return errBoom }
	if res, err := NewSession(w2.engine).Describe(context.Background(), Request{Target: defaultTarget}, ""); err == nil || res.Assessment != nil {
		t.Errorf("Describe of an unreadable host: %v, assessment %v; want the error", err, res.Assessment)
	}

	c, e, r := sessionCluster("SQL01", "SQL02", "SQL03")
	res, err = NewSession(e).Describe(context.Background(), r, ifi.GranteeServiceAccount)
	if err != nil || !res.Clustered() || res.Outcome != nil {
		t.Fatalf("Describe: clustered %v, %v; want the cluster path", res.Clustered(), err)
	}
	if a := res.Cluster.Cluster.OwnerAssessment; a == nil || a.PrivilegeGranted || a.GranteeSID != a.ServiceAccountSID {
		t.Errorf("owner assessed %+v; want against the service account, which holds nothing", a)
	}
	c.nodes["SQL01"].clusterErr = errors.New("the cluster service is not running")
	res, err = NewSession(e).Describe(context.Background(), r, "")
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindClusterReadFailed || res.Clustered() {
		t.Errorf("Describe of a cluster that cannot be read: %v, clustered %v; want the error", err, res.Clustered())
	}
}

// An IPv6 address is its canonical form, not an IPv4 one.
func TestInstanceKeyIPv6(t *testing.T) {
	if k := NewInstanceKey("FE80:0:0:0:0:0:0:1", "x"); k.Host != "fe80::1" {
		t.Errorf("host %q, want fe80::1", k.Host)
	}
	if NewInstanceKey("fe80::1", "X") == NewInstanceKey("fe80::2", "X") {
		t.Error("fe80::1 and fe80::2 are one instance, want two")
	}
}

// The nodes argument gives a node's address even when it names only one node
// (spelled in another case); the others are reached at their names.
func TestSessionReadClusterOneNodeGiven(t *testing.T) {
	_, e, r := sessionCluster("SQL01", "SQL02", "SQL03")
	r.Nodes = map[string]string{"sql02": addrOf("SQL02")}
	r.Target.Host = addrOf("SQL01")
	yes := true
	r.Clustered = &yes
	res, err := NewSession(e).Read(context.Background(), ReadRequest{Request: r})
	if err != nil || !res.Clustered() {
		t.Fatalf("Read: clustered %v, %v", res.Clustered(), err)
	}
	if n := nodeStateOf(t, res.Cluster.Cluster, "SQL02"); !n.Reachable || n.Address != addrOf("SQL02") {
		t.Errorf("SQL02 %+v; want read at %s", n, addrOf("SQL02"))
	}
	if n := nodeStateOf(t, res.Cluster.Cluster, "SQL03"); n.Reachable {
		t.Errorf("SQL03 %+v; want unreachable at its name", n)
	}
}

// An apply whose first read of the host fails changes nothing, even when the next
// read would succeed; an apply that reads the host to know its path applies from
// that read, reading no more than an apply that knew.
func TestSessionApplyPathRead(t *testing.T) {
	w := newWorld(newFakeHost())
	w.host.readErr = func(n int) error {
		if n == 1 {
			return errBoom
		}
		return nil
	}
	if _, err := NewSession(w.engine).Apply(context.Background(), ApplyRequest{Request: Request{Target: defaultTarget, Desired: enable}, Create: true}); err == nil ||
		w.host.setRightOps != 0 || w.host.restarts != 0 {
		t.Errorf("Apply: %v (%d set_right, %d restarts); want the error, nothing changed", err, w.host.setRightOps, w.host.restarts)
	}
	no := false
	known := newWorld(newFakeHost())
	applied(t, NewSession(known.engine), ApplyRequest{Request: Request{Target: defaultTarget, Desired: enable, Clustered: &no}, Create: true})
	unknown := newWorld(newFakeHost())
	applied(t, NewSession(unknown.engine), ApplyRequest{Request: Request{Target: defaultTarget, Desired: enable}, Create: true})
	if unknown.host.reads != known.host.reads {
		t.Errorf("%d reads of the host, want %d (as when the path is known)", unknown.host.reads, known.host.reads)
	}
}

// A refresh keeps the memo's lesson of a restart that left IFI as it was: the next
// apply still knows it.
func TestSessionReadKeepsTheLesson(t *testing.T) {
	w := newWorld(newFakeHost().granted(svcSID))
	m := NewMemo(defaultTarget)
	m.IneffectiveRestart = &ifi.IneffectiveRestart{StartAccountSID: acctSID, Holders: []string{svcSID}}
	res, err := NewSession(w.engine).Read(context.Background(), ReadRequest{Request: Request{Target: defaultTarget, Desired: enable, Memo: m}})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if l := res.Memo.IneffectiveRestart; l == nil || l.StartAccountSID != acctSID {
		t.Errorf("the memo's lesson %+v after the refresh, want it kept", l)
	}
}

// A refresh is done with its host once it has read it: the engine tells the
// host's client so (IdleReleaser), after the read, so that the connection kept for a
// next operation is not held through the rest of a fleet's refresh. A plan and an
// apply, whose next operation may follow at once, keep it.
func TestSessionRefreshReleasesTheHostsIdleConnection(t *testing.T) {
	w := newWorld(newFakeHost())
	s := NewSession(w.engine)
	p, err := s.Plan(context.Background(), PlanRequest{Request: Request{Target: defaultTarget, Desired: enable}, Create: true})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	applied(t, s, ApplyRequest{Request: Request{Target: defaultTarget, Desired: enable}, Create: true, Planned: p.Action})
	if got := w.host.releasedAfter; len(got) != 0 {
		t.Fatalf("a create's plan and apply released the host's idle connection after %v reads, want it kept", got)
	}
	refreshed(t, NewSession(w.engine), enable)
	if got, want := w.host.releasedAfter, []int{w.host.reads}; len(got) != 1 || got[0] != want[0] || w.host.reads == 0 {
		t.Errorf("the refresh released the host's idle connection after %v reads (of %d), want once, after its read", got, w.host.reads)
	}
}
