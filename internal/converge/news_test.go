package converge

import (
	"context"
	"slices"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// A refresh says a standing condition when it first appears or changes, and again
// when it returns after it ended; other warnings always. An update's apply says
// only what its plan's refresh did not; a create's apply says no standing
// condition (its plan read the host moments ago) and records them as said.
func TestMemoNews(t *testing.T) {
	tde := ifi.Warning{Code: ifi.WarnTDE, Summary: "TDE", Detail: "Payroll"}
	tde2 := ifi.Warning{Code: ifi.WarnTDE, Summary: "TDE", Detail: "Payroll, HR"}
	recovered := ifi.Warning{Code: WarnRecovered, Summary: "recovered"}
	m := &Memo{}
	steps := []struct {
		ws   []ifi.Warning
		want []string
	}{
		{[]ifi.Warning{tde, recovered}, []string{ifi.WarnTDE, WarnRecovered}},
		{[]ifi.Warning{tde, recovered}, []string{WarnRecovered}},
		{[]ifi.Warning{tde2}, []string{ifi.WarnTDE}},
		{nil, nil},
		{[]ifi.Warning{tde2}, []string{ifi.WarnTDE}},
	}
	for i, st := range steps {
		if got := codes(m.news(st.ws)); !slices.Equal(got, st.want) {
			t.Errorf("refresh %d: said %v, want %v", i+1, got, st.want)
		}
	}
	if got := codes(m.told([]ifi.Warning{tde2, recovered}, false)); !slices.Equal(got, []string{WarnRecovered}) {
		t.Errorf("update's apply: said %v, want only what is not standing and already said", got)
	}
	c := &Memo{}
	pending := ifi.Warning{Code: ifi.WarnRestartPending, Summary: "A restart of SQL Server is pending"}
	if got := codes(c.told([]ifi.Warning{tde, pending, recovered}, true)); !slices.Equal(got, []string{ifi.WarnRestartPending, WarnRecovered}) {
		t.Errorf("create's apply: said %v, want what the change brought about and what is not standing, not the TDE its plan said", got)
	}
	if got := codes(c.news([]ifi.Warning{tde, pending})); len(got) != 0 {
		t.Errorf("the refresh after a create: said %v, want nothing (the create's plan said it)", got)
	}

	// An update's apply that finds a condition its plan's refresh did not (a Group
	// Policy set meanwhile) says it.
	gp := ifi.Warning{Code: ifi.WarnGroupPolicy, Summary: "A Group Policy sets the right"}
	u := &Memo{}
	u.news([]ifi.Warning{tde})
	if got := codes(u.told([]ifi.Warning{tde, gp}, false)); !slices.Equal(got, []string{ifi.WarnGroupPolicy}) {
		t.Errorf("update's apply that found a new condition: said %v, want the Group Policy only", got)
	}

	// A create's apply records the conditions it found, and only those: one its
	// memo held before (another resource's address, an earlier life of the
	// instance) that the create did not find is said when a refresh finds it.
	r := &Memo{}
	r.news([]ifi.Warning{gp})
	r.told([]ifi.Warning{tde}, true)
	if got := codes(r.news([]ifi.Warning{tde, gp})); !slices.Equal(got, []string{ifi.WarnGroupPolicy}) {
		t.Errorf("the refresh after a create that found no Group Policy: said %v, want the Group Policy it finds now", got)
	}
}

// A standing condition is said by the first refresh that finds it, then not again,
// run after run, until it changes, ends and returns; the apply after a refresh
// does not repeat it, nor the apply of a create after its plan.
func TestSessionSaysStandingConditionsOnce(t *testing.T) {
	w := newWorld(newFakeHost().granted(svcSID))
	var m *Memo
	for i, st := range []struct {
		tde  []string
		said bool
	}{
		{[]string{"Payroll"}, true},
		{[]string{"Payroll"}, false},
		{[]string{"Payroll"}, false},
		{[]string{"Payroll", "HR"}, true},
		{nil, false},
		{[]string{"Payroll", "HR"}, true},
	} {
		w.checker.tde = st.tde
		res, err := NewSession(w.engine).Read(context.Background(), ReadRequest{Request: Request{Target: defaultTarget, Desired: enable, Memo: m}})
		if err != nil {
			t.Fatalf("refresh %d: %v", i+1, err)
		}
		if said := ifi.HasWarning(res.Warnings, ifi.WarnTDE); said != st.said {
			t.Errorf("refresh %d (TDE on %v): said %v, want %v", i+1, st.tde, said, st.said)
		}
		m = DecodeMemo(res.Memo.Encode(), defaultTarget)
	}

	t.Run("the update's apply after its refresh", func(t *testing.T) {
		w := newWorld(newFakeHost())
		w.checker.tde = []string{"Payroll"}
		s := NewSession(w.engine)
		m := refreshed(t, s, enable)
		res := applied(t, s, ApplyRequest{Request: Request{Target: defaultTarget, Desired: enable, Memo: m}})
		if ifi.HasWarning(res.Warnings, ifi.WarnTDE) {
			t.Errorf("the apply said %v again, want what the refresh said left out", codes(res.Warnings))
		}
	})
	t.Run("the create's apply after its plan", func(t *testing.T) {
		w := newWorld(newFakeHost())
		w.checker.tde = []string{"Payroll"}
		s := NewSession(w.engine)
		p, err := s.Plan(context.Background(), PlanRequest{Request: Request{Target: defaultTarget, Desired: enable}, Create: true})
		if err != nil || !ifi.HasWarning(p.Warnings, ifi.WarnTDE) {
			t.Fatalf("the create's plan: %v, %v; want it to say TDE", codes(p.Warnings), err)
		}
		res := applied(t, s, ApplyRequest{Request: Request{Target: defaultTarget, Desired: enable}, Create: true, Planned: p.Action})
		if ifi.HasWarning(res.Warnings, ifi.WarnTDE) {
			t.Errorf("the apply said %v, want the plan's TDE left out", codes(res.Warnings))
		}
		next, err := NewSession(w.engine).Read(context.Background(), ReadRequest{Request: Request{Target: defaultTarget, Desired: enable, Memo: res.Memo}})
		if err != nil || ifi.HasWarning(next.Warnings, ifi.WarnTDE) {
			t.Errorf("the next run's refresh: %v, %v; want TDE not said again", codes(next.Warnings), err)
		}
	})
	t.Run("the create's apply says what its change brought about", func(t *testing.T) {
		w := newWorld(newFakeHost())
		d := withRestartNever(enable)
		s := NewSession(w.engine)
		p, err := s.Plan(context.Background(), PlanRequest{Request: Request{Target: defaultTarget, Desired: d}, Create: true})
		// The plan says that the apply grants without a restart, not the pending
		// restart its grant brings about: Terraform plans the create again during the
		// apply, and that plan (which cannot tell itself from a new one) would say it a
		// second time before the apply says it.
		if err != nil || ifi.HasWarning(p.Warnings, ifi.WarnRestartPending) || !ifi.HasWarning(p.Warnings, ifi.WarnPlannedAction) {
			t.Fatalf("the create's plan: %v, %v; want the planned action's warning, not the pending restart (the apply's news)", codes(p.Warnings), err)
		}
		res := applied(t, s, ApplyRequest{Request: Request{Target: defaultTarget, Desired: d}, Create: true, Planned: p.Action})
		if !ifi.HasWarning(res.Warnings, ifi.WarnRestartPending) {
			t.Errorf("the apply said %v, want the restart its grant left pending", codes(res.Warnings))
		}
		next, err := NewSession(w.engine).Read(context.Background(), ReadRequest{Request: Request{Target: defaultTarget, Desired: d, Memo: res.Memo}})
		if err != nil || ifi.HasWarning(next.Warnings, ifi.WarnRestartPending) {
			t.Errorf("the next run's refresh: %v, %v; want the pending restart not said again", codes(next.Warnings), err)
		}
	})
}

// A create that adopts a grant whose restart was already pending (restart =
// "never", nothing to change) says it once: its plan found it on the host and said
// it, and the apply, which brought nothing about, does not say it again.
func TestSessionCreateAdoptingAPendingRestartSaysItOnce(t *testing.T) {
	h := newFakeHost().granted(svcSID)
	h.runningIFI = false // granted since the Engine started: a restart is pending
	w := newWorld(h)
	d := withRestartNever(enable)
	s := NewSession(w.engine)
	p, err := s.Plan(context.Background(), PlanRequest{Request: Request{Target: defaultTarget, Desired: d}, Create: true})
	if err != nil || p.Action == nil || *p.Action != ifi.ActionNone || !ifi.HasWarning(p.Warnings, ifi.WarnRestartPending) {
		t.Fatalf("the create's plan: action %v, warnings %v, %v; want none, saying the pending restart", p.Action, codes(p.Warnings), err)
	}
	res := applied(t, s, ApplyRequest{Request: Request{Target: defaultTarget, Desired: d}, Create: true, Planned: p.Action})
	if ifi.HasWarning(res.Warnings, ifi.WarnRestartPending) {
		t.Errorf("the apply said %v, want the pending restart its plan said left out", codes(res.Warnings))
	}
}

// The NTLM fallback is said by a refresh when it is new or its cause changed since
// the memo's, once per host in a run (whatever the spelling of the host, and for
// every instance on it).
func TestSessionRefreshSaysNTLMFallback(t *testing.T) {
	const noSPN = "no SPN HTTP/sql01.example.com is registered"
	const noKDC = "no domain controller answered"
	w := newWorld(newFakeHost().granted(svcSID))
	var m *Memo
	for i, st := range []struct {
		ntlm, want string
	}{
		{"", ""},
		{noSPN, noSPN},
		{noSPN, ""},
		{noKDC, noKDC},
		{noKDC, ""},
		{"", ""},
		{noKDC, noKDC},
	} {
		w.host.ntlm = st.ntlm
		res, err := NewSession(w.engine).Read(context.Background(), ReadRequest{Request: Request{Target: defaultTarget, Desired: enable, Memo: m}})
		if err != nil {
			t.Fatalf("refresh %d: %v", i+1, err)
		}
		if res.NTLMFallback != st.want {
			t.Errorf("refresh %d (fallback %q): said %q, want %q", i+1, st.ntlm, res.NTLMFallback, st.want)
		}
		m = DecodeMemo(res.Memo.Encode(), defaultTarget)
	}

	t.Run("once per host in a run", func(t *testing.T) {
		w := newWorld(newFakeHost().granted(svcSID))
		w.host.ntlm = noSPN
		s := NewSession(w.engine)
		said := 0
		for _, tg := range []Target{defaultTarget, {Host: "SQL01.Example.COM.", Instance: "MSSQLSERVER"}, defaultTarget} {
			// A resource of its own (a fresh memo) for each.
			res, err := s.Read(context.Background(), ReadRequest{Request: Request{Target: tg, Desired: enable}})
			if err != nil {
				t.Fatalf("refresh of %v: %v", tg, err)
			}
			if res.NTLMFallback != "" {
				said++
			}
		}
		if said != 1 {
			t.Errorf("said %d times in a run, want once", said)
		}
		other := Target{Host: "sql02.example.com", Instance: "MSSQLSERVER"}
		if res, err := s.Read(context.Background(), ReadRequest{Request: Request{Target: other, Desired: enable}}); err != nil || res.NTLMFallback != noSPN {
			t.Errorf("another host: said %q, %v; want %q", res.NTLMFallback, err, noSPN)
		}
	})
}

// A plan says the NTLM fallback only when its action changes the host (the apply
// then sends its changes over that logon), once per host in a run; an apply keeps
// it in the memo, so the next run's refresh says nothing new.
func TestSessionPlanSaysNTLMFallback(t *testing.T) {
	const noSPN = "no SPN HTTP/sql01.example.com is registered"
	for _, tc := range []struct {
		name   string
		host   *fakeHost
		create bool
		said   bool
	}{
		{name: "update with nothing to do", host: newFakeHost().granted(svcSID)},
		{name: "update that grants", host: newFakeHost(), said: true},
		{name: "create with nothing to do", host: newFakeHost().granted(svcSID), create: true},
		{name: "create that grants", host: newFakeHost(), create: true, said: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(tc.host)
			w.host.ntlm = noSPN
			var m *Memo
			if !tc.create {
				m = refreshed(t, NewSession(w.engine), enable) // an earlier run's refresh said it
			}
			s := NewSession(w.engine)
			r := PlanRequest{Request: Request{Target: defaultTarget, Desired: enable, Memo: m}, Create: tc.create}
			p, err := s.Plan(context.Background(), r)
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if want := map[bool]string{true: noSPN}[tc.said]; p.NTLMFallback != want {
				t.Errorf("planned %s: said %q, want %q", actionOf(p), p.NTLMFallback, want)
			}
			if again, err := s.Plan(context.Background(), r); err != nil || again.NTLMFallback != "" {
				t.Errorf("the second plan in the run: said %q, %v; want nothing", again.NTLMFallback, err)
			}
			res := applied(t, s, ApplyRequest{Request: r.Request, Create: tc.create, Planned: p.Action})
			if res.Memo.NTLMFallback != noSPN {
				t.Errorf("the apply's memo holds %q, want %q", res.Memo.NTLMFallback, noSPN)
			}
			next, err := NewSession(w.engine).Read(context.Background(), ReadRequest{Request: Request{Target: defaultTarget, Desired: enable, Memo: res.Memo}})
			if err != nil || next.NTLMFallback != "" {
				t.Errorf("the next run's refresh: said %q, %v; want nothing new", next.NTLMFallback, err)
			}
		})
	}
}

// A destroy changes the host: it says the NTLM fallback (once in a run).
func TestSessionDestroySaysNTLMFallback(t *testing.T) {
	const noSPN = "no SPN HTTP/sql01.example.com is registered"
	w := newWorld(newFakeHost().granted(svcSID))
	w.host.ntlm = noSPN
	s := NewSession(w.engine)
	res, err := s.Destroy(context.Background(), Request{Target: defaultTarget, Desired: enable})
	if err != nil || res.NTLMFallback != noSPN {
		t.Errorf("Destroy: said %q, %v; want %q", res.NTLMFallback, err, noSPN)
	}
	m := refreshed(t, NewSession(w.engine), enable) // another run's refresh, after the destroy: the grant is gone
	p, err := s.Plan(context.Background(), PlanRequest{Request: Request{Target: defaultTarget, Desired: enable, Memo: m}})
	if err != nil || actionOf(p) != string(ifi.ActionGrant) || p.NTLMFallback != "" {
		t.Errorf("a plan that grants after it: %s, said %q, %v; want grant, nothing said", actionOf(p), p.NTLMFallback, err)
	}
}

// A host first reached with Kerberos that later in the run falls back to NTLM (its
// ticket could not be renewed) has the fallback said by the first change that
// uses it: having said nothing before does not count as having said it.
func TestSessionSaysALaterNTLMFallback(t *testing.T) {
	const noKDC = "no domain controller answered"
	w := newWorld(newFakeHost())
	s := NewSession(w.engine)
	r := PlanRequest{Request: Request{Target: defaultTarget, Desired: enable}, Create: true}
	if p, err := s.Plan(context.Background(), r); err != nil || p.NTLMFallback != "" {
		t.Fatalf("the plan over Kerberos: said %q, %v; want nothing", p.NTLMFallback, err)
	}
	w.host.ntlm = noKDC
	if p, err := s.Plan(context.Background(), r); err != nil || p.NTLMFallback != noKDC {
		t.Errorf("the plan once the host fell back: said %q, %v; want %q", p.NTLMFallback, err, noKDC)
	}
}
