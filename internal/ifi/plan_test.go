package ifi

import (
	"errors"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// The destroy half of a replace keeps a grant its create grants again; every other
// destroy revokes (issue 24: a half-done change is adopted, not undone).
func TestPlanDestroyKeepsTheGrantForItsReplacement(t *testing.T) {
	same := Replacement{Host: "SQL01.corp.example.", Instance: "mssqlserver", Enabled: true, Grantee: GranteeServiceSID, GranteeSID: svcSID}
	for name, tc := range map[string]struct {
		mod  func(*Replacement)
		none bool // no replacement at all: the user's destroy
		keep bool
	}{
		"the same grant again":            {keep: true},
		"the grantee's SID not yet known": {mod: func(r *Replacement) { r.GranteeSID = "" }, keep: true},
		"the user's destroy":              {none: true},
		"the replacement disables IFI":    {mod: func(r *Replacement) { r.Enabled = false }},
		"another grantee":                 {mod: func(r *Replacement) { r.Grantee = "CORP\\sqlsvc" }},
		"another SID for the grantee":     {mod: func(r *Replacement) { r.GranteeSID = "S-1-5-21-1-2-3-1001" }},
		"another host":                    {mod: func(r *Replacement) { r.Host = "sql02.corp.example" }},
		"another instance":                {mod: func(r *Replacement) { r.Instance = "REPORTING" }},
	} {
		d := enable
		if !tc.none {
			r := same
			if tc.mod != nil {
				tc.mod(&r)
			}
			d.Replacement = &r
		}
		_, p, w, err := PlanDestroy(d, obs(dmv(true), holders(svcSID)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		kept := len(p.Steps) == 0
		if kept != tc.keep {
			t.Errorf("%s: steps %+v; want the grant kept %v", name, p.Steps, tc.keep)
		}
		said := false
		for _, x := range w {
			said = said || x.Code == WarnKeptForReplace
		}
		if said != tc.keep {
			t.Errorf("%s: warnings %+v; want the kept-for-replace warning %v", name, w, tc.keep)
		}
	}
}

func planOf(t *testing.T, d Desired, o Observed) (*Assessment, *Plan) {
	t.Helper()
	a, p, err := PlanApply(d, o)
	if err != nil {
		t.Fatalf("PlanApply: %v", err)
	}
	return a, p
}

// An update that keeps the grantee (the provider fills the prior grantee from
// state) revokes nothing and restarts nothing.
func TestPlanApplySameGranteeRevokesNothing(t *testing.T) {
	for _, prior := range []string{svcSID, strings.ToLower(svcSID)} {
		d := enable
		d.PriorGranteeSID = prior
		_, p := planOf(t, d, obs(dmv(true), holders(svcSID)))
		if len(p.Steps) != 0 || p.Restart {
			t.Errorf("prior grantee %s, same as the grantee: steps %+v, restart %v; want nothing", prior, p.Steps, p.Restart)
		}
	}
}

// Moving the grantee revokes the prior one, and the restart decision counts the
// right as gone from it, however the host spells the SID.
func TestPlanApplyMovedGranteeCountsThePriorGrantAsGone(t *testing.T) {
	for _, c := range []struct{ name, reported, prior string }{
		{"same spelling", acctSID, acctSID},
		{"host reports lower case", strings.ToLower(acctSID), strings.ToLower(acctSID)},
		{"host reports lower case, account too", strings.ToLower(acctSID), strings.ToLower(acctSID)},
	} {
		d := disable
		d.PriorGranteeSID = c.prior
		o := obs(dmv(true), holders(c.reported))
		if strings.HasSuffix(c.name, "account too") {
			o.Instance.StartAccountSID = strings.ToLower(acctSID)
		}
		_, p := planOf(t, d, o)
		if len(p.Steps) != 1 || p.Steps[0].Grant || p.Steps[0].SID != c.prior {
			t.Errorf("%s: steps %+v, want the prior grantee's revoke", c.name, p.Steps)
		}
		if !p.Restart || !strings.Contains(p.RestartReason, "running Engine has IFI on and needs a restart to have it off") {
			t.Errorf("%s: restart %v (%q); the right is gone from everyone, so the Engine restarts to turn IFI off", c.name, p.Restart, p.RestartReason)
		}
	}
}

func TestPlanApplyRefusesAMissingInstance(t *testing.T) {
	o := obs(dmv(true))
	o.Instance.Found = false
	a, p, err := PlanApply(enable, o)
	if err == nil || a != nil || p != nil {
		t.Fatalf("PlanApply on a missing instance = %v, %v, %v; want an error", a, p, err)
	}
}

// The defaults: grantee service_sid, restart if_needed.
func TestPlanApplyDefaults(t *testing.T) {
	a, p := planOf(t, Desired{Enabled: true}, obs(dmv(false)))
	if a.GranteeSID != svcSID || len(p.Steps) != 1 || p.Steps[0].SID != svcSID {
		t.Errorf("default grantee: %s, steps %+v; want the service SID", a.GranteeSID, p.Steps)
	}
	if !p.Restart {
		t.Error("default restart policy does not restart; want if_needed")
	}
}

func refusalOf(t *testing.T, d Desired, o Observed) *Refusal {
	t.Helper()
	_, p, err := PlanApply(d, o)
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("want a refusal, got %v (plan %+v)", err, p)
	}
	return r
}

func TestRestartReasonWhenIFICannotBeVerified(t *testing.T) {
	o := obs(Verification{}, func(r *contract.ReadInstanceResult) { r.HADR = nil })
	o.Verification.AG = &AGMembership{Groups: []string{}}
	o.Verification.RunningBackups = []string{}
	_, p := planOf(t, enable, o)
	if !p.Restart || !strings.Contains(p.RestartReason, "IFI cannot be verified") {
		t.Errorf("restart %v (%q); want a restart because IFI cannot be verified", p.Restart, p.RestartReason)
	}
}

// Refusals and warnings begin with a capital: "Instance MSSQLSERVER on ...".
func TestRefusalDetailBeginsWithACapital(t *testing.T) {
	r := refusalOf(t, enable, obs(replica(RolePrimary)))
	if !strings.HasPrefix(r.Detail, "Instance MSSQLSERVER on sql01.corp.example") {
		t.Errorf("detail %q", r.Detail)
	}
}

func TestGroupPolicyRefusals(t *testing.T) {
	d := enable
	d.PriorGranteeSID = acctSID
	r := refusalOf(t, d, obs(dmv(false), holders(acctSID), gp(svcSID, acctSID)))
	if r.Summary != "Group Policy grants the previous grantee" || !strings.Contains(r.Detail, acctSID) {
		t.Errorf("moving the grant away from a policy-listed grantee: %q: %s", r.Summary, r.Detail)
	}
	for name, prior := range map[string]string{"same grantee": svcSID, "no prior": ""} {
		d.PriorGranteeSID = prior
		if _, _, err := PlanApply(d, obs(dmv(true), holders(svcSID), gp(svcSID, acctSID))); err != nil {
			t.Errorf("%s, policy lists it: %v", name, err)
		}
	}
	// The refusal suggests the grantee the policy already lists.
	r = refusalOf(t, enable, obs(dmv(false), gp(acctSID)))
	if !strings.Contains(r.Detail, `set grantee = "service_account"`) {
		t.Errorf("policy lists the start account: %s", r.Detail)
	}
	r = refusalOf(t, Desired{Enabled: true, Grantee: GranteeServiceAccount, Restart: RestartIfNeeded}, obs(dmv(false), gp(svcSID)))
	if !strings.Contains(r.Detail, `set grantee = "service_sid"`) {
		t.Errorf("policy lists the service SID: %s", r.Detail)
	}
	for name, c := range map[string]struct {
		d  Desired
		gp []string
	}{
		"service_sid, policy lists another": {enable, []string{adminSID}},
		"service_account, policy lists another": {Desired{Enabled: true, Grantee: GranteeServiceAccount, Restart: RestartIfNeeded},
			[]string{adminSID}},
	} {
		r = refusalOf(t, c.d, obs(dmv(false), gp(c.gp...)))
		if strings.Contains(r.Detail, "set grantee") {
			t.Errorf("%s: suggests a grantee the policy does not list: %s", name, r.Detail)
		}
	}
}

func TestPlanDestroyRevokesWhateverWasAsked(t *testing.T) {
	// Destroy revokes even when the configuration says enabled = true.
	_, p, _, err := PlanDestroy(enable, obs(dmv(true), holders(svcSID)))
	if err != nil || len(p.Steps) != 1 || p.Steps[0].Grant || p.Steps[0].SID != svcSID || p.Restart {
		t.Fatalf("destroy: %+v, %v; want the grantee's revoke, no restart", p, err)
	}
	o := obs(dmv(true))
	o.Instance.Found = false
	if _, p, _, err := PlanDestroy(enable, o); err == nil || p != nil {
		t.Fatalf("destroy on a missing instance: %+v, %v; want an error", p, err)
	}
	for _, c := range []struct {
		name       string
		mod        []func(*contract.ReadInstanceResult)
		steps      int
		policyWarn bool
	}{
		{"held, the policy lists it", []func(*contract.ReadInstanceResult){holders(svcSID), gp(svcSID)}, 0, true},
		{"held, the policy lists another", []func(*contract.ReadInstanceResult){holders(svcSID), gp(adminSID)}, 1, false},
		{"not held, the policy lists it", []func(*contract.ReadInstanceResult){gp(svcSID)}, 0, false},
		{"held, no policy", []func(*contract.ReadInstanceResult){holders(svcSID)}, 1, false},
	} {
		_, p, w, err := PlanDestroy(disable, obs(dmv(true), c.mod...))
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Steps) != c.steps || HasWarning(w, WarnGroupPolicy) != c.policyWarn {
			t.Errorf("%s: steps %+v, warnings %+v", c.name, p.Steps, w)
		}
	}
}

func TestPlanChanges(t *testing.T) {
	for _, c := range []struct {
		p    Plan
		want bool
	}{{Plan{}, false}, {Plan{Restart: true}, true}, {Plan{Steps: []Step{{Grant: true, SID: svcSID}}}, true}} {
		if got := c.p.Changes(); got != c.want {
			t.Errorf("%+v.Changes() = %v", c.p, got)
		}
	}
}

// Destroy assesses as enabled = false whatever the configuration says: what stays on.
func TestPlanDestroyAssessesAsDisabled(t *testing.T) {
	a, _, _, err := PlanDestroy(enable, obs(dmv(true), holders(svcSID, winsid.Everyone)))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := warningOf(a.Warnings, WarnStaysOn); !ok || a.Converged {
		t.Errorf("warnings %+v, converged %v; want IFI staying on through Everyone, not converged", a.Warnings, a.Converged)
	}
}
