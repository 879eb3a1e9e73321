package ifi

import (
	"fmt"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// A restart asked for on its own (the mssqlifi_restart action, in a maintenance
// window): it changes no right, it restarts the Engine so that the rights the host
// already holds take effect. It is decided here by the same rules as the restart of
// an apply (restartSafety: a primary replica, a group not healthy, a backup
// running, an unknown role), and it is needed when a change is pending: the running
// Engine's IFI, or its memory model, is not what its next start gives.

// RestartNowDesired is what a restart on its own assesses the instance against:
// the rights as the host holds them (no step), restarting as restart = "if_needed"
// does, so that every refusal of that policy applies.
var RestartNowDesired = Desired{Enabled: true, Grantee: GranteeServiceSID, Restart: RestartIfNeeded}

// PlanRestartNow decides a restart of the instance o on its own. force restarts
// even when no change is pending (or whether one is cannot be told). The plan has
// no steps; Plan.Restart false means that no restart is needed, and NotNeeded says
// why, for the user. A restart the rules do not allow is a *Refusal that changed
// nothing; its ways out are the ones a restart on its own has (the resource's
// restart argument is not one of them).
func PlanRestartNow(o Observed, force bool) (a *Assessment, p *Plan, notNeeded string, err error) {
	a, err = Assess(RestartNowDesired, o)
	if err != nil {
		return nil, nil, "", err
	}
	ri := o.Instance
	p = &Plan{}
	if ri.ServiceState != contract.StateRunning {
		return a, nil, "", nowRefusal(refusal("SQL Server not running: refusing to restart "+a.where(),
			fmt.Sprintf("%s is to restart", a.where()),
			fmt.Sprintf("its service %s is %s, not running, and a restart on its own restarts a running Engine only", a.ServiceName, ri.ServiceState),
			nothingChanged,
			"start the service (the next start takes the rights the host holds), then run terraform plan to refresh the state"))
	}
	if a.Clustered {
		return a, nil, "", nowRefusal(refusal("Clustered SQL Server instance: refusing to restart it",
			fmt.Sprintf("%s is a failover cluster instance and is to restart", a.where()),
			"a restart on its own goes through the service manager, which the provider never does to a clustered instance",
			nothingChanged,
			`apply the resource with restart = "failover" or restart = "cluster_restart" to restart it through the cluster`,
			"restart the role through Failover Cluster Manager"))
	}
	var why []string
	if pending := a.RestartPending; pending != nil && *pending {
		why = append(why, fmt.Sprintf("the running Engine has IFI %s and its next start gives it %s", onOff(*a.RunningIFI), onOff(a.ExpectedRunning)))
	}
	if lp := a.LockPages; lp != nil && lp.RestartPending != nil && *lp.RestartPending {
		why = append(why, fmt.Sprintf("the running Engine's memory model is %s and its next start would %s locked pages", lp.MemoryModel, useOrNot(lp.ExpectedLocked)))
	}
	switch {
	case len(why) > 0:
		p.RestartReason = strings.Join(why, "; ")
	case force && a.RestartPending == nil:
		p.RestartReason = "force = true, although whether a change is pending is unknown (" + unverifiedIFI + ")"
	case force:
		p.RestartReason = "force = true, although no change is pending"
	case a.RestartPending == nil:
		return a, nil, "", nowRefusal(refusal("Pending change unknown: refusing to restart "+a.where(),
			fmt.Sprintf("%s is to restart if a change of its rights is pending", a.where()),
			"whether the running Engine has IFI as its next start gives it cannot be told: "+unverifiedIFI,
			nothingChanged,
			"configure the provider's sql block with a login that has VIEW SERVER STATE, so SQL Server is asked",
			"set force = true to restart whatever is pending"))
	default:
		return a, p, fmt.Sprintf("No restart is needed on %s: the running Engine has IFI %s, as its next start gives it (verified by %s), "+
			"and no change of Lock pages in memory is pending. Nothing was changed; set force = true to restart anyway.",
			a.where(), onOff(*a.RunningIFI), a.VerifiedBy), nil
	}
	p.Restart = true
	if r := a.restartSafety(p); r != nil {
		return a, nil, "", nowRefusal(r)
	}
	return a, p, "", nil
}

// unverifiedIFI says why IFI of the running Engine is unknown.
const unverifiedIFI = "neither SQL Server (no sql block, or asking it failed) nor the error log's startup line said whether the running Engine has IFI"

// RestartNowRefusal is r, a refusal of the restart gate (GroupLocked,
// GroupLockUnavailable), as a restart on its own says it (nowRefusal).
func RestartNowRefusal(r *Refusal) *Refusal { return nowRefusal(r) }

// nowRefusal is r as a restart on its own says it: without the ways out that
// change the resource's restart argument, which a restart on its own does not read,
// and with its own next run where the apply's says "apply again".
func nowRefusal(r *Refusal) *Refusal {
	out := *r
	out.WaysOut = nil
	for _, w := range r.WaysOut {
		if !strings.Contains(w, "restart = ") || strings.Contains(w, "apply the resource with") {
			out.WaysOut = append(out.WaysOut, strings.ReplaceAll(w, "apply again", invokeAgain))
		}
	}
	out.Detail = out.detail()
	return &out
}

// invokeAgain is a restart on its own's next run (Terraform 1.14's -invoke; the
// action block's name is not known here).
const invokeAgain = "invoke the action again (terraform apply -invoke=action.mssqlifi_restart.NAME)"

// RestartNowHeld refuses a restart on its own in a run that holds restarts (the
// provider's allow_restarts = false, or its environment variable).
func RestartNowHeld(host, instance string) *Refusal {
	a := &Assessment{Host: host, Instance: instance}
	return refusal("Restarts held by allow_restarts = false: refusing to restart "+a.where(),
		fmt.Sprintf("%s is to restart", a.where()),
		"the provider's allow_restarts is false (or MSSQLIFI_ALLOW_RESTARTS says so) for this run, which then restarts nothing",
		nothingChanged,
		"invoke the action in a run whose provider allows restarts (allow_restarts = true, as in the maintenance window)")
}
