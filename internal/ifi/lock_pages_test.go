package ifi

import (
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

func withLockPages(d Desired, on bool) Desired { d.LockPages = &on; return d }

// lpHolders makes the host report Lock pages in memory with these direct holders.
func lpHolders(sids ...string) func(*contract.ReadInstanceResult) {
	return func(r *contract.ReadInstanceResult) {
		r.LockPages = &contract.RightRead{Right: contract.RightLockMemory, Holders: []contract.Principal{},
			GroupPolicy: contract.GroupPolicyInfo{Known: true}}
		for _, s := range sids {
			r.LockPages.Holders = append(r.LockPages.Holders, contract.Principal{SID: s})
		}
	}
}

func lpPolicy(sids ...string) func(*contract.ReadInstanceResult) {
	return func(r *contract.ReadInstanceResult) {
		r.LockPages.GroupPolicy.Defined = true
		for _, s := range sids {
			r.LockPages.GroupPolicy.Holders = append(r.LockPages.GroupPolicy.Holders, contract.Principal{SID: s})
		}
	}
}

// memory is a DMV verification with IFI on, the memory model and max server memory.
func memory(ifiOn bool, model string, maxMB int64) Verification {
	v := dmv(ifiOn)
	v.MemoryModel, v.MaxServerMemoryMB, v.Edition = model, &maxMB, "Developer Edition (64-bit)"
	return v
}

const limited = 28672

func TestPlanLockPages(t *testing.T) {
	lpStep := func(grant bool, sid string) Step {
		return Step{Right: contract.RightLockMemory, Grant: grant, SID: sid}
	}
	ifiStep := func(grant bool, sid string) Step { return Step{Grant: grant, SID: sid} }
	for _, tc := range []struct {
		name        string
		d           Desired
		o           Observed
		steps       []Step
		restart     bool
		summary     string // in the prediction's summary
		wantWarning string // a plan warning code
	}{
		{"both rights, one restart", withLockPages(enable, true), obs(memory(false, contract.MemoryModelConventional, limited), lpHolders()),
			[]Step{ifiStep(true, svcSID), lpStep(true, svcSID)}, true, "grants two rights and restarts once", ""},
		{"Lock Pages alone restarts, IFI untouched", withLockPages(enable, true),
			obs(memory(true, contract.MemoryModelConventional, limited), holders(svcSID), lpHolders()),
			[]Step{lpStep(true, svcSID)}, true, "grants Lock pages in memory and restarts SQL Server", ""},
		{"IFI alone restarts, Lock Pages already in use", withLockPages(enable, true),
			obs(memory(false, contract.MemoryModelLockPages, limited), lpHolders(svcSID)),
			[]Step{ifiStep(true, svcSID)}, true, "grants the right and restarts SQL Server", ""},
		{"not managed: the Lock Pages right is never touched", enable,
			obs(memory(false, contract.MemoryModelConventional, limited), lpHolders()),
			[]Step{ifiStep(true, svcSID)}, true, "grants the right and restarts", ""},
		{"not managed: an Engine without locked pages restarts for nothing of it", enable,
			obs(memory(true, contract.MemoryModelConventional, limited), holders(svcSID), lpHolders(svcSID)),
			nil, false, "", ""},
		{"revoke Lock Pages", withLockPages(enable, false),
			obs(memory(true, contract.MemoryModelLockPages, limited), holders(svcSID), lpHolders(svcSID)),
			[]Step{lpStep(false, svcSID)}, true, "revokes Lock pages in memory and restarts", ""},
		{"converged: nothing", withLockPages(enable, true),
			obs(memory(true, contract.MemoryModelLockPages, limited), holders(svcSID), lpHolders(svcSID)), nil, false, "", ""},
		{"large pages count as locked", withLockPages(enable, true),
			obs(memory(true, contract.MemoryModelLargePages, limited), holders(svcSID), lpHolders(svcSID)), nil, false, "", ""},
		{"LocalSystem has the right in its token: no grant needed to run locked", withLockPages(enable, true),
			obs(memory(true, contract.MemoryModelLockPages, limited), holders(svcSID), lpHolders(), func(r *contract.ReadInstanceResult) {
				r.StartAccount, r.StartAccountSID = "LocalSystem", winsid.LocalSystem
			}), []Step{lpStep(true, svcSID)}, false, "grants Lock pages in memory, no restart", ""},
		{"unlimited max server memory: warned with the grant", withLockPages(enable, true),
			obs(memory(true, contract.MemoryModelConventional, contract.DefaultMaxServerMemoryMB), holders(svcSID), lpHolders()),
			[]Step{lpStep(true, svcSID)}, true, "grants Lock pages in memory", WarnUnlimitedMemory},
		{"unknown model without SQL: the error log tells", withLockPages(enable, true),
			obs(Verification{Source: SourceErrorLog, Enabled: ptr(true)}, holders(svcSID), lpHolders(svcSID), func(r *contract.ReadInstanceResult) {
				r.ErrorLog.MemoryModel = contract.MemoryModelLockPages
			}), nil, false, "", ""},
		{"restart = never: grants both, restarts nothing", withRestart(withLockPages(enable, true), RestartNever),
			obs(memory(false, contract.MemoryModelConventional, limited), lpHolders()),
			[]Step{ifiStep(true, svcSID), lpStep(true, svcSID)}, false, "grants two rights, no restart", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, p, err := PlanApply(tc.d, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Steps) != len(tc.steps) {
				t.Fatalf("steps = %+v, want %+v", p.Steps, tc.steps)
			}
			for i, s := range p.Steps {
				if s.RightOf() != tc.steps[i].RightOf() || s.Grant != tc.steps[i].Grant || s.SID != tc.steps[i].SID {
					t.Fatalf("step %d = %+v, want %+v", i, s, tc.steps[i])
				}
			}
			if p.Restart != tc.restart {
				t.Fatalf("restart = %v (%s), want %v", p.Restart, p.RestartReason, tc.restart)
			}
			if tc.wantWarning != "" && !HasWarning(p.Warnings, tc.wantWarning) || tc.wantWarning == "" && HasWarning(p.Warnings, WarnUnlimitedMemory) {
				t.Fatalf("plan warnings = %+v, want %q", p.Warnings, tc.wantWarning)
			}
			pr, err := Predict(tc.d, tc.o, false)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(pr.Warning.Summary, tc.summary) {
				t.Fatalf("summary = %q, want it to say %q", pr.Warning.Summary, tc.summary)
			}
			if tc.steps == nil && !a.LockPages.Converged {
				t.Fatalf("converged instance: LockPages = %+v", a.LockPages)
			}
		})
	}
}

// The unlimited-memory warning comes with the plan that grants the right only: a
// converged instance's plan says nothing of it.
func TestUnlimitedMemoryWarnsOnce(t *testing.T) {
	d := withLockPages(enable, true)
	before := obs(memory(true, contract.MemoryModelConventional, contract.DefaultMaxServerMemoryMB), holders(svcSID), lpHolders())
	after := obs(memory(true, contract.MemoryModelLockPages, contract.DefaultMaxServerMemoryMB), holders(svcSID), lpHolders(svcSID))
	_, p, err := PlanApply(d, before)
	if err != nil || !HasWarning(p.Warnings, WarnUnlimitedMemory) {
		t.Fatalf("the granting plan: %v, warnings %+v", err, p)
	}
	a, p, err := PlanApply(d, after)
	if err != nil || HasWarning(p.Warnings, WarnUnlimitedMemory) || HasWarning(a.Warnings, WarnUnlimitedMemory) || p.Changes() {
		t.Fatalf("the converged plan warns again or changes: %v, %+v", err, p)
	}
}

func TestLockPagesRefusesWhatGroupPolicyReverts(t *testing.T) {
	_, _, err := PlanApply(withLockPages(enable, true), obs(memory(true, contract.MemoryModelConventional, limited), holders(svcSID),
		lpHolders(), lpPolicy(acctSID)))
	r, ok := err.(*Refusal)
	if !ok || !strings.Contains(r.Detail, LockPagesDisplay) || !strings.Contains(r.Detail, LockPagesGPOSetting) {
		t.Fatalf("err = %v, want a refusal naming %q and its GPO setting", err, LockPagesDisplay)
	}
}

func TestLockPagesOnExpress(t *testing.T) {
	for _, edition := range []string{"Express Edition (64-bit)", "Express Edition with Advanced Services (64-bit)", "Web Edition (64-bit)"} {
		v := memory(true, contract.MemoryModelConventional, limited)
		v.Edition = edition
		a, p, err := PlanApply(withLockPages(enable, true), obs(v, holders(svcSID), lpHolders()))
		if err != nil {
			t.Fatal(err)
		}
		if !HasWarning(a.Warnings, WarnLockPagesEdition) || p.Restart || HasWarning(p.Warnings, WarnUnlimitedMemory) {
			t.Fatalf("%s: warnings %+v, restart %v: want the edition warning and no restart (the Engine stays conventional)", edition, a.Warnings, p.Restart)
		}
	}
	for _, edition := range []string{"Enterprise Edition: Core-based Licensing (64-bit)", "Enterprise Evaluation Edition (64-bit)",
		"Standard Edition (64-bit)", "Developer Edition (64-bit)", "Business Intelligence Edition (64-bit)"} {
		if !supportsLockedPages(edition) {
			t.Errorf("%s: want locked pages supported (KB 2659143)", edition)
		}
	}
}

// Without SQL Server's answer the edition is unknown: the check after a restart that
// left the Engine conventional names the edition among the causes.
func TestCheckLockPagesNamesAnUnknownEdition(t *testing.T) {
	a, err := Assess(withLockPages(enable, true), obs(Verification{Source: SourceErrorLog, Enabled: ptr(true)}, holders(svcSID), lpHolders(svcSID),
		func(r *contract.ReadInstanceResult) { r.ErrorLog.MemoryModel = contract.MemoryModelConventional }))
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(a); err == nil || !strings.Contains(err.Error(), "was not asked its edition") {
		t.Fatalf("Check = %v, want the unknown edition named", err)
	}
}

func TestCheckLockPagesAfterRestart(t *testing.T) {
	a, err := Assess(withLockPages(enable, true), obs(memory(true, contract.MemoryModelConventional, limited), holders(svcSID), lpHolders(svcSID)))
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(a); err == nil || !strings.Contains(err.Error(), "CONVENTIONAL") {
		t.Fatalf("Check = %v, want the memory model named", err)
	}
	a, _ = Assess(withLockPages(enable, true), obs(memory(true, contract.MemoryModelLockPages, limited), holders(svcSID), lpHolders(svcSID)))
	if err := Check(a); err != nil {
		t.Fatal(err)
	}
}

// A revoke of Lock pages in memory outside Terraform is named in the plan.
func TestLockPagesDriftIsNamed(t *testing.T) {
	pr, err := Predict(withLockPages(enable, true), obs(memory(true, contract.MemoryModelLockPages, limited), holders(svcSID), lpHolders()), true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pr.Warning.Detail, "no longer holds "+LockPagesDisplay+" (revoked outside Terraform)") || pr.Action != ActionGrant {
		t.Fatalf("prediction = %s: %s", pr.Action, pr.Warning.Detail)
	}
}

// A destroy revokes the Lock pages in memory it granted (and says the running
// Engine keeps its locked pages until a restart); it leaves the right alone when
// the resource did not manage it, when a Group Policy lists the grantee, or when
// the replacing create grants it again.
func TestPlanDestroyLockPages(t *testing.T) {
	granted := obs(memory(true, contract.MemoryModelLockPages, limited), holders(svcSID), lpHolders(svcSID))
	on := true
	for _, tc := range []struct {
		name    string
		d       Desired
		o       Observed
		revoke  bool
		warning bool
	}{
		{"managed: revoked, locked pages stay until a restart", withLockPages(enable, true), granted, true, true},
		{"unmanaged: left alone", enable, granted, false, false},
		{"managed false: nothing of it was granted", withLockPages(enable, false), granted, false, false},
		{"Group Policy lists the grantee: kept, said", withLockPages(enable, true),
			obs(memory(true, contract.MemoryModelLockPages, limited), holders(svcSID), lpHolders(svcSID), lpPolicy(svcSID)), false, true},
		{"the replacing create grants it again: kept", func() Desired {
			d := withLockPages(enable, true)
			d.Replacement = &Replacement{Host: "sql01.corp.example", Instance: "MSSQLSERVER", Enabled: true, LockPages: &on, Grantee: GranteeServiceSID}
			return d
		}(), granted, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p, w, err := PlanDestroy(tc.d, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			revoked := false
			for _, s := range p.Steps {
				revoked = revoked || s.RightOf() == contract.RightLockMemory && !s.Grant && s.SID == svcSID
			}
			if revoked != tc.revoke || HasWarning(w, WarnLockPagesDestroy) != tc.warning || p.Restart {
				t.Fatalf("steps %+v, warnings %+v; want revoke %v, warning %v, no restart", p.Steps, w, tc.revoke, tc.warning)
			}
		})
	}
}

// SQL Server's own report wins over the edition table: an Engine that reports
// LOCK_PAGES on an edition KB 2659143 lists without locked pages, and whose
// account holds the right, is converged (no restart "to stop using locked pages",
// which no restart could do); a plan that changes the right says once why it
// follows SQL Server, a converged plan says nothing.
func TestLockPagesReportedWinsOverTheEditionTable(t *testing.T) {
	v := memory(true, contract.MemoryModelLockPages, limited)
	v.Edition = "Web Edition (64-bit)"
	a, p, err := PlanApply(withLockPages(enable, true), obs(v, holders(svcSID), lpHolders(svcSID)))
	if err != nil {
		t.Fatal(err)
	}
	if p.Restart || p.Changes() || HasWarning(a.Warnings, WarnLockPagesEdition) || HasWarning(p.Warnings, WarnLockPagesEditionOverruled) {
		t.Fatalf("converged instance: restart %v (%s), steps %+v, warnings %+v %+v: want nothing to do and nothing said",
			p.Restart, p.RestartReason, p.Steps, a.Warnings, p.Warnings)
	}
	if !a.LockPages.Converged || a.LockPages.RestartPending == nil || *a.LockPages.RestartPending {
		t.Fatalf("assessment %+v: want converged, no restart pending", a.LockPages)
	}
	// Revoking it: the restart stops locked pages (the Engine did lock them), and the
	// plan says why it believes SQL Server over the table.
	_, p, err = PlanApply(withLockPages(enable, false), obs(v, holders(svcSID), lpHolders(svcSID)))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Restart || !HasWarning(p.Warnings, WarnLockPagesEditionOverruled) {
		t.Fatalf("revoke: restart %v, warnings %+v: want a restart and the overruled warning", p.Restart, p.Warnings)
	}
	// The error log's line counts as SQL Server's report too.
	el := Verification{Source: SourceErrorLog, Enabled: ptr(true), Edition: "Express Edition (64-bit)"}
	_, p, err = PlanApply(withLockPages(enable, true), obs(el, holders(svcSID), lpHolders(svcSID),
		func(r *contract.ReadInstanceResult) { r.ErrorLog.MemoryModel = contract.MemoryModelLockPages }))
	if err != nil || p.Restart {
		t.Fatalf("error log's LOCK_PAGES on Express: %v, restart %v (%s)", err, p.Restart, p.RestartReason)
	}
}
