package ifi

import (
	"fmt"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// PlanApply decides the steps of an apply, or refuses before anything changes.
func PlanApply(d Desired, o Observed) (*Assessment, *Plan, error) {
	a, err := Assess(d, o)
	if err != nil {
		return nil, nil, err
	}
	d = a.desired
	ri := o.Instance

	if a.GroupPolicyManaged {
		if r := a.policyConflict(); r != nil {
			return a, nil, r
		}
	}

	p := &Plan{}
	if d.PriorGranteeSID != "" && !strings.EqualFold(d.PriorGranteeSID, a.GranteeSID) && sidSet(ri.RightHolders)[d.PriorGranteeSID] {
		p.Steps = append(p.Steps, Step{Grant: false, SID: d.PriorGranteeSID,
			Reason: "the grantee moved from " + d.PriorGranteeSID + " to " + a.GranteeSID})
	}
	switch {
	case d.Enabled && !a.PrivilegeGranted:
		p.Steps = append(p.Steps, Step{Grant: true, SID: a.GranteeSID, Reason: "enabled = true and the grantee lacks the right"})
	case !d.Enabled && a.PrivilegeGranted:
		p.Steps = append(p.Steps, Step{Grant: false, SID: a.GranteeSID, Reason: "enabled = false and the grantee holds the right"})
	}

	if r := a.lockPagesSteps(p); r != nil {
		return a, nil, r
	}
	if d.Restart.Restarts() {
		expected := a.expectedAfter(p.Steps)
		switch {
		case a.RunningIFI != nil && *a.RunningIFI != expected:
			p.Restart = true
			p.RestartReason = fmt.Sprintf("the running Engine has IFI %s and needs a restart to have it %s", onOff(*a.RunningIFI), onOff(expected))
		case a.RunningIFI == nil && len(p.Steps) > 0 && ri.ServiceState == contract.StateRunning:
			p.Restart = true
			p.RestartReason = "the right changed and IFI cannot be verified, so the Engine restarts to be sure it takes effect"
		}
		// One restart makes both rights effective: Lock Pages in Memory's reason
		// joins IFI's, or restarts alone.
		if why := a.lockPagesRestart(p); why != "" {
			p.RestartReason = strings.TrimPrefix(p.RestartReason+"; "+why, "; ")
			p.Restart = true
		}
	}
	if w := a.unlimitedMemoryWarning(p); w != nil {
		p.Warnings = append(p.Warnings, *w)
	}
	if w := a.editionOverruledWarning(p); w != nil {
		p.Warnings = append(p.Warnings, *w)
	}
	p.Warnings = append(p.Warnings, a.policyUnknownWarnings(p)...)
	if p.Restart {
		if r := a.restartRoute(p); r != nil {
			return a, nil, r
		}
	}
	if p.Restart {
		if r := a.restartSafety(p); r != nil {
			return a, nil, r
		}
	}
	return a, p, nil
}

func firstGroup(gs []string) string {
	if len(gs) == 0 {
		return "group"
	}
	return gs[0]
}

func (a *Assessment) policyConflict() *Refusal {
	d := a.desired
	if r := a.policyConflictFor(ifiDisplay, GPOSetting, d.Enabled, a.GroupPolicyHolders); r != nil {
		return r
	}
	grantee := a.granteePhrase()
	if d.PriorGranteeSID != "" && !strings.EqualFold(d.PriorGranteeSID, a.GranteeSID) && a.policyLists(d.PriorGranteeSID) {
		return refusal("Group Policy grants the previous grantee",
			fmt.Sprintf("On %s, the grant of \"Perform volume maintenance tasks\" is to move from the previous grantee %s to %s", a.where(), d.PriorGranteeSID, grantee),
			fmt.Sprintf("a Group Policy lists %s, so moving the grant would be reverted at the next policy refresh", d.PriorGranteeSID),
			nothingChanged,
			fmt.Sprintf("remove %s from the GPO setting %s first, then apply again", d.PriorGranteeSID, GPOSetting))
	}
	return nil
}

// granteePhrase names the grantee for refusals.
func (a *Assessment) granteePhrase() string {
	if a.desired.Grantee == GranteeServiceSID {
		return fmt.Sprintf("%s (%s)", winsid.ServiceAccountName(a.ServiceName), a.GranteeSID)
	}
	return fmt.Sprintf("%s (grantee = %q)", a.GranteeSID, a.desired.Grantee)
}

// policyConflictFor refuses a change of the right (display, its GPO setting) that
// a Group Policy listing holders would revert: want says whether the grantee is to
// hold it.
func (a *Assessment) policyConflictFor(display, setting string, want bool, holders []contract.Principal) *Refusal {
	lists := listsSID(holders, a.GranteeSID)
	grantee := a.granteePhrase()
	reverted := "at a policy change, and at least every " + gpoReapply
	switch {
	case want && !lists:
		ways := []string{fmt.Sprintf("add %s to the GPO setting %s", grantee, setting)}
		if other := a.otherPolicyGrantee(holders); other != "" {
			ways = append(ways, other)
		}
		return refusal("Group Policy owns the right and does not grant it",
			fmt.Sprintf("On %s, %s is to hold %q", a.where(), grantee, display),
			fmt.Sprintf("a Group Policy defines who holds it and does not list %s; a local grant would be reverted when the policy is next applied (%s)",
				grantee, reverted),
			nothingChanged, ways...)
	case !want && lists:
		return refusal("Group Policy owns the right and grants it",
			fmt.Sprintf("On %s, %q is to be revoked from %s", a.where(), display, grantee),
			fmt.Sprintf("a Group Policy lists %s for it; a local revoke would be re-granted when the policy is next applied (%s)", grantee, reverted),
			nothingChanged,
			fmt.Sprintf("remove %s from the GPO setting %s", grantee, setting))
	}
	return nil
}

// otherPolicyGrantee names a grantee choice the policy already covers, if any: a
// way out.
func (a *Assessment) otherPolicyGrantee(holders []contract.Principal) string {
	if a.desired.Grantee == GranteeServiceSID && a.ServiceAccountSID != "" && listsSID(holders, a.ServiceAccountSID) {
		return fmt.Sprintf("set grantee = \"service_account\": the policy already lists the start account %s", safetext.Escape(a.ServiceAccount))
	}
	if a.desired.Grantee == GranteeServiceAccount && listsSID(holders, a.ServiceSID) {
		return fmt.Sprintf("set grantee = \"service_sid\": the policy already lists %s", winsid.ServiceAccountName(a.ServiceName))
	}
	return ""
}

// PlanDestroy decides what removing the resource does: revoke the grantee's direct
// grant, never restart. Warnings say what stays in effect.
func PlanDestroy(d Desired, o Observed) (*Assessment, *Plan, []Warning, error) {
	d.Enabled = false
	a, err := Assess(d, o)
	if err != nil {
		return nil, nil, nil, err
	}
	p := &Plan{}
	w := a.lockPagesDestroy(p)
	switch {
	case a.PrivilegeGranted && a.GroupPolicyManaged && a.policyLists(a.GranteeSID):
		w = append(w, Warning{WarnGroupPolicy, "Group Policy grants the right: not revoked",
			fmt.Sprintf("On %s a Group Policy lists %s for \"Perform volume maintenance tasks\", so the provider leaves the grant "+
				"in place (a revoke would be reverted when the policy is next applied, within "+gpoReapply+" at most). Change the GPO setting %s to remove it.",
				a.where(), a.GranteeSID, GPOSetting), nil})
	case a.PrivilegeGranted && d.Replacement.keeps(d, a):
		// The first half of a replace whose create grants the same again: the grant
		// stays, and the create adopts it (a half-done change is adopted, not undone).
		w = append(w, Warning{WarnKeptForReplace, "Grant kept for the replacement",
			fmt.Sprintf("On %s the resource is replaced by one that grants \"Perform volume maintenance tasks\" to the same grantee (%s), "+
				"so its destroy leaves the grant in place instead of revoking it and granting it again; the create then adopts it and "+
				"verifies the instance.", a.where(), a.GranteeSID), nil})
		return a, p, w, nil
	case a.PrivilegeGranted:
		p.Steps = append(p.Steps, Step{Grant: false, SID: a.GranteeSID, Reason: "the resource is destroyed"})
	}
	switch {
	case a.staysOn && !a.TraceFlag1806 && (a.RunningIFI == nil || *a.RunningIFI):
		// The Engine's token holds the right through something the revoke does not
		// touch (Administrators, LocalSystem, another holder): IFI stays on, and no
		// restart changes that.
		w = append(w, StaysOnThrough(a.Host, a.Instance, a.ServiceName, a.staysOnVia, a.RunningIFI != nil))
	case a.RunningIFI == nil || *a.RunningIFI:
		w = append(w, StaysOnAfterDestroy(a.Host, a.Instance, a.ServiceName))
	}
	return a, p, w, nil
}

// StaysOnThrough is the warning of a destroy on an instance whose Engine keeps the
// right without the resource's grant (via says how): IFI stays on, restarted or not.
// verified: SQL Server or its error log said the running Engine has IFI; otherwise
// the warning says that only its next start is known.
func StaysOnThrough(host, instance, service, via string, verified bool) Warning {
	a := &Assessment{Host: host, Instance: instance}
	now := "IFI stays on for the service " + safetext.Escape(service)
	if !verified {
		now = "the service " + safetext.Escape(service) + " has IFI from its next start (whether the running Engine has it now could not be verified)"
	}
	return Warning{WarnStaysOnDestroy, "IFI stays on after the destroy",
		fmt.Sprintf("On %s %s because %s: destroy revokes the resource's own grant, which does not "+
			"turn IFI off, and no restart changes that. To turn IFI off, run the service as a non-administrator account without "+
			"the right (for example %s) and remove the right from that holder.",
			a.where(), now, via, winsid.ServiceAccountName(service)), nil}
}

// StaysOnAfterDestroy is the warning of a destroy (planned or done) on an instance
// whose running Engine has IFI, or may have it.
func StaysOnAfterDestroy(host, instance, service string) Warning {
	a := &Assessment{Host: host, Instance: instance}
	return Warning{WarnStaysOnDestroy, "IFI stays on until the next restart",
		fmt.Sprintf("On %s the running service %s keeps IFI until its next restart; destroy revokes the grant but never restarts SQL Server. "+
			"Restart the service in a maintenance window for the revoke to take effect.", a.where(), safetext.Escape(service)), nil}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
