package ifi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// A read kept for later decisions holds no member of Administrators and no SID that
// no decision uses, and every decision on it is the one on the whole read: the
// same action, the same warnings, the same lesson.
func TestKeepForDecisions(t *testing.T) {
	const otherAdmin, otherHolder = "S-1-5-21-1-2-3-1100", "S-1-5-21-1-2-3-1200"
	extra := func(r *contract.ReadInstanceResult) {
		r.AdministratorsMembers = append(r.AdministratorsMembers, contract.Principal{SID: otherAdmin, Name: `CORP\backup-admin`})
		r.RightHolders = append(r.RightHolders, contract.Principal{SID: otherHolder, Name: `CORP\etl`})
		r.InstalledInstances = []string{"MSSQLSERVER", "OTHER"}
	}
	memberAcct := func(r *contract.ReadInstanceResult) {
		r.AdministratorsMembers = append(r.AdministratorsMembers, contract.Principal{SID: acctSID, Name: `CORP\svc-sql`})
	}
	lessonOf := lesson(t)
	cases := []struct {
		name string
		d    Desired
		o    Observed
	}{
		{"grant and restart", enable, obs(dmv(false), extra)},
		{"nothing to do", enable, obs(dmv(true), holders(svcSID), extra)},
		{"revoke: stays on through Administrators", disable, obs(dmv(true), holders(svcSID, winsid.Administrators), memberAcct, extra)},
		{"service account grantee", Desired{Enabled: true, Grantee: GranteeServiceAccount, Restart: RestartIfNeeded}, obs(dmv(false), holders(acctSID), extra)},
		{"moved grant", func() Desired { d := enable; d.PriorGranteeSID = acctSID; return d }(), obs(dmv(true), holders(svcSID, acctSID), extra)},
		{"ineffective restart's lesson", func() Desired { d := disable; d.IneffectiveRestart = lessonOf; return d }(),
			afterIneffectiveRestart(extraHolderless)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			keep := []string{tc.d.PriorGranteeSID}
			if tc.d.IneffectiveRestart != nil {
				keep = append(keep, tc.d.IneffectiveRestart.Holders...)
			}
			kept := KeepForDecisions(tc.o.Instance, keep...)
			b, _ := json.Marshal(kept)
			for _, sid := range []string{otherAdmin, otherHolder, groupSID, adminSID, "backup-admin", "OTHER"} {
				if strings.Contains(string(b), sid) {
					t.Errorf("the kept read holds %s: %s", sid, b)
				}
			}
			full, err := Predict(tc.d, tc.o, false)
			if err != nil {
				t.Fatal(err)
			}
			ko := tc.o
			ko.Instance = kept
			got, err := Predict(tc.d, ko, false)
			if err != nil {
				t.Fatal(err)
			}
			if got.Action != full.Action || codesOf(got.Assessment.Warnings) != codesOf(full.Assessment.Warnings) ||
				(got.Assessment.IneffectiveRestart == nil) != (full.Assessment.IneffectiveRestart == nil) {
				t.Errorf("on the kept read: %s %s lesson %v; on the whole read: %s %s lesson %v", got.Action, codesOf(got.Assessment.Warnings),
					got.Assessment.IneffectiveRestart != nil, full.Action, codesOf(full.Assessment.Warnings), full.Assessment.IneffectiveRestart != nil)
			}
		})
	}
}

// A lesson an older version kept with Administrators' members is upgraded to their
// digest, and still applies.
func TestIneffectiveRestartUpgrade(t *testing.T) {
	m := &IneffectiveRestart{StartAccountSID: acctSID, LegacyAdministrators: []string{adminSID, strings.ToLower(groupSID)}}
	m.Upgrade()
	if m.LegacyAdministrators != nil || m.AdministratorsDigest != digestOf([]string{groupSID, adminSID}) {
		t.Errorf("upgraded lesson %+v", m)
	}
}

func extraHolderless(r *contract.ReadInstanceResult) {
	r.RightHolders = append(r.RightHolders, contract.Principal{SID: "S-1-5-21-1-2-3-1200"})
}

func codesOf(ws []Warning) string {
	var c []string
	for _, w := range ws {
		c = append(c, w.Code)
	}
	return strings.Join(c, ",")
}
