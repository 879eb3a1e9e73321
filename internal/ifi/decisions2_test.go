package ifi

import (
	"errors"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

func refusalOf(t *testing.T, d Desired, o Observed) *Refusal {
	t.Helper()
	_, p, err := PlanApply(d, o)
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("want a refusal, got %v (plan %+v)", err, p)
	}
	return r
}

func warningOf(ws []Warning, code string) (Warning, bool) {
	for _, w := range ws {
		if w.Code == code {
			return w, true
		}
	}
	return Warning{}, false
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

// The refusal of a primary names the group to fail over; without a group name, "group".
func TestPrimaryRefusalNamesTheGroupToFailOver(t *testing.T) {
	for _, c := range []struct {
		groups []string
		want   string
	}{{[]string{"AG1"}, "ALTER AVAILABILITY GROUP [AG1]"}, {[]string{"AG1", "AG2"}, "[AG1]"}, {[]string{}, "ALTER AVAILABILITY GROUP [group]"}} {
		v := replica(RolePrimary)
		v.AG.Groups = c.groups
		if r := refusalOf(t, enable, obs(v)); !strings.Contains(r.Detail, c.want) {
			t.Errorf("groups %v: detail lacks %q: %s", c.groups, c.want, r.Detail)
		}
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

func TestRoleUnknownSaysWhy(t *testing.T) {
	for name, c := range map[string]struct {
		mod  func(*contract.ReadInstanceResult)
		says string
	}{
		"no write time": {func(r *contract.ReadInstanceResult) {
			r.ProcessStartTime = &engineStart
			r.HADR = &contract.HADRInfo{KeyFound: true, Enabled: intp(0)}
		}, "the time HADR_Enabled was written, or the Engine's start, is unknown"},
		"no Engine start": {func(r *contract.ReadInstanceResult) {
			r.ProcessStartTime = nil
			r.HADR = &contract.HADRInfo{KeyFound: true, Enabled: intp(0), KeyWritten: &beforeStart}
		}, "the time HADR_Enabled was written, or the Engine's start, is unknown"},
		"the host's detail": {func(r *contract.ReadInstanceResult) {
			r.ProcessStartTime = &engineStart
			r.HADR = &contract.HADRInfo{KeyFound: true, Enabled: intp(1), KeyWritten: &beforeStart, Detail: "cluster WMI: access denied"}
		}, "HADR_Enabled is 1 (Always On is enabled); cluster WMI: access denied"},
	} {
		r := refusalOf(t, enable, noSQL(c.mod))
		if !strings.Contains(r.Detail, c.says) {
			t.Errorf("%s: detail lacks %q: %s", name, c.says, r.Detail)
		}
	}
}

// Health counts only for a replica of a group.
func TestUnhealthyCountsOnlyInAGroup(t *testing.T) {
	v := dmv(false)
	v.AG = &AGMembership{Groups: []string{}, Unhealthy: []string{"stale"}}
	if _, p := planOf(t, enable, obs(v)); !p.Restart {
		t.Error("an instance in no group is refused for health")
	}
}

func TestBeforeAlwaysOn(t *testing.T) {
	for v, want := range map[string]bool{"10.50.6000.34": true, "9.0.5000": true, "1.0": true, "11.0.2100.60": false,
		"16.0.4135.4": false, "0.1": false, "": false, "x.1": false, "-5.0": false} {
		if got := beforeAlwaysOn(v); got != want {
			t.Errorf("beforeAlwaysOn(%q) = %v", v, got)
		}
	}
}

func TestCheckNamesOnlyTheCausesThatFit(t *testing.T) {
	assess := func(d Desired, o Observed) *Assessment {
		a, err := Assess(d, o)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	tf := func(r *contract.ReadInstanceResult) { r.StartupParameters = []string{"-T1806"} }
	err := Check(assess(enable, obs(dmv(true), holders(svcSID), tf)))
	if err == nil || !strings.Contains(err.Error(), "trace flag 1806") {
		t.Errorf("trace flag: %v", err)
	}
	// Running off, expected on, service SID type unrestricted: neither the SID type
	// nor a hidden group explains it.
	err = Check(assess(enable, obs(dmv(false), holders(svcSID))))
	if err == nil || strings.Contains(err.Error(), "SID type") || strings.Contains(err.Error(), "group the host does not report") {
		t.Errorf("off though expected on: %v", err)
	}
	sidNone := func(r *contract.ReadInstanceResult) { r.ServiceSIDType = 0 }
	err = Check(assess(Desired{Enabled: true, Grantee: GranteeServiceAccount, Restart: RestartIfNeeded}, obs(dmv(false), holders(acctSID), sidNone)))
	if err == nil || strings.Contains(err.Error(), "SID type") {
		t.Errorf("grantee service_account, off though expected on: %v; the service SID's type does not matter", err)
	}
	err = Check(assess(Desired{Enabled: true, Grantee: GranteeServiceAccount, Restart: RestartIfNeeded}, obs(dmv(false), holders(acctSID, svcSID), sidNone, tf)))
	if err != nil {
		t.Errorf("trace flag makes off expected: %v", err)
	}
}

func TestWarningTexts(t *testing.T) {
	a, err := Assess(enable, obs(dmv(false), func(r *contract.ReadInstanceResult) { r.ServiceState = contract.StateStopped }))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := warningOf(a.Warnings, WarnNotRunning); !ok {
		t.Errorf("stopped service: no %s warning in %+v", WarnNotRunning, a.Warnings)
	}
	a, err = Assess(withRestart(enable, RestartNever), obs(dmv(false), holders(svcSID)))
	if err != nil {
		t.Fatal(err)
	}
	if w, ok := warningOf(a.Warnings, WarnRestartPending); !ok || !strings.Contains(w.Detail, "for IFI to be on") {
		t.Errorf("pending restart to turn IFI on: %+v", w)
	}
	a, err = Assess(withRestart(disable, RestartNever), obs(dmv(true)))
	if err != nil {
		t.Fatal(err)
	}
	if w, ok := warningOf(a.Warnings, WarnRestartPending); !ok || !strings.Contains(w.Detail, "for IFI to be off") {
		t.Errorf("pending restart to turn IFI off: %+v", w)
	}
	// The Group Policy warning says whether the policy lists the grantee, and names its holders.
	named := func(r *contract.ReadInstanceResult) {
		gp()(r)
		r.GroupPolicy.Holders = []contract.Principal{{SID: svcSID, Name: `NT SERVICE\MSSQLSERVER`}, {SID: adminSID}}
	}
	a, err = Assess(enable, obs(dmv(true), holders(svcSID), named))
	if err != nil {
		t.Fatal(err)
	}
	w, _ := warningOf(a.Warnings, WarnGroupPolicy)
	if !strings.Contains(w.Detail, "it lists "+svcSID) || !strings.Contains(w.Detail, `NT SERVICE\MSSQLSERVER (`+svcSID+"), "+adminSID+")") {
		t.Errorf("policy listing the grantee: %s", w.Detail)
	}
	for _, c := range []struct {
		holders []string
		says    string
	}{{[]string{adminSID}, "policy holders: " + adminSID + ")"}, {nil, "policy holders: none)"}} {
		a, err = Assess(disable, obs(dmv(false), gp(c.holders...)))
		if err != nil {
			t.Fatal(err)
		}
		w, _ = warningOf(a.Warnings, WarnGroupPolicy)
		if !strings.Contains(w.Detail, "it does not list "+svcSID) || !strings.Contains(w.Detail, c.says) {
			t.Errorf("policy not listing the grantee (%v): %s", c.holders, w.Detail)
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
