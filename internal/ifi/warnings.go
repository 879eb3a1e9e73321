package ifi

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

func (a *Assessment) warnings() []Warning {
	var w []Warning
	ri := a.observed.Instance
	d := a.desired
	if len(a.TDEDatabases) > 0 {
		w = append(w, Warning{WarnTDE, "IFI does not apply to TDE-encrypted databases",
			fmt.Sprintf("On %s the databases %s use Transparent Data Encryption: SQL Server always zeroes their data files, "+
				"so IFI does not speed up their growth or restore. Nothing to do unless you expected IFI there.",
				a.where(), strings.Join(a.TDEDatabases, ", ")), nil})
	}
	if ri.ServiceState != contract.StateRunning {
		w = append(w, Warning{WarnNotRunning, "SQL Server is not running",
			fmt.Sprintf("The service %s of %s is %q, so IFI cannot be verified; the right takes effect when the service starts. "+
				"Start the service to verify.", a.ServiceName, a.where(), ri.ServiceState), nil})
	}
	if !d.Enabled && a.staysOn && a.hidden != nil && a.staysOnVia == a.hiddenVia() {
		w = append(w, a.hiddenWarning())
	} else if !d.Enabled && a.staysOn {
		w = append(w, Warning{WarnStaysOn, "IFI stays on although enabled = false",
			fmt.Sprintf("On %s IFI stays on because %s; revoking the direct grant cannot turn it off. "+
				"To turn IFI off, run the service %s as a non-administrator account without the right "+
				"(for example %s) and remove the right from that holder.",
				a.where(), a.staysOnVia, a.ServiceName, winsid.ServiceAccountName(a.ServiceName)), nil})
	}
	if want, ok := a.pendingAfterApply(); ok {
		w = append(w, Warning{WarnRestartPending, "A restart of SQL Server is pending",
			fmt.Sprintf("On %s a restart of the service %s is pending for IFI to be %s (restart = \"never\", so the provider "+
				"will not restart it). Restart the service in a maintenance window, or set restart = \"if_needed\".",
				a.where(), a.ServiceName, onOff(want)), nil})
	}
	if a.VerifiedBy == SourceNone && ri.ServiceState == contract.StateRunning {
		w = append(w, Warning{WarnUnverified, "IFI could not be verified",
			fmt.Sprintf("Neither SQL Server nor its error log said whether IFI is on for %s, so ifi_enabled and restart_pending are null. "+
				"Configure the provider's sql block (a login with VIEW SERVER STATE) so SQL Server can be asked.", a.where()), nil})
	}
	if d.Grantee == GranteeServiceSID && ri.ServiceSIDType == 0 {
		w = append(w, Warning{WarnSIDTypeNone, "The service SID does not count for this service",
			fmt.Sprintf("The service %s of %s has SID type none, so a grant to %s is not in its token. "+
				"Run `sc.exe sidtype %s unrestricted` on the host and restart the service, or use grantee = \"service_account\".",
				a.ServiceName, a.where(), winsid.ServiceAccountName(a.ServiceName), a.ServiceName), nil})
	}
	if a.TraceFlag1806 {
		w = append(w, Warning{WarnTraceFlag1806, "Trace flag 1806 disables IFI",
			fmt.Sprintf("The service %s of %s starts with -T1806, which turns IFI off whatever the right says. "+
				"Remove -T1806 from the startup parameters (SQL Server Configuration Manager) and restart.", a.ServiceName, a.where()), nil})
	}
	if !a.GroupPolicyKnown && ri.GroupPolicy.RSoPLoggingOff != "" {
		w = append(w, Warning{WarnGPUnknown, "Group Policy unknown: RSoP logging is turned off",
			fmt.Sprintf("On %s RSoP logging is turned off (%s), so what Resultant Set of Policy holds may be stale and cannot say whether a Group Policy "+
				"defines \"Perform volume maintenance tasks\"; group_policy_managed is null. If a policy does, it reverts local changes at the next refresh "+
				"(at a policy change, and at least every "+gpoReapply+"). Turn RSoP logging on (set \"Turn off Resultant Set of Policy logging\" to Not "+
				"Configured or Disabled, under Computer Configuration > Administrative Templates > System > Group Policy), or check with gpresult /scope computer /h.",
				a.where(), safetext.Escape(ri.GroupPolicy.RSoPLoggingOff)), nil})
	} else if !a.GroupPolicyKnown {
		w = append(w, Warning{WarnGPUnknown, "Group Policy unknown",
			fmt.Sprintf("On %s the host could not tell whether a Group Policy defines \"Perform volume maintenance tasks\" (%s), so "+
				"group_policy_managed is null. If a policy does, it reverts local changes at the next refresh (at a policy change, and at "+
				"least every "+gpoReapply+"). Check with gpresult /scope computer /h on the host, or enable RSoP logging.",
				a.where(), safetext.Escape(ri.GroupPolicy.Detail)), nil})
	}
	if a.GroupPolicyManaged {
		lists := "does not list " + a.GranteeSID
		if a.policyLists(a.GranteeSID) {
			lists = "lists " + a.GranteeSID
		}
		w = append(w, Warning{WarnGroupPolicy, "Group Policy owns the right",
			fmt.Sprintf("On %s a Group Policy defines %q (%s) and re-applies it whenever a policy changes and at least every "+gpoReapply+"; it %s (policy holders: %s). "+
				"Local changes that disagree are reverted; change the policy instead.",
				a.where(), "Perform volume maintenance tasks", GPOSetting, lists, principals(a.GroupPolicyHolders)), nil})
	}
	return w
}

func principals(ps []contract.Principal) string {
	if len(ps) == 0 {
		return "none"
	}
	s := make([]string, 0, len(ps))
	for _, p := range ps {
		if p.Name != "" {
			s = append(s, fmt.Sprintf("%s (%s)", safetext.Escape(p.Name), safetext.Escape(p.SID)))
		} else {
			s = append(s, safetext.Escape(p.SID))
		}
	}
	return strings.Join(s, ", ")
}

// pendingAfterApply is the IFI a restart is pending for (ok) once the instance
// is as asked, with restart = "never": the running Engine's differs from what its
// next start gives after an apply of the grantee's grant (enabled) or revoke. The
// warning describes the state an apply leaves, never one it is about to end (a
// right revoked outside Terraform, which the apply grants again while the running
// Engine still has IFI). Under a Group Policy the holders stay as they are.
func (a *Assessment) pendingAfterApply() (want, ok bool) {
	if a.desired.Restart != RestartNever || a.RunningIFI == nil {
		return false, false
	}
	want = a.ExpectedRunning
	if !a.GroupPolicyManaged {
		want = a.expectedAfter([]Step{{Grant: a.desired.Enabled, SID: a.GranteeSID}})
	}
	return want, *a.RunningIFI != want
}

// policyUnknownWarnings are the plan's warnings for each right it changes whose
// Group Policy the host cannot tell. Unknown is unsafe, and the provider says so
// rather than refusing: a policy defining the right would revert the change within
// its reapply interval, which the plan names, and the host gives no way to know
// short of turning RSoP logging on (a refusal would block every host where an
// administrator turned it off, with nothing the configuration could do about it).
func (a *Assessment) policyUnknownWarnings(p *Plan) []Warning {
	ri := a.observed.Instance
	var w []Warning
	for _, r := range []struct {
		right, display string
		gp             contract.GroupPolicyInfo
	}{
		{contract.RightManageVolume, ifiDisplay, ri.GroupPolicy},
		{contract.RightLockMemory, LockPagesDisplay, lockPagesPolicy(ri)},
	} {
		if r.gp.Known || !slices.ContainsFunc(p.Steps, func(s Step) bool { return s.RightOf() == r.right }) {
			continue
		}
		why := "the host could not read Resultant Set of Policy (" + safetext.Escape(r.gp.Detail) + ")"
		if r.gp.RSoPLoggingOff != "" {
			why = "RSoP logging is turned off (" + safetext.Escape(r.gp.RSoPLoggingOff) + "), so what Resultant Set of Policy holds may be stale"
		}
		w = append(w, Warning{WarnGPUnknownChange, "This change may be reverted by a Group Policy the host cannot tell",
			fmt.Sprintf("The apply changes %q on %s, but %s: if a Group Policy defines the right, it reverts the change at the next refresh "+
				"(at a policy change, and at least every "+gpoReapply+"). Check with gpresult /scope computer /h on the host before relying on it.",
				r.display, a.where(), why), nil})
	}
	return w
}

// lockPagesPolicy is the Group Policy read of Lock pages in memory; known (nothing
// to say) when the host does not report the right.
func lockPagesPolicy(ri *contract.ReadInstanceResult) contract.GroupPolicyInfo {
	if ri.LockPages == nil {
		return contract.GroupPolicyInfo{Known: true}
	}
	return ri.LockPages.GroupPolicy
}
