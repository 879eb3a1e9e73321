package ifi

import (
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

func TestAssessSourceNoneWithoutAnAnswer(t *testing.T) {
	for name, v := range map[string]Verification{
		"no source":            {},
		"source none, a value": {Source: SourceNone, Enabled: ptr(true)},
		"empty source, value":  {Source: "", Enabled: ptr(true)},
		"DMV without a value":  {Source: SourceSQLDMV},
	} {
		a, err := Assess(enable, obs(v, holders(svcSID)))
		if err != nil {
			t.Fatal(err)
		}
		if a.VerifiedBy != SourceNone || a.RunningIFI != nil || a.RestartPending != nil {
			t.Errorf("%s: verified by %q, running %v, pending %v; want none, unknown, unknown", name, a.VerifiedBy, a.RunningIFI, a.RestartPending)
		}
	}
}

func TestAssessNamesTheMissingInstance(t *testing.T) {
	_, err := Assess(enable, Observed{Host: "sql01", Instance: &contract.ReadInstanceResult{Instance: "SALES", Found: false}})
	if err == nil || !strings.Contains(err.Error(), `"SALES"`) {
		t.Errorf("error %v does not name the instance", err)
	}
	_, err = Assess(enable, Observed{Host: "sql01"})
	if err == nil || !strings.Contains(err.Error(), `"(unknown)"`) {
		t.Errorf("error %v does not say the instance is unknown", err)
	}
}

// The right reaches the Engine through groups every token holds; EffectiveViaOther
// says it is not the grantee's own grant.
func TestEffectiveThroughWellKnownGroups(t *testing.T) {
	for _, c := range []struct{ sid, says string }{
		{winsid.Everyone, "Everyone"},
		{winsid.AuthenticatedUsers, "Authenticated Users"},
		{winsid.ServiceLogon, "SERVICE"},
		{winsid.Users, "Users"},
	} {
		a, err := Assess(disable, obs(dmv(true), holders(c.sid)))
		if err != nil {
			t.Fatal(err)
		}
		if !a.EffectiveAtNextStart || !a.EffectiveViaOther || !strings.Contains(a.EffectiveVia, c.says) {
			t.Errorf("%s holds the right: effective %v via %q (other %v)", c.says, a.EffectiveAtNextStart, a.EffectiveVia, a.EffectiveViaOther)
		}
	}
	a, err := Assess(disable, obs(dmv(true), func(r *contract.ReadInstanceResult) { r.StartAccountSID = winsid.LocalSystem }))
	if err != nil {
		t.Fatal(err)
	}
	if !a.EffectiveAtNextStart || !a.EffectiveViaOther || !strings.Contains(a.EffectiveVia, "LocalSystem") {
		t.Errorf("LocalSystem: effective %v via %q (other %v)", a.EffectiveAtNextStart, a.EffectiveVia, a.EffectiveViaOther)
	}
	a, err = Assess(disable, obs(dmv(true)))
	if err != nil {
		t.Fatal(err)
	}
	if a.EffectiveAtNextStart || a.EffectiveViaOther || a.EffectiveVia != "" {
		t.Errorf("nobody holds the right: effective %v via %q (other %v)", a.EffectiveAtNextStart, a.EffectiveVia, a.EffectiveViaOther)
	}
}

// SIDs compare without regard to case, whichever side spells them in lower case.
func TestRightHoldersMatchWithoutCase(t *testing.T) {
	lower := strings.ToLower(acctSID)
	for _, c := range []struct{ name, reported, account string }{
		{"holder in lower case", lower, acctSID},
		{"both in lower case", lower, lower},
	} {
		a, err := Assess(Desired{Enabled: true, Grantee: GranteeServiceAccount, Restart: RestartIfNeeded},
			obs(dmv(true), holders(c.reported), func(r *contract.ReadInstanceResult) { r.StartAccountSID = c.account }))
		if err != nil {
			t.Fatal(err)
		}
		if !a.PrivilegeGranted || !a.Converged {
			t.Errorf("%s: granted %v, converged %v; want the account's grant recognised", c.name, a.PrivilegeGranted, a.Converged)
		}
	}
}

// Issue 37: NT SERVICE\ALL SERVICES (S-1-5-80-0) is in the token of a service whose
// SID type is unrestricted or restricted. Holding the right (a Group Policy's grant
// to it, say), it keeps IFI on through an enabled = false: the plan revokes the
// grantee's own grant, restarts nothing (a restart cannot turn IFI off) and warns
// that IFI stays on. Before, the model left it out of the token: it expected IFI off
// after the revoke and planned a restart that changed nothing. With SID type none it
// does not count.
func TestEffectiveThroughAllServices(t *testing.T) {
	for _, sidType := range []int{1, 3} {
		a, p, err := PlanApply(disable, obs(dmv(true), holders(svcSID, winsid.AllServices),
			func(r *contract.ReadInstanceResult) { r.ServiceSIDType = sidType }))
		if err != nil {
			t.Fatalf("SID type %d: %v", sidType, err)
		}
		if p.Restart || len(p.Steps) != 1 || p.Steps[0].Grant || !HasWarning(a.Warnings, WarnStaysOn) {
			t.Errorf("SID type %d, ALL SERVICES holds the right, enabled = false: steps %+v, restart %v (%s), warnings %+v; want the revoke alone, no restart, IFI staying on",
				sidType, p.Steps, p.Restart, p.RestartReason, a.Warnings)
		}
		for _, w := range a.Warnings {
			if w.Code == WarnStaysOn && !strings.Contains(w.Detail, `NT SERVICE\ALL SERVICES`) {
				t.Errorf("SID type %d: the warning does not say IFI stays on through NT SERVICE\\ALL SERVICES: %s", sidType, w.Detail)
			}
		}
	}
	a, err := Assess(disable, obs(dmv(false), holders(winsid.AllServices), func(r *contract.ReadInstanceResult) { r.ServiceSIDType = 0 }))
	if err != nil {
		t.Fatal(err)
	}
	if a.EffectiveAtNextStart {
		t.Errorf("SID type none, ALL SERVICES holds the right: effective via %q; want not effective", a.EffectiveVia)
	}
}
