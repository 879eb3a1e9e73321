package ifi

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

// Lock Pages in Memory (LPIM) is decided beside IFI on the same instance: the same
// grantee, the same token rules (tokenSIDs, LocalSystem), the same Group Policy
// refusal, and one restart for both rights (PlanApply). design/lock-pages.md says
// why it is an argument of the IFI resource and not a resource of its own.

// LockPagesDisplay is the right's name in Local Security Policy.
const LockPagesDisplay = "Lock pages in memory"

// LockPagesGPOSetting is where an administrator changes Lock pages in memory in
// Group Policy.
const LockPagesGPOSetting = "Computer Configuration > Windows Settings > Security Settings > Local Policies > " +
	"User Rights Assignment > Lock pages in memory"

// ifiDisplay is the IFI right's name in Local Security Policy.
const ifiDisplay = "Perform volume maintenance tasks"

// Warning codes of Lock Pages in Memory.
const (
	// WarnUnlimitedMemory: the plan grants Lock pages in memory while max server
	// memory is SQL Server's default (no limit).
	WarnUnlimitedMemory = "lock_pages_unlimited_memory"
	// WarnLockPagesEdition: the edition does not use locked pages.
	WarnLockPagesEdition = "lock_pages_edition"
	// WarnLockPagesUnknown: lock_pages_in_memory is set but the host does not
	// report the right's holders (an older script, or a read that failed).
	WarnLockPagesUnknown = "lock_pages_unknown"
	// WarnLockPagesGroupPolicy: a Group Policy defines Lock pages in memory.
	WarnLockPagesGroupPolicy = "lock_pages_group_policy"
	// WarnLockPagesDestroy: a destroy revokes (or keeps) Lock pages in memory, and
	// what stays in effect.
	WarnLockPagesDestroy = "lock_pages_destroy"
	// WarnLockPagesEditionOverruled: SQL Server reports locked pages on an edition
	// the edition table (KB 2659143) says does not use them; its report wins.
	WarnLockPagesEditionOverruled = "lock_pages_edition_overruled"
)

// LockPages is the assessment of Lock Pages in Memory on one instance. It is made
// whether or not the resource manages it (the computed attributes and the data
// source report it); only Managed changes anything.
type LockPages struct {
	// Managed: the configuration sets lock_pages_in_memory (Desired.LockPages);
	// Want is its value.
	Managed, Want bool
	// Known: the host reported the right's holders. When false nothing below but
	// the memory model is known.
	Known bool
	// Granted: the grantee directly holds SeLockMemoryPrivilege.
	Granted bool
	// EffectiveAtNextStart: the Engine's token holds the right at its next start
	// (EffectiveVia says why; EffectiveViaOther: through something other than the
	// grantee's own grant).
	EffectiveAtNextStart bool
	EffectiveVia         string
	EffectiveViaOther    bool
	// Supported is false on an edition that never uses locked pages (Express),
	// unless SQL Server reports that its running Engine uses them: its own report
	// wins over the edition table (EditionOverruled then says so).
	Supported        bool
	EditionOverruled bool
	// ExpectedLocked: the next start uses locked pages (EffectiveAtNextStart on an
	// edition that supports them).
	ExpectedLocked bool
	// MemoryModel is the running Engine's, as verified (VerifiedBy); "" unknown.
	MemoryModel string
	VerifiedBy  Source
	// Locked: the running Engine uses locked pages (LOCK_PAGES or LARGE_PAGES);
	// nil when unknown. RestartPending: it differs from ExpectedLocked.
	Locked         *bool
	RestartPending *bool

	GroupPolicyKnown, GroupPolicyManaged bool
	GroupPolicyHolders                   []contract.Principal
	// MaxServerMemoryMB is max server memory (MB) in use; nil unknown.
	MaxServerMemoryMB *int64
	// Converged: as asked (drives the lock_pages_in_memory value a refresh stores);
	// true when not managed.
	Converged bool

	staysOn    bool
	staysOnVia string
}

// VerifyMemory says how the running Engine's memory model is known: SQL Server's
// own answer (sys.dm_os_sys_info.sql_memory_model_desc) wins; else the current
// error log's startup line while the Engine runs; else nothing.
func VerifyMemory(ri *contract.ReadInstanceResult, dmv string) (Source, string) {
	if dmv != "" {
		return SourceSQLDMV, dmv
	}
	if ri != nil && ri.ServiceState == contract.StateRunning && ri.ErrorLog.MemoryModel != "" {
		return SourceErrorLog, ri.ErrorLog.MemoryModel
	}
	return SourceNone, ""
}

// lockedModel reports whether a memory model uses locked pages (large pages are
// locked as well); nil for "".
func lockedModel(model string) *bool {
	if model == "" {
		return nil
	}
	v := model == contract.MemoryModelLockPages || model == contract.MemoryModelLargePages
	return &v
}

// supportsLockedPages says whether an edition uses locked pages when the Engine's
// account holds the right. KB 2659143 ("How to enable the locked pages feature
// in SQL Server 2012"): from SQL Server 2012 the right alone enables them on
// Enterprise, Standard and Business Intelligence (Developer is Enterprise's
// feature set, Data Center Enterprise's predecessor); its table gives other
// editions (Express and Web among them) no support for locked pages. An unknown
// edition ("": SQL Server was not asked) counts as supported, and the check after a
// restart names the edition among the causes when the Engine stays conventional.
func supportsLockedPages(edition string) bool {
	e := strings.ToLower(edition)
	if e == "" {
		return true
	}
	for _, ok := range []string{"enterprise", "developer", "standard", "business intelligence", "data center"} {
		if strings.HasPrefix(e, ok) {
			return true
		}
	}
	return false
}

// assessLockPages fills a.LockPages from the observation (Assess calls it once the
// IFI side, the grantee above all, is known).
func (a *Assessment) assessLockPages() {
	d, o := a.desired, a.observed
	ri := o.Instance
	lp := &LockPages{Managed: d.LockPages != nil, Supported: supportsLockedPages(o.Verification.Edition),
		MaxServerMemoryMB: o.Verification.MaxServerMemoryMB}
	if lp.Managed {
		lp.Want = *d.LockPages
	}
	lp.VerifiedBy, lp.MemoryModel = VerifyMemory(ri, o.Verification.MemoryModel)
	lp.Locked = lockedModel(lp.MemoryModel)
	if !lp.Supported && lp.Locked != nil && *lp.Locked {
		// The running Engine locks its pages on an edition the table says cannot: the
		// table (from a KB) is a belief, SQL Server's report a fact. Believing the
		// table would plan a restart "to stop using locked pages" on every apply, a
		// restart that cannot change it.
		lp.Supported, lp.EditionOverruled = true, true
	}
	if ri.LockPages != nil {
		lp.Known = true
		holders := sidSet(ri.LockPages.Holders)
		lp.Granted = holders[a.GranteeSID]
		lp.EffectiveAtNextStart, lp.EffectiveVia, lp.EffectiveViaOther = a.effectiveWith(holders, nil)
		if lp.Managed && !lp.Want {
			delete(holders, a.GranteeSID)
			delete(holders, strings.ToUpper(a.GranteeSID))
			lp.staysOn, lp.staysOnVia, _ = a.effectiveWith(holders, nil)
		}
		lp.ExpectedLocked = lp.EffectiveAtNextStart && lp.Supported
		if lp.Locked != nil {
			p := *lp.Locked != lp.ExpectedLocked
			lp.RestartPending = &p
		}
		gp := ri.LockPages.GroupPolicy
		lp.GroupPolicyKnown = gp.Known
		lp.GroupPolicyManaged = gp.Known && gp.Defined
		if lp.GroupPolicyManaged {
			lp.GroupPolicyHolders = gp.Holders
		}
	}
	pendingBlocks := d.Restart.Restarts() && lp.RestartPending != nil && *lp.RestartPending
	lp.Converged = !lp.Managed || lp.Known && lp.Granted == lp.Want && !pendingBlocks
	a.LockPages = lp
}

// lockPagesSteps appends the plan's Lock Pages in Memory steps (none when it is
// not managed), or refuses: the host does not report the right, or a Group Policy
// would revert the change.
func (a *Assessment) lockPagesSteps(p *Plan) *Refusal {
	lp, d := a.LockPages, a.desired
	if !lp.Managed {
		return nil
	}
	if !lp.Known {
		return refusal("The host does not report Lock pages in memory",
			fmt.Sprintf("On %s, lock_pages_in_memory = %t asks to manage %q", a.where(), lp.Want, LockPagesDisplay),
			"the host's read did not report who holds "+contract.RightLockMemory+", so the provider cannot tell what a change would do",
			nothingChanged, "check the provider's version on this host's scripts and apply again", "remove lock_pages_in_memory")
	}
	if a.Clustered {
		return lockPagesClustered(a.where(), lp.Want)
	}
	if lp.GroupPolicyManaged {
		if r := a.policyConflictFor(LockPagesDisplay, LockPagesGPOSetting, lp.Want, lp.GroupPolicyHolders); r != nil {
			return r
		}
	}
	if d.PriorGranteeSID != "" && !strings.EqualFold(d.PriorGranteeSID, a.GranteeSID) && sidSet(a.observed.Instance.LockPages.Holders)[d.PriorGranteeSID] {
		p.Steps = append(p.Steps, Step{Right: contract.RightLockMemory, Grant: false, SID: d.PriorGranteeSID,
			Reason: "the grantee moved from " + d.PriorGranteeSID + " to " + a.GranteeSID})
	}
	switch {
	case lp.Want && !lp.Granted:
		p.Steps = append(p.Steps, Step{Right: contract.RightLockMemory, Grant: true, SID: a.GranteeSID,
			Reason: "lock_pages_in_memory = true and the grantee lacks the right"})
	case !lp.Want && lp.Granted:
		p.Steps = append(p.Steps, Step{Right: contract.RightLockMemory, Grant: false, SID: a.GranteeSID,
			Reason: "lock_pages_in_memory = false and the grantee holds the right"})
	}
	return nil
}

// lockPagesClustered refuses lock_pages_in_memory (want) on a failover cluster
// instance (where names it).
func lockPagesClustered(where string, want bool) *Refusal {
	return refusal("Lock pages in memory is not managed on a failover cluster instance yet",
		fmt.Sprintf("On %s, lock_pages_in_memory = %t asks to manage %q", where, want, LockPagesDisplay),
		"the instance is a failover cluster instance, whose every possible owner would need the right; the provider manages only IFI there",
		nothingChangedOnAnyNode, "grant "+contract.RightLockMemory+" on every possible owner yourself", "remove lock_pages_in_memory")
}

// lockPagesRestart says whether the Engine must restart for Lock Pages in Memory
// to be as the plan's steps leave it, and why ("" when not).
func (a *Assessment) lockPagesRestart(p *Plan) string {
	lp, ri := a.LockPages, a.observed.Instance
	if !lp.Managed || !lp.Known || !a.desired.Restart.Restarts() {
		return ""
	}
	changed := slices.ContainsFunc(p.Steps, func(s Step) bool { return s.RightOf() == contract.RightLockMemory })
	effective, _, _ := a.effectiveWith(holdersAfter(ri.LockPages.Holders, p.Steps, contract.RightLockMemory), nil)
	expected := effective && lp.Supported
	switch {
	case lp.Locked != nil && *lp.Locked != expected:
		return fmt.Sprintf("the running Engine's memory model is %s and needs a restart to %s locked pages", lp.MemoryModel, useOrNot(expected))
	case lp.Locked == nil && changed && ri.ServiceState == contract.StateRunning:
		return "Lock pages in memory changed and the memory model cannot be verified, so the Engine restarts to be sure it takes effect"
	}
	return ""
}

func useOrNot(b bool) string {
	if b {
		return "use"
	}
	return "stop using"
}

// lockPagesWarnings are the assessment's warnings about Lock Pages in Memory,
// only when the resource manages it.
func (a *Assessment) lockPagesWarnings() []Warning {
	lp := a.LockPages
	if lp == nil || !lp.Managed {
		return nil
	}
	var w []Warning
	if !lp.Known {
		w = append(w, Warning{WarnLockPagesUnknown, "Lock pages in memory is not reported by the host",
			fmt.Sprintf("The read of %s did not report who holds %s, so lock_pages_in_memory_granted is null and the apply refuses to change it.",
				a.where(), contract.RightLockMemory), nil})
		return w
	}
	if lp.Want && !lp.Supported {
		w = append(w, Warning{WarnLockPagesEdition, "This edition does not use locked pages",
			fmt.Sprintf("On %s SQL Server reports the edition %q, which does not use locked pages whatever the right says (Microsoft KB 2659143: "+
				"locked pages need Enterprise, Standard, Business Intelligence or Developer from SQL Server 2012 on); the grant changes nothing for it.",
				a.where(), safetext.Escape(a.observed.Verification.Edition)), nil})
	}
	if lp.Managed && !lp.Want && lp.staysOn {
		w = append(w, Warning{WarnStaysOn, "Lock pages in memory stays on although lock_pages_in_memory = false",
			fmt.Sprintf("On %s the Engine keeps %q because %s; revoking the direct grant cannot take it away.", a.where(), LockPagesDisplay, lp.staysOnVia), nil})
	}
	if lp.GroupPolicyManaged {
		w = append(w, Warning{WarnLockPagesGroupPolicy, "Group Policy owns Lock pages in memory",
			fmt.Sprintf("On %s a Group Policy defines %q (%s) and re-applies it at least every "+gpoReapply+" (policy holders: %s). "+
				"Local changes that disagree are reverted; change the policy instead.",
				a.where(), LockPagesDisplay, LockPagesGPOSetting, principals(lp.GroupPolicyHolders)), nil})
	}
	return w
}

// editionOverruledWarning is the plan's warning when SQL Server's report of locked
// pages overrules the edition table, given once: with a plan that changes Lock
// pages in memory (the prediction of what its restart does rests on that report),
// not with every plan of a converged instance.
func (a *Assessment) editionOverruledWarning(p *Plan) *Warning {
	lp := a.LockPages
	if lp == nil || !lp.Managed || !lp.EditionOverruled ||
		!slices.ContainsFunc(p.Steps, func(s Step) bool { return s.RightOf() == contract.RightLockMemory }) {
		return nil
	}
	how := "sys.dm_os_sys_info"
	if lp.VerifiedBy == SourceErrorLog {
		how = "the error log's startup line"
	}
	return &Warning{WarnLockPagesEditionOverruled, "SQL Server uses locked pages on an edition listed without them",
		fmt.Sprintf("On %s SQL Server reports the edition %q and the memory model %s (%s): it uses locked pages, though Microsoft KB 2659143 "+
			"lists locked pages for Enterprise, Standard, Business Intelligence and Developer only. The provider follows SQL Server's report: "+
			"the Engine's next start uses locked pages if its account holds %q.",
			a.where(), safetext.Escape(a.observed.Verification.Edition), lp.MemoryModel, how, LockPagesDisplay), nil}
}

// UnlimitedMemoryWarning is the plan's warning when its apply grants Lock pages in
// memory while max server memory is unlimited (maxMB, DefaultMaxServerMemoryMB)
// or unknown (nil). It comes with the plan that grants the right to an Engine that
// does not lock its pages yet, not with every plan after (nor with a grant again
// after a drift: the Engine locks its pages already).
func (a *Assessment) unlimitedMemoryWarning(p *Plan) *Warning {
	lp := a.LockPages
	if lp == nil || !lp.Managed || !lp.Want || !lp.Supported || lp.Locked != nil && *lp.Locked {
		// Not asked, nothing to lock, or the running Engine locks its pages already:
		// its grant was warned of then, and this one changes nothing of it.
		return nil
	}
	if !slices.ContainsFunc(p.Steps, func(s Step) bool { return s.Grant && s.RightOf() == contract.RightLockMemory }) {
		return nil
	}
	switch {
	case lp.MaxServerMemoryMB == nil:
		return &Warning{WarnUnlimitedMemory, "Lock pages in memory without a known max server memory",
			fmt.Sprintf("The apply grants %q on %s, but SQL Server did not say its max server memory (MB) (no sql block, or the query was refused). "+
				"With locked pages Windows cannot page the buffer pool out: check that max server memory leaves memory for Windows "+
				"(sp_configure 'max server memory (MB)').", LockPagesDisplay, a.where()), nil}
	case *lp.MaxServerMemoryMB >= contract.DefaultMaxServerMemoryMB:
		return &Warning{WarnUnlimitedMemory, "Lock pages in memory with unlimited max server memory",
			fmt.Sprintf("The apply grants %q on %s while max server memory (MB) is %d, SQL Server's default (no limit): with locked pages "+
				"the buffer pool can grow until Windows runs short of memory, and Windows cannot page it out. Set max server memory first, "+
				"leaving memory for Windows and other processes (sp_configure 'max server memory (MB)', then RECONFIGURE).",
				LockPagesDisplay, a.where(), *lp.MaxServerMemoryMB), nil}
	}
	return nil
}

// lockPagesDestroy adds to p the revoke of Lock pages in memory a destroy makes:
// the resource granted it (lock_pages_in_memory = true) and the grantee holds it,
// unless a Group Policy lists the grantee (a revoke would be reverted) or the create
// that replaces the resource grants it again (kept and adopted). Its warnings say
// what stays in effect: the running Engine keeps its locked pages until a restart,
// which a destroy never makes.
func (a *Assessment) lockPagesDestroy(p *Plan) []Warning {
	lp, d := a.LockPages, a.desired
	if d.LockPages == nil || !*d.LockPages || lp == nil || !lp.Known || !lp.Granted {
		return nil
	}
	switch {
	case lp.GroupPolicyManaged && listsSID(lp.GroupPolicyHolders, a.GranteeSID):
		return []Warning{{WarnLockPagesDestroy, "Group Policy grants Lock pages in memory: not revoked",
			fmt.Sprintf("On %s a Group Policy lists %s for %q, so the destroy leaves the grant in place (a revoke would be reverted "+
				"within "+gpoReapply+"). Change the GPO setting %s to remove it.", a.where(), a.GranteeSID, LockPagesDisplay, LockPagesGPOSetting), nil}}
	case d.Replacement.keepsLockPages(d, a):
		return nil // the replacing create adopts it, as IFI's grant (PlanDestroy's warning says so)
	}
	p.Steps = append(p.Steps, Step{Right: contract.RightLockMemory, Grant: false, SID: a.GranteeSID, Reason: "the resource is destroyed"})
	if lp.Locked == nil || *lp.Locked {
		return []Warning{{WarnLockPagesDestroy, "Locked pages stay until the next restart",
			fmt.Sprintf("On %s the destroy revokes %q from %s, but the running service %s keeps its locked pages until its next "+
				"restart; destroy never restarts SQL Server.", a.where(), LockPagesDisplay, a.principalName(a.GranteeSID),
				safetext.Escape(a.ServiceName)), nil}}
	}
	return nil
}
