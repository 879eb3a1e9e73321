package ifi

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// A plan shows known every fact whose value after a successful apply it can
// tell (Assessment.After), and only those: each rule, in a row of its own.
func TestAfter(t *testing.T) {
	noSQL := Verification{Source: SourceErrorLog, Enabled: ptr(false)} // no sql block: the error log says
	inGroup := dmv(false)
	inGroup.AG = &AGMembership{Groups: []string{"AG1"}, Role: RolePrimary}
	for _, tc := range []struct {
		name   string
		d      Desired
		o      Observed
		action Action
		want   map[Field]any
	}{
		{"a revoke outside Terraform granted again: the running Engine keeps IFI, no restart is owed",
			enable, obs(dmv(true)), ActionGrant,
			map[Field]any{FieldGranteeSID: svcSID, FieldPrivilegeGranted: true, FieldRestartPending: false, FieldVerifiedBy: "sql_dmv"}},
		{"a grant with restart = never: the restart is owed", withRestart(enable, RestartNever), obs(dmv(false)), ActionGrant,
			map[Field]any{FieldGranteeSID: svcSID, FieldPrivilegeGranted: true, FieldRestartPending: true, FieldVerifiedBy: "sql_dmv"}},
		{"a grant with the running Engine's IFI not known: restart_pending stays null", withRestart(enable, RestartNever),
			obs(Verification{Source: SourceNone}), ActionGrant,
			map[Field]any{FieldGranteeSID: svcSID, FieldPrivilegeGranted: true, FieldRestartPending: nil, FieldVerifiedBy: "none"}},
		{"a revoke, restart never", withRestart(disable, RestartNever), obs(dmv(true), holders(svcSID)), ActionRevoke,
			map[Field]any{FieldGranteeSID: svcSID, FieldPrivilegeGranted: false, FieldRestartPending: true, FieldVerifiedBy: "sql_dmv"}},
		{"grant and restart in no group: availability_role stays null; what the restarted Engine reports is not known",
			enable, obs(dmv(false)), ActionGrantAndRestart,
			map[Field]any{FieldGranteeSID: svcSID, FieldPrivilegeGranted: true, FieldAvailabilityRole: nil}},
		{"a restart without a sql block: availability_role stays null", withRestart(enable, RestartIfNeededIncludingPrimary), obs(noSQL, holders(svcSID), func(r *contract.ReadInstanceResult) {
			r.ErrorLog = contract.ErrorLogInfo{Found: true, Enabled: ptr(false)}
		}), ActionRestart,
			map[Field]any{FieldGranteeSID: svcSID, FieldPrivilegeGranted: true, FieldAvailabilityRole: nil}},
		{"a restart of a primary replica fails it over: its role is not known", withRestart(enable, RestartIfNeededIncludingPrimary),
			obs(withBackupsChecked(inGroup), holders()), ActionGrantAndRestart,
			map[Field]any{FieldGranteeSID: svcSID, FieldPrivilegeGranted: true}},
		{"Lock Pages in Memory alone: the IFI right stays as it is, Lock Pages in Memory granted", withLockPages(enable, true),
			obs(memory(true, contract.MemoryModelConventional, limited), holders(svcSID), lpHolders()), ActionGrantAndRestart,
			map[Field]any{FieldGranteeSID: svcSID, FieldPrivilegeGranted: true, FieldLockPagesGranted: true, FieldAvailabilityRole: nil}},
		{"Lock Pages in Memory with restart never: nothing is not known", withRestart(withLockPages(enable, true), RestartNever),
			obs(memory(true, contract.MemoryModelConventional, limited), holders(svcSID), lpHolders()), ActionGrant,
			map[Field]any{FieldGranteeSID: svcSID, FieldPrivilegeGranted: true, FieldLockPagesGranted: true, FieldRestartPending: false,
				FieldVerifiedBy: "sql_dmv"}},
		{"nothing to do", enable, obs(dmv(true), holders(svcSID)), ActionNone, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Predict(tc.d, tc.o, true)
			if err != nil {
				t.Fatal(err)
			}
			if p.Action != tc.action {
				t.Fatalf("action %s, want %s (%s)", p.Action, tc.action, p.Warning.Detail)
			}
			if !maps.Equal(p.After, tc.want) {
				t.Errorf("after %v, want %v", p.After, tc.want)
			}
			for f := range p.After {
				if !slices.Contains(AllFields, f) {
					t.Errorf("%s is no fact", f)
				}
			}
		})
	}
}

// withBackupsChecked is v with SQL Server's answer that no backup runs.
func withBackupsChecked(v Verification) Verification {
	v.RunningBackups, v.SQLConfigured = []string{}, true
	return v
}

// An apply's read-back that differs from a fact its plan showed known is the
// error, naming the fact; one as planned passes.
func TestExpectedAfter(t *testing.T) {
	d := withRestart(enable, RestartNever)
	before := obs(dmv(true))
	p, err := Predict(d, before, true)
	if err != nil || p.After == nil {
		t.Fatalf("Predict: %v, after %v", err, p.After)
	}
	asPlanned, err := Assess(d, obs(dmv(true), holders(svcSID)))
	if err != nil {
		t.Fatal(err)
	}
	if err := ExpectedAfter(p.After, asPlanned); err != nil {
		t.Errorf("read back as planned: %v", err)
	}
	// SQL Server did not answer the read-back: the running Engine's IFI is not known.
	unverified, err := Assess(d, obs(Verification{Source: SourceNone}, holders(svcSID)))
	if err != nil {
		t.Fatal(err)
	}
	err = ExpectedAfter(p.After, unverified)
	if err == nil {
		t.Fatal("a read-back without the planned restart_pending passed")
	}
	for _, want := range []string{"instance MSSQLSERVER on sql01.corp.example", "restart_pending is null, the plan said false",
		"verified_by is none, the plan said sql_dmv", "run terraform plan again"} {
		if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(want)) {
			t.Errorf("error %q; want it to say %q", err, want)
		}
	}
}
