// Package ifi decides what Instant File Initialization needs on one SQL Server
// instance: given what the user asked for and what the host reports, is the instance
// where it should be, what must change (grant or revoke the right, restart the Engine),
// what must be refused before anything changes, and what to warn about.
//
// It is plain Go: no Terraform, WinRM or SQL types, so every case is a table test.
package ifi

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
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
	// RestartIfNeeded restarts the Engine when that makes IFI as asked, except on a
	// failover cluster instance or the primary replica of an availability group.
	RestartIfNeeded RestartPolicy = "if_needed"
	// RestartIfNeededIncludingPrimary is RestartIfNeeded that also restarts the
	// primary replica of an availability group (taking its databases offline until
	// a failover or the restart completes).
	RestartIfNeededIncludingPrimary RestartPolicy = "if_needed_including_primary"
	RestartNever                    RestartPolicy = "never"
	// RestartFailover (failover cluster instances only): once every possible owner
	// holds the right, move the role to the best other possible owner (cluster.go).
	RestartFailover RestartPolicy = "failover"
	// RestartClusterRestart (failover cluster instances only): take the SQL Server
	// resource offline and the role online again on its current owner.
	RestartClusterRestart RestartPolicy = "cluster_restart"
)

// RestartPolicies are the restart values, for the schema's validation and documentation.
var RestartPolicies = []RestartPolicy{RestartIfNeeded, RestartIfNeededIncludingPrimary, RestartNever, RestartFailover, RestartClusterRestart}

// Restarts reports whether the policy lets the provider restart the Engine (through
// the service manager, or through the cluster for the cluster policies).
func (r RestartPolicy) Restarts() bool {
	return r == RestartIfNeeded || r == RestartIfNeededIncludingPrimary || r.ThroughCluster()
}

// ThroughCluster reports whether the policy restarts through the failover cluster.
func (r RestartPolicy) ThroughCluster() bool {
	return r == RestartFailover || r == RestartClusterRestart
}

// Source says how the running Engine's IFI state was verified.
type Source string

const (
	SourceSQLDMV   Source = "sql_dmv"  // sys.dm_server_services.instant_file_initialization_enabled
	SourceErrorLog Source = "errorlog" // the startup line of the current error log
	SourceNone     Source = "none"     // could not be verified
)

// GPOSecurityReapply is the longest a Group Policy's user-rights setting goes
// without being applied again: the security extension re-applies its GPOs at a
// policy change, and otherwise at least this often (MaxNoGPOListChangesInterval,
// 960 minutes); the 90-minute background refresh applies only changed GPOs.
const GPOSecurityReapply = 16 * time.Hour

// gpoReapply is GPOSecurityReapply as the texts say it ("16 hours").
var gpoReapply = strconv.Itoa(int(GPOSecurityReapply/time.Hour)) + " hours"

// GPOSetting is where an administrator changes the right in Group Policy.
const GPOSetting = "Computer Configuration > Windows Settings > Security Settings > Local Policies > " +
	"User Rights Assignment > Perform volume maintenance tasks"

// Desired is what the user asked for.
type Desired struct {
	Enabled bool
	// LockPages is lock_pages_in_memory: nil when the configuration leaves Lock
	// Pages in Memory alone (lock_pages.go).
	LockPages *bool
	Grantee   Grantee
	Restart   RestartPolicy
	// PriorGranteeSID is the SID granted by an earlier apply; when it differs from
	// the grantee now asked for, the grant moves (revoke the old SID, grant the new).
	PriorGranteeSID string
	// IneffectiveRestart is what an earlier apply learned from a restart that left
	// IFI on (kept in the resource's private state); nil when none.
	IneffectiveRestart *IneffectiveRestart
	// LastRestart is the provider's timing of its last restart of the instance
	// (kept in the private state), for the plan's "unavailable for about N s"; nil
	// when none.
	LastRestart *MeasuredRestart
	// Planned is what the plan predicted and the user approved (Predict); the apply
	// refuses to do anything else (PlanChanged). "" or ActionVerify: no
	// expectation.
	Planned Action
	// Replacement, for a destroy, is the create that replaces the resource in the
	// same apply, as its plan asked (nil: a destroy the user asked for, or a replace
	// whose create is not known). PlanDestroy keeps a grant it would grant again.
	Replacement *Replacement
}

// Replacement is the create that replaces a destroyed resource in the same apply
// (a tainted resource, or an argument that forces replacement), as its plan asked:
// the instance, whether it enables IFI, its grantee and, when the plan read the
// host, the grantee's SID then.
type Replacement struct {
	Host, Instance string
	Enabled        bool
	// LockPages is the create's lock_pages_in_memory (nil: unset).
	LockPages  *bool `json:",omitempty"`
	Grantee    Grantee
	GranteeSID string // "" when the plan could not resolve it
}

// keeps reports whether the destroy of a (its host, instance and grantee SID, the
// grant of d's grantee) is the first half of a replace whose create grants the same
// right to the same grantee on the same instance: the destroy then keeps the grant
// and the create adopts it. A revoke and a grant again would leave a window in which
// a restart of the Engine (anyone's) loses IFI, and take away a right the host
// already holds as configured (issue 24). Only the user's own destroy revokes.
func (r *Replacement) keeps(d Desired, a *Assessment) bool {
	if r == nil || !r.Enabled || r.Grantee != d.Grantee || !sameHost(r.Host, a.Host) || !strings.EqualFold(r.Instance, a.Instance) {
		return false
	}
	return r.GranteeSID == "" || strings.EqualFold(r.GranteeSID, a.GranteeSID)
}

// keepsLockPages is keeps for Lock pages in memory: the create that replaces the
// resource grants it to the same grantee on the same instance.
func (r *Replacement) keepsLockPages(d Desired, a *Assessment) bool {
	if r == nil || r.LockPages == nil || !*r.LockPages {
		return false
	}
	same := *r
	same.Enabled = true
	return same.keeps(d, a)
}

// sameHost reports whether two spellings of a host name are the same name (case, a
// trailing dot and spaces aside).
func sameHost(a, b string) bool {
	norm := func(h string) string { return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".") }
	return norm(a) == norm(b)
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
	// AG is the instance's Always On availability group membership; nil when
	// unknown (SQL Server was not asked).
	AG *AGMembership
	// RunningBackups are the BACKUP and RESTORE commands running now
	// (sys.dm_exec_requests), each as "BACKUP DATABASE (session 57)"; empty when
	// none, nil when SQL Server was not asked.
	RunningBackups []string
	// SQLConfigured: the provider has a sql block, so SQL Server was to be asked;
	// when its answer is missing (no permission, a failed query, a dropped
	// connection), what it would have said is unknown, not absent.
	SQLConfigured bool `json:",omitempty"`
	// MemoryModel is sys.dm_os_sys_info.sql_memory_model_desc ("" when SQL Server
	// did not say: not asked, or a build before 2016 SP1); MaxServerMemoryMB is max
	// server memory (MB) in use (nil: not known); Edition is SERVERPROPERTY('Edition')
	// ("" not known).
	MemoryModel       string `json:",omitempty"`
	MaxServerMemoryMB *int64 `json:",omitempty"`
	Edition           string `json:",omitempty"`
}

// AGMembership is what SQL Server says about the instance's availability groups.
type AGMembership struct {
	// Groups are the names of the groups the instance is a replica of, sorted;
	// empty when it is in none (or Always On is off).
	Groups []string
	// Role is RolePrimary when the instance is the primary replica of any group,
	// RoleResolving when it is resolving in any other, else RoleSecondary; ""
	// when it is in no group.
	Role string
	// Unhealthy describes each replica this one can see (itself; on a primary,
	// every replica) whose synchronization health is not HEALTHY or that is not
	// connected; empty when all are.
	Unhealthy []string
	// FromPrimary is what the primary replica of each group this instance is a
	// secondary of says of the group (a secondary sees only its own row), in the
	// order of Groups; empty for a primary, which sees every replica itself.
	FromPrimary []GroupView `json:",omitempty"`
}

// GroupView is an availability group as its primary replica sees it, asked for the
// restart of one of its secondaries.
type GroupView struct {
	Group string
	// Primary is the server instance hosting the primary replica, as this replica
	// reports it ("" when it could not tell).
	Primary string
	// Address is where the primary was asked (host:port; "" when it was not).
	Address string
	// Unhealthy describes each replica the primary sees that is not CONNECTED and
	// HEALTHY; empty when all are.
	Unhealthy []string
	// Err says why the primary could not be asked; "" when it answered.
	Err string
}

// Availability group replica roles, as the computed attribute reports them.
const (
	RolePrimary   = "primary"
	RoleSecondary = "secondary"
	RoleResolving = "resolving"
)

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
	Detail  string // the facts; the caller adds the advice its users act on
	Err     error  // the underlying error, when a failure caused the warning
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
	WarnAGUnknown      = "ag_unknown"
	WarnGPUnknown      = "group_policy_unknown"
	// WarnGPUnknownChange: the plan changes a right whose Group Policy the host
	// cannot tell (RSoP unreadable, or its logging turned off): a policy that
	// defines it would revert the change. Said with every plan that makes such a
	// change, since it matters to that change.
	WarnGPUnknownChange = "group_policy_unknown_change"
	WarnPrimaryRestart  = "primary_restart"
	// WarnBackupsUnchecked: a restart goes ahead (or may) without SQL Server having
	// said whether a backup or restore is running.
	WarnBackupsUnchecked = "backups_unchecked"
	// WarnHiddenMembership: IFI stays on although enabled = false, through a
	// membership the host does not report (an IneffectiveRestart applies).
	WarnHiddenMembership = "hidden_membership"
	// WarnPlannedAction: what the apply will do on the instance (Predict).
	WarnPlannedAction = "planned_action"
	// WarnKeptForReplace: a destroy kept the grant for the create that replaces the
	// resource (Replacement).
	WarnKeptForReplace = "kept_for_replace"
	// WarnFailedCreate: a create failed part-way; its replace may restart
	// (FailedCreateReplace).
	WarnFailedCreate = "failed_create"
	// WarnRestartHeld: the run holds restarts (RestartHeld).
	WarnRestartHeld = "restart_held"
)

// Assessment is the decision's view of one instance.
type Assessment struct {
	Host     string
	Instance string

	ServiceName       string
	ServiceAccount    string
	ServiceAccountSID string // the start account's SID, "" when unknown
	ServiceSID        string
	GranteeSID        string

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
	// AG is the instance's availability group membership; nil when unknown.
	AG *AGMembership

	GroupPolicyManaged bool
	// GroupPolicyKnown: the host could read Group Policy (RSoP); when false,
	// GroupPolicyManaged is false but means "unknown".
	GroupPolicyKnown   bool
	GroupPolicyHolders []contract.Principal
	// Converged: the instance is as asked (drives the `enabled` value a refresh stores).
	Converged bool

	Warnings []Warning

	// LockPages is Lock Pages in Memory's assessment (lock_pages.go), made whether
	// or not the resource manages it.
	LockPages *LockPages

	// IneffectiveRestart is Desired.IneffectiveRestart when it still speaks for the
	// instance (same start account and Administrators' members, IFI reported on);
	// the assessment then counts it as a holder path. nil when none applies.
	IneffectiveRestart *IneffectiveRestart

	hidden     *IneffectiveRestart // = IneffectiveRestart
	staysOn    bool
	staysOnVia string
	desired    Desired
	observed   Observed
}

// Step is one change of a right's holder list.
type Step struct {
	// Right is contract.RightLockMemory for Lock Pages in Memory; "" is IFI's
	// right (contract.RightManageVolume).
	Right  string `json:",omitempty"`
	Grant  bool   // true: grant; false: revoke
	SID    string
	Reason string
}

// RightOf is the step's right, "" read as contract.RightManageVolume.
func (s Step) RightOf() string {
	if s.Right == "" {
		return contract.RightManageVolume
	}
	return s.Right
}

// grants reports whether the step grants (for slices.ContainsFunc).
func (s Step) grants() bool { return s.Grant }

// display is the step's right as Local Security Policy names it.
func (s Step) display() string {
	if s.RightOf() == contract.RightLockMemory {
		return LockPagesDisplay
	}
	return ifiDisplay
}

// Plan is what an apply does, in order: the steps, then a restart if Restart.
type Plan struct {
	Steps         []Step
	Restart       bool
	RestartReason string
	// Warnings are about the plan itself (for example a restart whose
	// availability-group role is unknown).
	Warnings []Warning
}

// Changes reports whether the plan changes anything.
func (p *Plan) Changes() bool { return len(p.Steps) > 0 || p.Restart }

// HasWarning reports whether ws has a warning with the code.
func HasWarning(ws []Warning, code string) bool {
	return slices.ContainsFunc(ws, func(w Warning) bool { return w.Code == code })
}
