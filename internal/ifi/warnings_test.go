package ifi

import (
	"errors"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
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

func warningOf(ws []Warning, code string) (Warning, bool) {
	for _, w := range ws {
		if w.Code == code {
			return w, true
		}
	}
	return Warning{}, false
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
	// The warning describes the state the apply leaves: a right revoked outside
	// Terraform, which the apply grants again while the running Engine still has
	// IFI, leaves no restart pending (the plan says "grants the right, no restart").
	a, err = Assess(withRestart(enable, RestartNever), obs(dmv(true)))
	if err != nil {
		t.Fatal(err)
	}
	if w, ok := warningOf(a.Warnings, WarnRestartPending); ok {
		t.Errorf("a revoke outside Terraform the apply grants again: %+v; want no pending restart", w)
	}
	// A grant the apply makes without a restart leaves one pending: said before it.
	a, err = Assess(withRestart(enable, RestartNever), obs(dmv(false)))
	if err != nil {
		t.Fatal(err)
	}
	if w, ok := warningOf(a.Warnings, WarnRestartPending); !ok || !strings.Contains(w.Detail, "for IFI to be on") {
		t.Errorf("a grant with restart never, IFI off: %+v; want a restart pending for IFI to be on", w)
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

// rsopLoggingOff makes the host report RSoP logging turned off: Group Policy
// unknown for both rights, naming the value.
func rsopLoggingOff(r *contract.ReadInstanceResult) {
	off := contract.GroupPolicyInfo{Known: false, Holders: []contract.Principal{}, RSoPLoggingOff: `HKLM\SOFTWARE\Policies\Microsoft\Windows\System\RSoPLogging = 0`,
		Detail: "Group Policy (RSoP) could not be read: RSoP logging is turned off on this host"}
	r.GroupPolicy = off
	if r.LockPages != nil {
		r.LockPages.GroupPolicy = off
	}
}

// RSoP logging turned off: Group Policy is unknown, and the provider says so
// rather than refusing (issue 37): the refresh names the cause and how to turn
// logging on, and every plan that changes a right says that a policy the host
// cannot see may revert it; a plan that changes nothing says nothing of it.
func TestRSoPLoggingOffIsSaidByThePlanOfAChange(t *testing.T) {
	a, p, err := PlanApply(withLockPages(enable, true), obs(memory(false, contract.MemoryModelConventional, limited), lpHolders(), rsopLoggingOff))
	if err != nil {
		t.Fatalf("PlanApply: %v; want the change planned (unknown Group Policy is said, not refused)", err)
	}
	var gpu *Warning
	for i := range a.Warnings {
		if a.Warnings[i].Code == WarnGPUnknown {
			gpu = &a.Warnings[i]
		}
	}
	if gpu == nil || gpu.Summary != "Group Policy unknown: RSoP logging is turned off" || !strings.Contains(gpu.Detail, `System\RSoPLogging = 0`) ||
		!strings.Contains(gpu.Detail, "Turn off Resultant Set of Policy logging") {
		t.Errorf("assessment warning %+v; want RSoP logging off named with the way to turn it on", gpu)
	}
	var said []string
	for _, w := range p.Warnings {
		if w.Code == WarnGPUnknownChange {
			said = append(said, w.Detail)
			if !strings.Contains(w.Detail, "RSoP logging is turned off") || !strings.Contains(w.Detail, "at least every") {
				t.Errorf("plan warning %q: want RSoP logging off and the reapply interval named", w.Detail)
			}
		}
	}
	if len(said) != 2 || !strings.Contains(said[0], ifiDisplay) || !strings.Contains(said[1], LockPagesDisplay) {
		t.Errorf("plan warnings %q; want one for each right the plan changes", said)
	}
	_, p, err = PlanApply(enable, obs(dmv(true), holders(svcSID), rsopLoggingOff))
	if err != nil || p.Changes() || HasWarning(p.Warnings, WarnGPUnknownChange) {
		t.Errorf("a converged plan: %v, %+v; want no change and nothing said of it", err, p)
	}
}
