package ifi

import (
	"errors"
	"strings"
	"testing"
)

// Group Policy's security settings are re-applied when a policy changes and at least
// every 16 hours; the 90-minute background refresh applies only changed GPOs. Every
// text that tells the user when a policy reverts a local change must say so.
func TestGroupPolicyTimingInTexts(t *testing.T) {
	var texts []string
	a, _, err := PlanApply(enable, obs(dmv(true), holders(svcSID), gp(svcSID)))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range a.Warnings {
		if w.Code == WarnGroupPolicy {
			texts = append(texts, w.Detail)
		}
	}
	for _, tc := range []struct {
		d Desired
		o Observed
	}{
		{enable, obs(dmv(false), gp(acctSID))},                 // the policy does not list the grantee
		{disable, obs(dmv(true), holders(svcSID), gp(svcSID))}, // the policy lists it
	} {
		_, _, err := PlanApply(tc.d, tc.o)
		var r *Refusal
		if !errors.As(err, &r) {
			t.Fatalf("PlanApply = %v; want a Refusal", err)
		}
		texts = append(texts, r.Detail)
	}
	_, _, ws, err := PlanDestroy(enable, obs(dmv(true), holders(svcSID), gp(svcSID)))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.Code == WarnGroupPolicy {
			texts = append(texts, w.Detail)
		}
	}
	if len(texts) != 4 {
		t.Fatalf("collected %d Group Policy texts; want 4: %q", len(texts), texts)
	}
	for _, s := range texts {
		if !strings.Contains(s, "16 hours") || strings.Contains(s, "90 minutes") {
			t.Errorf("Group Policy text %q: want the 16-hour security refresh, not 90 minutes", s)
		}
	}
}
