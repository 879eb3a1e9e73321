package ifi

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// Action is what an apply will do on an instance, in one word: the resource's
// planned_action. The plan predicts it (Predict) with the same rules the apply
// follows (PlanApply), so the two cannot disagree on the same observation.
type Action string

// The actions. Unknown at plan time (the host could not be read) means "may
// restart".
const (
	ActionNone             Action = "none"               // nothing changes
	ActionGrant            Action = "grant"              // the right is granted (or moved), no restart
	ActionGrantAndRestart  Action = "grant_and_restart"  // the right is granted, then the Engine restarts
	ActionRevoke           Action = "revoke"             // the right is revoked, no restart
	ActionRevokeAndRestart Action = "revoke_and_restart" // the right is revoked, then the Engine restarts
	ActionRestart          Action = "restart"            // the Engine restarts, the right stays as it is
	ActionRefuse           Action = "refuse"             // the apply refuses before changing anything
	// ActionVerify: the last apply failed part-way; the apply reads the instance,
	// finishes what is missing and verifies it (it restarts only if the running
	// Engine still lacks what was asked).
	ActionVerify Action = "verify"
)

// Actions are all the actions, for the schema's documentation and tests.
var Actions = []Action{ActionNone, ActionGrant, ActionGrantAndRestart, ActionRevoke, ActionRevokeAndRestart, ActionRestart,
	ActionRefuse, ActionVerify}

// Restarts reports whether the action restarts SQL Server.
func (a Action) Restarts() bool {
	return a == ActionGrantAndRestart || a == ActionRevokeAndRestart || a == ActionRestart
}

// ActionOf names what plan p does; a refusal (err) is ActionRefuse.
func ActionOf(a *Assessment, p *Plan, err error) Action {
	var r *Refusal
	if errors.As(err, &r) {
		return ActionRefuse
	}
	if p == nil {
		return ActionNone
	}
	grant, revoke := false, false
	for _, s := range p.Steps {
		if s.Grant {
			grant = true
		} else {
			revoke = true
		}
	}
	switch {
	case grant && p.Restart:
		return ActionGrantAndRestart
	case grant:
		return ActionGrant
	case revoke && p.Restart:
		return ActionRevokeAndRestart
	case revoke:
		return ActionRevoke
	case p.Restart:
		return ActionRestart
	}
	return ActionNone
}

// Prediction is what an apply would do on the instance as observed.
type Prediction struct {
	Action Action
	// Warning says what the apply will do, in a DBA's words; its summary names the
	// host and the instance. Zero when Action is ActionNone.
	Warning Warning
	// Assessment is the observation's assessment (nil when the observation could
	// not be assessed); its Warnings are the ones the apply would give.
	Assessment *Assessment
	// PlanWarnings are the warnings of the apply's plan itself (a restart whose
	// availability group role is unknown, backups not checked).
	PlanWarnings []Warning
	// ChangesLockPages: the apply grants or revokes Lock pages in memory.
	ChangesLockPages bool
	// After is what a successful apply leaves of the facts the plan can tell
	// (Assessment.After); nil for none.
	After map[Field]any
}

// Predict decides, as PlanApply would on observation o, what an apply of d does.
// drift says that the configuration did not change since the last apply, so a
// change is due to something done outside Terraform.
func Predict(d Desired, o Observed, drift bool) (Prediction, error) {
	a, p, err := PlanApply(d, o)
	var r *Refusal
	if err != nil && !errors.As(err, &r) {
		return Prediction{}, err
	}
	pr := Prediction{Action: ActionOf(a, p, err), Assessment: a}
	if p != nil {
		pr.PlanWarnings = p.Warnings
		pr.ChangesLockPages = slices.ContainsFunc(p.Steps, func(s Step) bool { return s.RightOf() == contract.RightLockMemory })
		pr.After = a.After(pr.Action, p)
	}
	if pr.Action == ActionNone {
		return pr, nil
	}
	pr.Warning = a.predictionWarning(pr.Action, p, r, drift)
	return pr, nil
}

// predictionWarning is the plan's warning for an apply that changes the instance
// (or refuses).
func (a *Assessment) predictionWarning(act Action, p *Plan, r *Refusal, drift bool) Warning {
	where := a.where()
	prefix, why := "", ""
	if drift {
		prefix = "Changed outside Terraform: "
		why = "Since the last apply, something outside Terraform changed the instance: " + a.driftFacts() + ". "
	}
	if act == ActionRefuse {
		return Warning{Code: WarnPlannedAction, Summary: fmt.Sprintf("%s%s: apply will refuse: %s", prefix, where, r.Summary),
			Detail: why + "The apply will refuse and change nothing on " + where + ": " + r.Detail}
	}
	var did []string
	for _, s := range p.Steps {
		verb := "grants"
		if !s.Grant {
			verb = "revokes"
		}
		did = append(did, fmt.Sprintf("%s %q %s %s (%s)", verb, s.display(), toFrom(s.Grant), a.principalName(s.SID), s.Reason))
	}
	summary := fmt.Sprintf("%s%s: apply %s", prefix, where, summaryOf(act, a.ServiceName, p.Steps))
	detail := why + "The apply " + strings.Join(did, ", then ")
	if p.Restart {
		if len(did) > 0 {
			detail += ", and "
		}
		short, source := unavailableFor(a.desired.LastRestart)
		summary += ": " + short
		detail += fmt.Sprintf("restarts the service %s%s (%s). %s", a.ServiceName, a.dependentsPhrase(), p.RestartReason, source)
	} else {
		detail += ", with no restart: " + a.noRestartReasonFor(p.Steps) + "."
	}
	return Warning{Code: WarnPlannedAction, Summary: summary, Detail: detail}
}

func toFrom(grant bool) string {
	if grant {
		return "to"
	}
	return "from"
}

// summaryOf is the plan's summary of act. Steps that change both rights say so:
// "grants two rights and restarts once"; Lock Pages in Memory alone is named.
func summaryOf(act Action, service string, steps []Step) string {
	rights := map[string]bool{}
	for _, s := range steps {
		rights[s.RightOf()] = true
	}
	restart := " and restarts SQL Server (" + service + ")"
	switch {
	case len(rights) == 2:
		verb := "changes"
		switch act {
		case ActionGrant, ActionGrantAndRestart:
			verb = "grants"
		case ActionRevoke, ActionRevokeAndRestart:
			if !slices.ContainsFunc(steps, Step.grants) {
				verb = "revokes"
			}
		}
		if act.Restarts() {
			return verb + " two rights and restarts once (SQL Server " + service + ")"
		}
		return verb + " two rights, no restart"
	case rights[contract.RightLockMemory]:
		verb := "grants"
		if !slices.ContainsFunc(steps, Step.grants) {
			verb = "revokes"
		}
		if act.Restarts() {
			return verb + " " + LockPagesDisplay + restart
		}
		return verb + " " + LockPagesDisplay + ", no restart"
	}
	switch act {
	case ActionGrant:
		return "grants the right, no restart"
	case ActionGrantAndRestart:
		return "grants the right and restarts SQL Server (" + service + ")"
	case ActionRevoke:
		return "revokes the right, no restart"
	case ActionRevokeAndRestart:
		return "revokes the right and restarts SQL Server (" + service + ")"
	case ActionRestart:
		return "restarts SQL Server (" + service + ")"
	}
	return string(act)
}

// noRestartReasonFor says why an apply of steps does not restart: Lock Pages in
// Memory's reason when they change only that right.
func (a *Assessment) noRestartReasonFor(steps []Step) string {
	lp := a.LockPages
	for _, s := range steps {
		if s.RightOf() != contract.RightLockMemory {
			return a.noRestartReason(a.desired)
		}
	}
	if lp == nil || lp.Locked == nil || a.observed.Instance.ServiceState != contract.StateRunning || !a.desired.Restart.Restarts() {
		return a.noRestartReason(a.desired)
	}
	return "the running Engine's memory model is already " + lp.MemoryModel + ", as asked"
}

// noRestartReason says why an apply that changes the right does not restart.
func (a *Assessment) noRestartReason(d Desired) string {
	switch {
	case a.observed.Instance.ServiceState != contract.StateRunning:
		return fmt.Sprintf("the service %s is not running; the change takes effect when it starts", a.ServiceName)
	case !d.Restart.Restarts() && a.RestartPending != nil:
		return "restart = \"never\"; the running Engine keeps IFI " + onOff(*a.RunningIFI) + " until its next restart"
	case !d.Restart.Restarts():
		return "restart = \"never\"; the change takes effect at the Engine's next restart"
	case a.RunningIFI != nil:
		return "the running Engine already has IFI " + onOff(*a.RunningIFI) + ", as asked"
	}
	return "the running Engine's IFI cannot be verified"
}

// dependentsPhrase names the running services that depend on the Engine (they are
// stopped with it and started again).
func (a *Assessment) dependentsPhrase() string {
	var names []string
	for _, s := range a.observed.Instance.Dependents {
		if s.State == contract.StateRunning {
			names = append(names, safetext.Escape(s.Name))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " with " + strings.Join(names, ", ")
}

// principalName names a SID for the user: the service SID's or the start account's
// name when it is one of them.
func (a *Assessment) principalName(sid string) string {
	switch {
	case strings.EqualFold(sid, a.ServiceSID):
		return winsid.ServiceAccountName(a.ServiceName)
	case a.ServiceAccountSID != "" && strings.EqualFold(sid, a.ServiceAccountSID):
		return fmt.Sprintf("%s (%s)", safetext.Escape(a.ServiceAccount), sid)
	}
	return sid
}

// driftFacts says what on the host differs from what the last apply left.
func (a *Assessment) driftFacts() string {
	var f []string
	grantee := a.principalName(a.GranteeSID)
	switch {
	case a.desired.Enabled && !a.PrivilegeGranted:
		f = append(f, grantee+" no longer holds the right (revoked outside Terraform)")
	case !a.desired.Enabled && a.PrivilegeGranted:
		f = append(f, grantee+" holds the right again (granted outside Terraform)")
	}
	if lp := a.LockPages; lp != nil && lp.Managed && lp.Known && lp.Granted != lp.Want {
		if lp.Want {
			f = append(f, grantee+" no longer holds "+LockPagesDisplay+" (revoked outside Terraform)")
		} else {
			f = append(f, grantee+" holds "+LockPagesDisplay+" again (granted outside Terraform)")
		}
	}
	if len(f) == 0 && a.RestartPending != nil && *a.RestartPending { // a grant or revoke would end it
		f = append(f, "a restart is pending: the running Engine has IFI "+onOff(*a.RunningIFI)+
			" and its next start gives it "+onOff(a.ExpectedRunning))
	}
	if a.GroupPolicyManaged {
		f = append(f, "a Group Policy defines the right ("+GPOSetting+")")
	}
	if a.desired.Grantee == GranteeServiceAccount {
		f = append(f, "the service starts as "+safetext.Escape(a.ServiceAccount))
	}
	if len(f) == 0 {
		return "the instance is not as the last apply left it"
	}
	return strings.Join(f, "; ")
}

// UnknownPrediction is the plan's warning when the host cannot be read at plan time
// (why says why): the action is unknown, which means the apply may restart.
func UnknownPrediction(host, instance, why string) Warning {
	a := &Assessment{Host: host, Instance: instance}
	return Warning{Code: WarnPlannedAction, Summary: a.where() + ": apply may restart SQL Server (not known at plan time)",
		Detail: fmt.Sprintf("The plan could not read %s: %s. planned_action is unknown, which means the apply may grant or revoke the "+
			"right and restart SQL Server; it decides when it reads the host, by the same rules.", a.where(), why)}
}

// VerifyPrediction is the plan's warning for an instance whose last apply failed
// part-way (ActionVerify).
func VerifyPrediction(host, instance string) Warning {
	a := &Assessment{Host: host, Instance: instance}
	return Warning{Code: WarnPlannedAction, Summary: a.where() + ": apply verifies the last failed change and may restart SQL Server",
		Detail: fmt.Sprintf("The last apply of %s failed after its change was sent; the apply reads the instance, finishes what is missing "+
			"and verifies it. It restarts SQL Server only if the running Engine still lacks what was asked.", a.where())}
}

// PlanChanged is the apply's error when the host changed since the plan so that the
// apply would do something else than planned.
func PlanChanged(host, instance string, planned Action, now Prediction) *Refusal {
	a := &Assessment{Host: host, Instance: instance}
	what := string(now.Action)
	if now.Warning.Detail != "" {
		what += " (" + strings.TrimSuffix(now.Warning.Detail, ".") + ")"
	}
	return refusal(fmt.Sprintf("%s changed since the plan: apply would %s, the plan said %s", a.where(), now.Action, planned),
		fmt.Sprintf("The plan predicted planned_action = %q for %s", planned, a.where()),
		"the host now reads differently, and the apply would do "+what,
		nothingChanged,
		"run terraform plan again, review what it says, and apply that plan")
}

// UnverifiedUpdate is the plan's warning for an instance whose last create or
// update (op, at at, failing with failure) failed after its change was sent: the
// plan is an update (ActionVerify) that verifies it and finishes what is missing.
func UnverifiedUpdate(host, instance, op, at, failure string) Warning {
	a := &Assessment{Host: host, Instance: instance}
	return Warning{Code: WarnPlannedAction, Summary: fmt.Sprintf("Unverified change of %s: this update verifies it", a.where()),
		Detail: fmt.Sprintf("The %s of %s at %s failed after its change was sent (%s). The state holds what was asked and what was known "+
			"then; this update reads the instance, finishes what is missing, and verifies it. It restarts SQL Server only if the "+
			"running Engine still lacks what was asked.", op, a.where(), at, safetext.Escape(failure))}
}

// FailedCreateReplace is the refresh's warning for an instance whose create (at at,
// failing with failure) failed part-way, which Terraform marks tainted and plans to
// replace: whether the replace restarts, as far as runningIFI (nil: not known,
// verified by verifiedBy) tells against enabled, and how to keep the resource
// instead.
func FailedCreateReplace(host, instance, at, failure string, runningIFI *bool, verifiedBy string, enabled bool) Warning {
	a := &Assessment{Host: host, Instance: instance}
	need := "whether it needs a restart is not known (SQL Server could not say whether the running Engine has IFI): " +
		"the apply restarts it only if SQL Server then reports that the Engine lacks IFI"
	summary := fmt.Sprintf("Failed create of %s: its replace may restart SQL Server", a.where())
	switch {
	case runningIFI != nil && *runningIFI == enabled:
		summary = fmt.Sprintf("Failed create of %s: its replace needs no restart", a.where())
		need = fmt.Sprintf("it needs no restart: the running Engine already has IFI %s (verified by %s), so the replace "+
			"only verifies the instance", onOff(*runningIFI), verifiedBy)
	case runningIFI != nil:
		summary = fmt.Sprintf("Failed create of %s: its replace restarts SQL Server", a.where())
		need = "it needs a restart: the running Engine lacks what was asked"
	}
	return Warning{Code: WarnFailedCreate, Summary: summary,
		Detail: fmt.Sprintf("The create of %s at %s failed after its change was sent (%s), so Terraform marks the resource tainted and "+
			"plans to replace it; %s. The replace takes away nothing the host holds as configured: its destroy keeps a grant its create "+
			"grants again, and the create adopts it. If you have checked the host yourself, run terraform untaint on the resource instead: "+
			"the next plan is then an update that verifies the instance.", a.where(), at, safetext.Escape(failure), need)}
}

// RestartHeld is the plan's warning for an instance whose apply would do asked
// (a restart) but this run holds restarts (the provider's allow_restarts = false):
// the apply changes the right only, and the restart waits for a run that allows it.
func RestartHeld(host, instance string, asked Action) Warning {
	a := &Assessment{Host: host, Instance: instance}
	return Warning{Code: WarnRestartHeld, Summary: a.where() + ": restart held by allow_restarts = false",
		Detail: fmt.Sprintf("The resource's restart policy would have the apply do %s on %s, but this run holds restarts: the apply "+
			"changes the right only, and the running Engine keeps its IFI state (restart_pending) until a run with restarts allowed, "+
			"whose plan then says restart.", asked, a.where())}
}
