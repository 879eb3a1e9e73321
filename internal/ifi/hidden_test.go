package ifi

import (
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract/contracttest"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// groupSID is a domain group that is a direct member of Administrators; the host
// does not say who its members are.
const groupSID = "S-1-5-21-1-2-3-2201"

func nestedGroup(r *contract.ReadInstanceResult) {
	r.AdministratorsMembers = append(r.AdministratorsMembers, contract.Principal{SID: groupSID, Name: `CORP\SQL Admins`})
	started := time.Date(2024, 5, 1, 8, 1, 0, 0, time.UTC)
	r.ProcessStartTime = &started
}

// afterIneffectiveRestart is the instance right after a restart to turn IFI off:
// the grant is gone, Administrators (Windows' default holder) holds the right, and
// SQL Server reports IFI on, because the start account is in the nested group.
func afterIneffectiveRestart(mod ...func(*contract.ReadInstanceResult)) Observed {
	return obs(dmv(true), append([]func(*contract.ReadInstanceResult){holders(winsid.Administrators), nestedGroup}, mod...)...)
}

func lesson(t *testing.T) *IneffectiveRestart {
	t.Helper()
	a, err := Assess(disable, afterIneffectiveRestart())
	if err != nil {
		t.Fatal(err)
	}
	m := LearnIneffectiveRestart(a)
	if m == nil {
		t.Fatal("no lesson from a restart that left IFI on against the holders the host reports")
	}
	return m
}

// Without the lesson, the instance looks like one that needs another restart: the
// loop the lesson breaks.
func TestIneffectiveRestartWithoutLessonRestartsAgain(t *testing.T) {
	a, p, err := PlanApply(disable, afterIneffectiveRestart())
	if err != nil {
		t.Fatal(err)
	}
	if !p.Restart || a.Converged || a.RestartPending == nil || !*a.RestartPending {
		t.Fatalf("restart %v, converged %v, pending %s: want a restart planned (the loop)", p.Restart, a.Converged, contracttest.TriState(a.RestartPending))
	}
	if err := Check(a); err == nil || !strings.Contains(err.Error(), "nested in Administrators") {
		t.Fatalf("Check = %v, want an error naming the nested group", err)
	}
}

func TestLearnIneffectiveRestart(t *testing.T) {
	m := lesson(t)
	if m.StartAccountSID != acctSID || strings.Join(m.Holders, ",") != winsid.Administrators ||
		m.AdministratorsDigest != digestOf([]string{groupSID, adminSID}) || m.Source != SourceSQLDMV || m.ProcessStart == nil {
		t.Fatalf("lesson %+v", m)
	}
	for name, o := range map[string]Observed{
		"IFI off as expected":              obs(dmv(false), holders(winsid.Administrators), nestedGroup),
		"IFI on as expected":               obs(dmv(true), holders(winsid.Administrators, svcSID), nestedGroup),
		"unverifiable":                     obs(Verification{Source: SourceNone}, holders(winsid.Administrators), nestedGroup),
		"trace flag 1806 explains nothing": afterIneffectiveRestart(func(r *contract.ReadInstanceResult) { r.StartupParameters = []string{"-T1806"} }),
	} {
		a, err := Assess(disable, o)
		if err != nil {
			t.Fatal(err)
		}
		if m := LearnIneffectiveRestart(a); m != nil {
			t.Errorf("%s: learned %+v, want nothing", name, m)
		}
	}
}

func TestIneffectiveRestartStopsTheLoop(t *testing.T) {
	d := disable
	d.IneffectiveRestart = lesson(t)
	a, p, err := PlanApply(d, afterIneffectiveRestart())
	if err != nil {
		t.Fatal(err)
	}
	if p.Changes() {
		t.Errorf("plan %+v, want no change", p)
	}
	if !a.Converged || a.RestartPending == nil || *a.RestartPending || !a.ExpectedRunning || a.IneffectiveRestart == nil {
		t.Errorf("converged %v, pending %s, expected %v, lesson %v; want converged, not pending, expected on, the lesson used",
			a.Converged, contracttest.TriState(a.RestartPending), a.ExpectedRunning, a.IneffectiveRestart)
	}
	if !HasWarning(a.Warnings, WarnHiddenMembership) || HasWarning(a.Warnings, WarnStaysOn) {
		t.Fatalf("warnings %+v, want %s instead of %s", a.Warnings, WarnHiddenMembership, WarnStaysOn)
	}
	var w Warning
	for _, x := range a.Warnings {
		if x.Code == WarnHiddenMembership {
			w = x
		}
	}
	for _, want := range []string{"sql01.corp.example", "MSSQLSERVER", `CORP\svc-sql`, "domain or nested group in Administrators",
		"cannot expand", "whoami /groups /priv", "Get-ADGroupMember", groupSID, "2024-05-01T08:01:00Z"} {
		if !strings.Contains(w.Detail, want) {
			t.Errorf("warning detail lacks %q:\n%s", want, w.Detail)
		}
	}
	if err := Check(a); err != nil {
		t.Errorf("Check with the lesson: %v", err)
	}

	// enabled = true and back: the grant comes and goes without a restart.
	d.Enabled = true
	_, p, err = PlanApply(d, afterIneffectiveRestart())
	if err != nil || p.Restart || len(p.Steps) != 1 || !p.Steps[0].Grant {
		t.Fatalf("enable with the lesson: plan %+v, err %v; want a grant without a restart", p, err)
	}
	d.Enabled = false
	a, p, err = PlanApply(d, afterIneffectiveRestart(holders(svcSID)))
	if err != nil || p.Restart || len(p.Steps) != 1 || p.Steps[0].Grant {
		t.Fatalf("disable again with the lesson: plan %+v, err %v; want a revoke without a restart", p, err)
	}
	if !HasWarning(a.Warnings, WarnHiddenMembership) {
		t.Errorf("warnings %+v, want %s", a.Warnings, WarnHiddenMembership)
	}
}

// The lesson speaks only for what the restart saw: another start account, other
// members of Administrators, fewer holders or IFI off now and it no longer applies.
func TestIneffectiveRestartNoLongerApplies(t *testing.T) {
	m := lesson(t)
	for _, tc := range []struct {
		name        string
		o           Observed
		wantRestart bool
	}{
		{"another start account", afterIneffectiveRestart(func(r *contract.ReadInstanceResult) {
			r.StartAccount, r.StartAccountSID = `CORP\svc-sql2`, "S-1-5-21-1-2-3-1999"
		}), true},
		{"the group left Administrators", obs(dmv(true), holders(winsid.Administrators)), true},
		{"Administrators no longer holds the right", afterIneffectiveRestart(func(r *contract.ReadInstanceResult) { r.RightHolders = nil }), true},
		{"IFI is off now (the membership ended and the Engine restarted)", obs(dmv(false), holders(winsid.Administrators), nestedGroup), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := disable
			d.IneffectiveRestart = m
			a, p, err := PlanApply(d, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if HasWarning(a.Warnings, WarnHiddenMembership) || a.ExpectedRunning {
				t.Errorf("the lesson still counts: expected on %v, warnings %+v", a.ExpectedRunning, a.Warnings)
			}
			if p.Restart != tc.wantRestart {
				t.Errorf("restart %v, want %v (%s)", p.Restart, tc.wantRestart, p.RestartReason)
			}
		})
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
