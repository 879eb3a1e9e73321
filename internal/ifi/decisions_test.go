package ifi

import (
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// Tests that pin decisions mutation testing found unguarded (make mutate).

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

// Through a lesson (an ineffective restart), IFI is effective through something other
// than the grantee's own grant.
func TestEffectiveThroughTheLessonIsOther(t *testing.T) {
	d := disable
	d.IneffectiveRestart = lesson(t)
	a, err := Assess(d, afterIneffectiveRestart())
	if err != nil {
		t.Fatal(err)
	}
	if !a.EffectiveAtNextStart || !a.EffectiveViaOther || !strings.Contains(a.EffectiveVia, "nested group") {
		t.Errorf("effective %v via %q (other %v); want effective through the hidden membership", a.EffectiveAtNextStart, a.EffectiveVia, a.EffectiveViaOther)
	}
}

// The lesson speaks only while SQL Server itself says IFI is on.
func TestLessonNeedsSQLServersWord(t *testing.T) {
	d := disable
	d.IneffectiveRestart = lesson(t)
	for name, v := range map[string]Verification{
		"no source, a value":    {Source: SourceNone, Enabled: ptr(true)},
		"empty source, a value": {Enabled: ptr(true)},
		"a source, no value":    {Source: SourceSQLDMV},
		"SQL Server says off":   {Source: SourceSQLDMV, Enabled: ptr(false)},
	} {
		o := afterIneffectiveRestart()
		o.Verification = v
		a, err := Assess(d, o)
		if err != nil {
			t.Fatal(err)
		}
		if a.IneffectiveRestart != nil {
			t.Errorf("%s: the lesson applies", name)
		}
	}
}

// The lesson's explanation names the Engine's start when the lesson knows it.
func TestLessonExplanationNamesTheStartWhenKnown(t *testing.T) {
	for _, known := range []bool{true, false} {
		d := disable
		d.IneffectiveRestart = lesson(t)
		if !known {
			d.IneffectiveRestart.ProcessStart = nil
		}
		a, err := Assess(d, afterIneffectiveRestart())
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(a.EffectiveVia, "after the provider's restart (Engine started 2024-05-01T08:01:00Z)"); got != known {
			t.Errorf("start known %v: %q", known, a.EffectiveVia)
		}
		if !strings.Contains(a.EffectiveVia, "SQL Server reported IFI on after the provider's restart") {
			t.Errorf("start known %v: %q", known, a.EffectiveVia)
		}
	}
}
