// Package ifi decides what Instant File Initialization needs on one SQL Server
// instance: given what the user asked for and what the host reports, is the instance
// where it should be, what must change (grant or revoke the right, restart the Engine),
// what must be refused before anything changes, and what to warn about.
//
// It is plain Go: no Terraform, WinRM or SQL types, so every case is a table test.
package ifi

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// Grantee says which SID receives the right.
type Grantee string

const (
	// GranteeServiceSID grants to the per-service SID NT SERVICE\<service>, as SQL Setup does.
	GranteeServiceSID Grantee = "service_sid"
	// GranteeServiceAccount grants to the account the service starts as.
	GranteeServiceAccount Grantee = "service_account"
)

// RestartPolicy says whether the Engine may be restarted to make a change effective.
type RestartPolicy string

const (
	RestartIfNeeded RestartPolicy = "if_needed"
	RestartNever    RestartPolicy = "never"
)

// Source says how the running Engine's IFI state was verified.
type Source string

const (
	SourceSQLDMV   Source = "sql_dmv"  // sys.dm_server_services.instant_file_initialization_enabled
	SourceErrorLog Source = "errorlog" // the startup line of the current error log
	SourceNone     Source = "none"     // could not be verified
)

// GPOSetting is where an administrator changes the right in Group Policy.
const GPOSetting = "Computer Configuration > Windows Settings > Security Settings > Local Policies > " +
	"User Rights Assignment > Perform volume maintenance tasks"

// Desired is what the user asked for.
type Desired struct {
	Enabled bool
	Grantee Grantee
	Restart RestartPolicy
	// PriorGranteeSID is the SID granted by an earlier apply; when it differs from
	// the grantee now asked for, the grant moves (revoke the old SID, grant the new).
	PriorGranteeSID string
}

// Verification is what the running Engine says about itself.
type Verification struct {
	Source  Source
	Enabled *bool // nil when Source is none
	// TDEDatabases are the databases with Transparent Data Encryption; nil = unknown.
	TDEDatabases []string
	SQLVersion   string
	// Clustered is true when SQL Server itself reports a failover cluster instance.
	Clustered bool
}

// Observed is what the host reports now.
type Observed struct {
	Host         string // as the user wrote it, for messages
	Instance     *contract.ReadInstanceResult
	Verification Verification
}

// Warning is a diagnostic for the user: a short summary and a detail that names the
// host, the instance and the next step.
type Warning struct {
	Code    string // stable identifier, see the Warn* constants
	Summary string
	Detail  string
}

// Warning codes.
const (
	WarnTDE            = "tde"
	WarnStaysOn        = "stays_on"
	WarnRestartPending = "restart_pending"
	WarnUnverified     = "unverified"
	WarnSIDTypeNone    = "sid_type_none"
	WarnTraceFlag1806  = "trace_flag_1806"
	WarnGroupPolicy    = "group_policy"
	WarnStaysOnDestroy = "stays_on_until_restart"
	WarnNotRunning     = "not_running"
)

// Assessment is the decision's view of one instance.
type Assessment struct {
	Host     string
	Instance string

	ServiceName     string
	ServiceAccount  string
	ServiceAccountS string // the start account's SID, "" when unknown
	ServiceSID      string
	GranteeSID      string

	// PrivilegeGranted: the grantee directly holds the right.
	PrivilegeGranted bool
	// EffectiveAtNextStart: the Engine's token will hold the right at its next start.
	EffectiveAtNextStart bool
	// EffectiveVia explains why EffectiveAtNextStart is true (a phrase); "" when false.
	EffectiveVia string
	// EffectiveViaOther is true when the right is effective through something other
	// than a direct grant to the grantee (Administrators, LocalSystem, another SID).
	EffectiveViaOther bool
	TraceFlag1806     bool
	ExpectedRunning   bool
	RunningIFI        *bool // nil when unverifiable
	RestartPending    *bool // nil when unverifiable
	VerifiedBy        Source
	SQLVersion        string
	TDEDatabases      []string // nil when unknown
	Clustered         bool

	GroupPolicyManaged bool
	GroupPolicyHolders []contract.Principal
	// Converged: the instance is as asked (drives the `enabled` value a refresh stores).
	Converged bool

	Warnings []Warning

	staysOn    bool
	staysOnVia string
	desired    Desired
	observed   Observed
}

// Refusal is an error returned before anything changed: the asked-for change must
// not be made here. Summary and Detail are ready for the user.
type Refusal struct {
	Summary string
	Detail  string
}

func (r *Refusal) Error() string { return r.Summary + ": " + r.Detail }

// Step is one change of the right's holder list.
type Step struct {
	Grant  bool // true: grant; false: revoke
	SID    string
	Reason string
}

// Plan is what an apply does, in order: the steps, then a restart if Restart.
type Plan struct {
	Steps         []Step
	Restart       bool
	RestartReason string
}

// Changes reports whether the plan changes anything.
func (p *Plan) Changes() bool { return len(p.Steps) > 0 || p.Restart }

// Assess compares what the user asked for with what the host reports.
func Assess(d Desired, o Observed) (*Assessment, error) {
	ri := o.Instance
	if ri == nil || !ri.Found {
		return nil, fmt.Errorf("instance %q is not installed on %s", instanceName(o), o.Host)
	}
	if d.Grantee == "" {
		d.Grantee = GranteeServiceSID
	}
	if d.Restart == "" {
		d.Restart = RestartIfNeeded
	}
	a := &Assessment{
		Host:           o.Host,
		Instance:       ri.Instance,
		ServiceName:    ri.ServiceName,
		ServiceAccount: ri.StartAccount,
		ServiceSID:     winsid.ServiceSID(ri.ServiceName),
		VerifiedBy:     o.Verification.Source,
		SQLVersion:     o.Verification.SQLVersion,
		TDEDatabases:   o.Verification.TDEDatabases,
		Clustered:      ri.Clustered || o.Verification.Clustered,
		desired:        d,
		observed:       o,
	}
	if a.SQLVersion == "" {
		a.SQLVersion = ri.Version
	}
	if a.VerifiedBy == "" {
		a.VerifiedBy = SourceNone
	}
	a.ServiceAccountS = ri.StartAccountSID
	if a.ServiceAccountS == "" {
		if sid, ok := winsid.WellKnownAccountSID(ri.StartAccount); ok {
			a.ServiceAccountS = sid
		}
	}
	switch d.Grantee {
	case GranteeServiceSID:
		a.GranteeSID = a.ServiceSID
	case GranteeServiceAccount:
		if a.ServiceAccountS == "" {
			return nil, fmt.Errorf("cannot resolve the start account %q of %s on %s (instance %s) to a SID; "+
				"use grantee = \"service_sid\", or fix the account's name resolution on the host",
				ri.StartAccount, ri.ServiceName, o.Host, ri.Instance)
		}
		a.GranteeSID = a.ServiceAccountS
	default:
		return nil, fmt.Errorf("unknown grantee %q: use \"service_sid\" or \"service_account\"", d.Grantee)
	}

	holders := sidSet(ri.RightHolders)
	a.PrivilegeGranted = holders[a.GranteeSID]
	a.EffectiveAtNextStart, a.EffectiveVia, a.EffectiveViaOther = a.effective(holders)
	if !d.Enabled {
		// What stays effective once the grantee's own grant is gone.
		rest := sidSet(ri.RightHolders)
		delete(rest, a.GranteeSID)
		a.staysOn, a.staysOnVia, _ = a.effective(rest)
	}
	a.TraceFlag1806 = hasTraceFlag1806(ri.StartupParameters)
	a.ExpectedRunning = a.EffectiveAtNextStart && !a.TraceFlag1806

	if o.Verification.Source != SourceNone && o.Verification.Source != "" && o.Verification.Enabled != nil {
		v := *o.Verification.Enabled
		a.RunningIFI = &v
		p := v != a.ExpectedRunning
		a.RestartPending = &p
	} else {
		a.VerifiedBy = SourceNone
	}

	a.GroupPolicyManaged = ri.GroupPolicy.Known && ri.GroupPolicy.Defined
	if a.GroupPolicyManaged {
		a.GroupPolicyHolders = ri.GroupPolicy.Holders
	}

	pendingBlocks := d.Restart != RestartNever && a.RestartPending != nil && *a.RestartPending
	if d.Enabled {
		a.Converged = a.PrivilegeGranted && !pendingBlocks
	} else {
		a.Converged = !a.PrivilegeGranted && !pendingBlocks
	}

	a.Warnings = a.warnings()
	return a, nil
}

func instanceName(o Observed) string {
	if o.Instance != nil && o.Instance.Instance != "" {
		return o.Instance.Instance
	}
	return "(unknown)"
}

// where names the instance for messages.
func (a *Assessment) where() string {
	return fmt.Sprintf("instance %s on %s", a.Instance, a.Host)
}

// tokenSIDs lists the SIDs of the Engine's token at its next start, each with why.
func (a *Assessment) tokenSIDs() []struct{ sid, why string } {
	ri := a.observed.Instance
	var t []struct{ sid, why string }
	add := func(sid, why string) {
		if sid != "" {
			t = append(t, struct{ sid, why string }{sid, why})
		}
	}
	acct := a.ServiceAccountS
	add(acct, fmt.Sprintf("the start account %s holds the right directly", a.ServiceAccount))
	if ri.ServiceSIDType == 1 || ri.ServiceSIDType == 3 {
		add(a.ServiceSID, fmt.Sprintf("the service SID %s holds the right", winsid.ServiceAccountName(a.ServiceName)))
	}
	admin := acct == winsid.LocalSystem
	for _, m := range ri.AdministratorsMembers {
		if acct != "" && strings.EqualFold(m.SID, acct) {
			admin = true
		}
	}
	if admin {
		add(winsid.Administrators, fmt.Sprintf("the start account %s is a member of Administrators, which holds the right", a.ServiceAccount))
	}
	add(winsid.Everyone, "Everyone holds the right")
	add(winsid.AuthenticatedUs, "Authenticated Users hold the right")
	add(winsid.ServiceLogon, "SERVICE holds the right")
	add(winsid.Users, "Users hold the right")
	return t
}

// effective says whether the token at the next start holds the right given holders,
// why, and whether that is through something other than the grantee's direct grant.
func (a *Assessment) effective(holders map[string]bool) (bool, string, bool) {
	if holders[a.GranteeSID] {
		for _, t := range a.tokenSIDs() {
			if t.sid == a.GranteeSID {
				return true, t.why, false
			}
		}
	}
	if a.ServiceAccountS == winsid.LocalSystem {
		return true, fmt.Sprintf("the start account %s is LocalSystem, which always has the right", a.ServiceAccount), true
	}
	for _, t := range a.tokenSIDs() {
		if holders[t.sid] {
			return true, t.why, true
		}
	}
	return false, "", false
}

func sidSet(ps []contract.Principal) map[string]bool {
	m := make(map[string]bool, len(ps))
	for _, p := range ps {
		m[strings.ToUpper(p.SID)] = true
		m[p.SID] = true
	}
	return m
}

func hasTraceFlag1806(params []string) bool {
	for _, p := range params {
		if strings.EqualFold(strings.TrimSpace(p), "-T1806") {
			return true
		}
	}
	return false
}

func (a *Assessment) warnings() []Warning {
	var w []Warning
	ri := a.observed.Instance
	d := a.desired
	if len(a.TDEDatabases) > 0 {
		w = append(w, Warning{WarnTDE, "IFI does not apply to TDE-encrypted databases",
			fmt.Sprintf("On %s the databases %s use Transparent Data Encryption: SQL Server always zeroes their data files, "+
				"so IFI does not speed up their growth or restore. Nothing to do unless you expected IFI there.",
				a.where(), strings.Join(a.TDEDatabases, ", "))})
	}
	if ri.ServiceState != contract.StateRunning {
		w = append(w, Warning{WarnNotRunning, "SQL Server is not running",
			fmt.Sprintf("The service %s of %s is %q, so IFI cannot be verified; the right takes effect when the service starts. "+
				"Start the service to verify.", a.ServiceName, a.where(), ri.ServiceState)})
	}
	if !d.Enabled && a.staysOn {
		w = append(w, Warning{WarnStaysOn, "IFI stays on although enabled = false",
			fmt.Sprintf("On %s IFI stays on because %s; revoking the direct grant cannot turn it off. "+
				"To turn IFI off, run the service %s as a non-administrator account without the right "+
				"(for example %s) and remove the right from that holder.",
				a.where(), a.staysOnVia, a.ServiceName, winsid.ServiceAccountName(a.ServiceName))})
	}
	if d.Restart == RestartNever && a.RestartPending != nil && *a.RestartPending {
		state := "off"
		if a.ExpectedRunning {
			state = "on"
		}
		w = append(w, Warning{WarnRestartPending, "A restart of SQL Server is pending",
			fmt.Sprintf("On %s a restart of the service %s is pending for IFI to be %s (restart = \"never\", so the provider "+
				"will not restart it). Restart the service in a maintenance window, or set restart = \"if_needed\".",
				a.where(), a.ServiceName, state)})
	}
	if a.VerifiedBy == SourceNone && ri.ServiceState == contract.StateRunning {
		w = append(w, Warning{WarnUnverified, "IFI could not be verified",
			fmt.Sprintf("Neither SQL Server nor its error log said whether IFI is on for %s, so ifi_enabled and restart_pending are null. "+
				"Configure the provider's sql block (a login with VIEW SERVER STATE) so SQL Server can be asked.", a.where())})
	}
	if d.Grantee == GranteeServiceSID && ri.ServiceSIDType == 0 {
		w = append(w, Warning{WarnSIDTypeNone, "The service SID does not count for this service",
			fmt.Sprintf("The service %s of %s has SID type none, so a grant to %s is not in its token. "+
				"Run `sc.exe sidtype %s unrestricted` on the host and restart the service, or use grantee = \"service_account\".",
				a.ServiceName, a.where(), winsid.ServiceAccountName(a.ServiceName), a.ServiceName)})
	}
	if a.TraceFlag1806 {
		w = append(w, Warning{WarnTraceFlag1806, "Trace flag 1806 disables IFI",
			fmt.Sprintf("The service %s of %s starts with -T1806, which turns IFI off whatever the right says. "+
				"Remove -T1806 from the startup parameters (SQL Server Configuration Manager) and restart.", a.ServiceName, a.where())})
	}
	if a.GroupPolicyManaged {
		lists := "does not list " + a.GranteeSID
		if a.policyLists(a.GranteeSID) {
			lists = "lists " + a.GranteeSID
		}
		w = append(w, Warning{WarnGroupPolicy, "Group Policy owns the right",
			fmt.Sprintf("On %s a Group Policy defines %q (%s) and re-applies it every 90 minutes; it %s (policy holders: %s). "+
				"Local changes that disagree are reverted; change the policy instead.",
				a.where(), "Perform volume maintenance tasks", GPOSetting, lists, principals(a.GroupPolicyHolders))})
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
			s = append(s, fmt.Sprintf("%s (%s)", p.Name, p.SID))
		} else {
			s = append(s, p.SID)
		}
	}
	return strings.Join(s, ", ")
}

func (a *Assessment) policyLists(sid string) bool {
	for _, p := range a.GroupPolicyHolders {
		if strings.EqualFold(p.SID, sid) {
			return true
		}
	}
	return false
}

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

	holders := sidSet(ri.RightHolders)
	p := &Plan{}
	if d.PriorGranteeSID != "" && !strings.EqualFold(d.PriorGranteeSID, a.GranteeSID) && holders[d.PriorGranteeSID] {
		p.Steps = append(p.Steps, Step{Grant: false, SID: d.PriorGranteeSID,
			Reason: "the grantee moved from " + d.PriorGranteeSID + " to " + a.GranteeSID})
		delete(holders, d.PriorGranteeSID)
		delete(holders, strings.ToUpper(d.PriorGranteeSID))
	}
	switch {
	case d.Enabled && !a.PrivilegeGranted:
		p.Steps = append(p.Steps, Step{Grant: true, SID: a.GranteeSID, Reason: "enabled = true and the grantee lacks the right"})
		holders[a.GranteeSID] = true
	case !d.Enabled && a.PrivilegeGranted:
		p.Steps = append(p.Steps, Step{Grant: false, SID: a.GranteeSID, Reason: "enabled = false and the grantee holds the right"})
		delete(holders, a.GranteeSID)
	}

	if d.Restart == RestartIfNeeded {
		effective, _, _ := a.effective(holders)
		expected := effective && !a.TraceFlag1806
		switch {
		case a.RunningIFI != nil && *a.RunningIFI != expected:
			p.Restart = true
			p.RestartReason = fmt.Sprintf("the running Engine has IFI %s and needs a restart to have it %s", onOff(*a.RunningIFI), onOff(expected))
		case a.RunningIFI == nil && len(p.Steps) > 0 && ri.ServiceState == contract.StateRunning:
			p.Restart = true
			p.RestartReason = "the right changed and IFI cannot be verified, so the Engine restarts to be sure it takes effect"
		}
	}
	if p.Restart && a.Clustered {
		return a, nil, &Refusal{
			Summary: "Clustered SQL Server instance: refusing to restart it",
			Detail: fmt.Sprintf("%s is a failover cluster instance and IFI needs a restart (%s). The provider never restarts a "+
				"clustered instance through the service manager. Nothing was changed. Set restart = \"never\", grant the right on "+
				"every node, and restart the SQL Server role through Failover Cluster Manager.", capitalize(a.where()), p.RestartReason),
		}
	}
	return a, p, nil
}

func (a *Assessment) policyConflict() *Refusal {
	d := a.desired
	lists := a.policyLists(a.GranteeSID)
	grantee := fmt.Sprintf("%s (grantee = %q)", a.GranteeSID, d.Grantee)
	if d.Grantee == GranteeServiceSID {
		grantee = fmt.Sprintf("%s (%s)", winsid.ServiceAccountName(a.ServiceName), a.GranteeSID)
	}
	switch {
	case d.Enabled && !lists:
		detail := fmt.Sprintf("On %s a Group Policy defines who holds \"Perform volume maintenance tasks\" and does not list %s; "+
			"a local grant would be reverted at the next policy refresh (every 90 minutes). Nothing was changed. "+
			"Add %s to the GPO setting %s.", a.where(), grantee, grantee, GPOSetting)
		if other := a.otherPolicyGrantee(); other != "" {
			detail += " " + other
		}
		return &Refusal{Summary: "Group Policy owns the right and does not grant it", Detail: detail}
	case !d.Enabled && lists:
		return &Refusal{Summary: "Group Policy owns the right and grants it",
			Detail: fmt.Sprintf("On %s a Group Policy lists %s for \"Perform volume maintenance tasks\"; a local revoke would be "+
				"re-granted at the next policy refresh (every 90 minutes). Nothing was changed. Remove %s from the GPO setting %s.",
				a.where(), grantee, grantee, GPOSetting)}
	}
	if d.PriorGranteeSID != "" && !strings.EqualFold(d.PriorGranteeSID, a.GranteeSID) && a.policyLists(d.PriorGranteeSID) {
		return &Refusal{Summary: "Group Policy grants the previous grantee",
			Detail: fmt.Sprintf("On %s a Group Policy lists the previous grantee %s; moving the grant would be reverted at the next "+
				"policy refresh. Nothing was changed. Remove %s from the GPO setting %s first.",
				a.where(), d.PriorGranteeSID, d.PriorGranteeSID, GPOSetting)}
	}
	return nil
}

// otherPolicyGrantee names a grantee choice the policy already covers, if any.
func (a *Assessment) otherPolicyGrantee() string {
	if a.desired.Grantee == GranteeServiceSID && a.ServiceAccountS != "" && a.policyLists(a.ServiceAccountS) {
		return fmt.Sprintf("The policy already lists the start account %s: set grantee = \"service_account\".", a.ServiceAccount)
	}
	if a.desired.Grantee == GranteeServiceAccount && a.policyLists(a.ServiceSID) {
		return fmt.Sprintf("The policy already lists %s: set grantee = \"service_sid\".", winsid.ServiceAccountName(a.ServiceName))
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
	var w []Warning
	switch {
	case a.PrivilegeGranted && a.GroupPolicyManaged && a.policyLists(a.GranteeSID):
		w = append(w, Warning{WarnGroupPolicy, "Group Policy grants the right: not revoked",
			fmt.Sprintf("On %s a Group Policy lists %s for \"Perform volume maintenance tasks\", so the provider leaves the grant "+
				"in place (a revoke would be reverted within 90 minutes). Change the GPO setting %s to remove it.",
				a.where(), a.GranteeSID, GPOSetting)})
	case a.PrivilegeGranted:
		p.Steps = append(p.Steps, Step{Grant: false, SID: a.GranteeSID, Reason: "the resource is destroyed"})
	}
	if a.RunningIFI == nil || *a.RunningIFI {
		w = append(w, Warning{WarnStaysOnDestroy, "IFI stays on until the next restart",
			fmt.Sprintf("On %s the running service %s keeps IFI until its next restart; destroy never restarts SQL Server. "+
				"Restart the service in a maintenance window for the revoke to take effect.", a.where(), a.ServiceName)})
	}
	return a, p, w, nil
}

// Check verifies the instance after a restart: an error when SQL Server can say what
// it runs with and that differs from what the right, the start account and the
// startup parameters should give.
func Check(a *Assessment) error {
	if a.RunningIFI == nil || *a.RunningIFI == a.ExpectedRunning {
		return nil
	}
	var causes []string
	if a.TraceFlag1806 {
		causes = append(causes, "trace flag 1806 is in the startup parameters")
	}
	if a.GroupPolicyManaged {
		causes = append(causes, "a Group Policy refresh changed the right's holders")
	}
	if a.desired.Grantee == GranteeServiceSID && a.observed.Instance.ServiceSIDType == 0 {
		causes = append(causes, fmt.Sprintf("the service SID type of %s is none, so its service SID is not in the token", a.ServiceName))
	}
	if *a.RunningIFI && !a.ExpectedRunning {
		causes = append(causes, "the start account gets the right through a group the host does not report (a domain group nested in Administrators)")
	}
	causes = append(causes, fmt.Sprintf("the service %s did not really restart (check its process start time)", a.ServiceName))
	return fmt.Errorf("IFI is not as asked after the restart of %s on %s: SQL Server (%s) reports IFI %s, but the right "+
		"and start account say it should be %s. Likely causes: %s. Fix the cause on the host, then run terraform apply again",
		a.ServiceName, a.Host, a.VerifiedBy, onOff(*a.RunningIFI), onOff(a.ExpectedRunning), strings.Join(causes, "; "))
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

// HasWarning reports whether ws has a warning with the code.
func HasWarning(ws []Warning, code string) bool {
	return slices.ContainsFunc(ws, func(w Warning) bool { return w.Code == code })
}

// Verify says how the running Engine's IFI state is known. dmv is what
// sys.dm_server_services reported (nil when SQL Server was not asked, did not answer,
// or has no such column). SQL Server's own answer wins; else the current error log's
// startup line, which speaks for the running process only while the Engine runs;
// else nothing is known.
func Verify(ri *contract.ReadInstanceResult, dmv *bool) (Source, *bool) {
	if dmv != nil {
		v := *dmv
		return SourceSQLDMV, &v
	}
	if ri != nil && ri.ServiceState == contract.StateRunning && ri.ErrorLog.Found && ri.ErrorLog.Enabled != nil {
		v := *ri.ErrorLog.Enabled
		return SourceErrorLog, &v
	}
	return SourceNone, nil
}
