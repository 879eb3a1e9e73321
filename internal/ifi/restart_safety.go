package ifi

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

// The restart rule of availability groups and running backups, in one place: the
// apply (PlanApply) and the plan (Predict, on the same rules) both ask it. Unknown is unsafe:
// under restart = "if_needed" an Engine restarts only when it is known not to be
// the primary replica of an availability group, its group is healthy as far as
// this replica can see, and no backup or restore is running.

// noSQLAnswer says why SQL Server's word is missing: ifi cannot tell the two apart,
// and the observation's own warning names the failure.
const noSQLAnswer = "SQL Server did not answer (no sql block, or asking it failed: see the other diagnostics)"

// roleKnowledge is what the provider knows of the instance's availability group
// role before a restart.
type roleKnowledge struct {
	known   bool     // the role is established (primary or not)
	primary bool     // the instance holds (or is resolving) a primary replica
	role    string   // RolePrimary, RoleResolving, RoleSecondary, "" (no group)
	groups  []string // the groups, for messages
	source  string   // how it is known, for messages
	why     string   // when unknown: what was seen, for messages
}

// knowRole establishes the role from SQL Server (ag, nil when not asked) or, where
// Windows can tell, from the host's read (ri: its HADR report, nil from a host that
// does not report it, the Engine's start and the build).
func knowRole(ag *AGMembership, ri *contract.ReadInstanceResult) roleKnowledge {
	if ag != nil {
		return roleKnowledge{known: true, primary: ag.Role == RolePrimary || ag.Role == RoleResolving, role: ag.Role,
			groups: ag.Groups, source: "SQL Server (sys.dm_hadr_availability_replica_states)"}
	}
	if ri == nil || ri.HADR == nil {
		return roleKnowledge{why: noSQLAnswer + ", and the host did not report its Always On registry setting"}
	}
	hadr, processStart := ri.HADR, ri.ProcessStartTime
	if !hadr.KeyFound && beforeAlwaysOn(ri.Version) {
		return roleKnowledge{known: true, source: "the build (Always On exists from SQL Server 2012, 11.x)"}
	}
	if len(hadr.OwnedGroups) > 0 {
		return roleKnowledge{known: true, primary: true, role: RolePrimary, groups: hadr.OwnedGroups,
			source: "the failover cluster (this node owns the availability group's cluster resource)"}
	}
	if len(hadr.UntiedGroups) > 0 && !hadrOffSinceStart(hadr, processStart) {
		groups := safetext.Escape(strings.Join(hadr.UntiedGroups, ", "))
		return roleKnowledge{why: fmt.Sprintf("%s, and Windows cannot tell which instance group %s belongs to: this node owns its cluster resource "+
			"(it holds that group's primary replica), but no cluster dependency ties the resource to this instance and the node has more than one instance", noSQLAnswer, groups)}
	}
	var why string
	switch {
	case !hadr.KeyFound:
		why = "its registry key MSSQLServer\\HADR is missing"
	case hadr.Enabled != nil && *hadr.Enabled != 0:
		why = fmt.Sprintf("HADR_Enabled is %d (Always On is enabled)", *hadr.Enabled)
	case hadr.KeyWritten == nil || processStart == nil:
		why = "the time HADR_Enabled was written, or the Engine's start, is unknown"
	case !hadr.KeyWritten.Before(*processStart):
		why = fmt.Sprintf("HADR_Enabled was written at %s, after the running Engine started (%s), so it is not the running setting",
			hadr.KeyWritten.UTC().Format(time.RFC3339), processStart.UTC().Format(time.RFC3339))
	default:
		return roleKnowledge{known: true, source: "the registry (HADR_Enabled is off since before the Engine started)"}
	}
	if hadr.Detail != "" {
		why += "; " + safetext.Escape(hadr.Detail)
	}
	return roleKnowledge{why: noSQLAnswer + ", and Windows cannot tell: " + why}
}

// hadrOffSinceStart: HADR_Enabled is 0 (or absent from an existing key) and was
// written before the running Engine started, so Always On is off in it and it is a
// replica of no group (the last case of knowRole's switch).
func hadrOffSinceStart(hadr *contract.HADRInfo, processStart *time.Time) bool {
	return hadr.KeyFound && (hadr.Enabled == nil || *hadr.Enabled == 0) && hadr.KeyWritten != nil && processStart != nil &&
		hadr.KeyWritten.Before(*processStart)
}

// restartSafety refuses a restart the rule does not allow, and adds the warnings of
// one it allows.
func (a *Assessment) restartSafety(p *Plan) *Refusal {
	v := a.observed.Verification
	rk := knowRole(a.AG, a.observed.Instance)
	optIn := a.desired.Restart == RestartIfNeededIncludingPrimary
	groups := safetext.Escape(strings.Join(rk.groups, ", "))
	switch {
	case !rk.known && optIn:
		p.Warnings = append(p.Warnings, Warning{WarnAGUnknown, "Availability group role unknown: restarting as restart = \"if_needed_including_primary\" allows",
			fmt.Sprintf("%s restarts (%s) although its availability group role is unknown (%s); if it is a primary replica, the group's "+
				"databases are offline until it is back or the group fails over.", capitalize(a.where()), p.RestartReason, rk.why), nil})
	case !rk.known:
		return a.agGate().roleUnknown(p.RestartReason, rk)
	case rk.primary && optIn:
		p.Warnings = append(p.Warnings, Warning{WarnPrimaryRestart, "Restarting a primary availability replica",
			fmt.Sprintf("%s is the %s replica of the availability group %s (per %s) and restarts (%s) because restart = %q: the group's "+
				"databases are unavailable until the Engine is back, unless the group fails over automatically.",
				capitalize(a.where()), rk.role, groups, rk.source, p.RestartReason, RestartIfNeededIncludingPrimary), nil})
	case rk.primary:
		return a.agGate().primary(p.RestartReason, rk)
	}
	if r := a.groupHealth(p); r != nil {
		return r
	}
	if len(v.RunningBackups) > 0 {
		return refusal("Backup or restore running: refusing to restart "+a.where(),
			fmt.Sprintf("%s needs a restart (%s)", capitalize(a.where()), p.RestartReason),
			fmt.Sprintf("SQL Server is running %s, which a restart would end", safetext.Escape(strings.Join(v.RunningBackups, "; "))),
			nothingChanged,
			"apply again when it has finished",
			restartNever)
	}
	if v.RunningBackups == nil && v.SQLConfigured {
		return refusal("Running backups unknown: refusing to restart "+a.where(),
			fmt.Sprintf("%s needs a restart (%s)", capitalize(a.where()), p.RestartReason),
			"SQL Server did not say whether a backup or restore is running although the provider's sql block is configured "+
				"(sys.dm_exec_requests: the login lacks VIEW SERVER STATE, which shows other sessions' requests, or asking failed: see the other diagnostics), "+
				"and a restart would end one",
			nothingChanged,
			"grant the sql login VIEW SERVER STATE (GRANT VIEW SERVER STATE TO [login]) or fix what the SQL diagnostic names, then apply again",
			restartNever)
	}
	if v.RunningBackups == nil {
		p.Warnings = append(p.Warnings, Warning{WarnBackupsUnchecked, "Running backups not checked before restarting " + a.where(),
			fmt.Sprintf("%s restarts (%s), but SQL Server was not asked whether a backup or restore is running (the provider has no sql block); "+
				"a restart ends one.", capitalize(a.where()), p.RestartReason), nil})
	}
	return nil
}

// agGate is what the availability-group refusals need to know of the instance's
// topology: a standalone instance (Assessment.agGate) restarts through the service
// manager and may opt in to restarting a primary; a failover cluster instance
// (ClusterAssessment.agGate) restarts through the cluster, and its refusals speak
// for every node.
type agGate struct {
	where     string // the instance, for messages
	subject   string // what the primary refusal's summary refuses to restart
	how       string // how the restart happens, as the subject of "would take the group's databases offline"
	unchanged string // what was left unchanged
	optIn     bool   // restart = "if_needed_including_primary" is a way out
}

// agGate: a standalone instance restarts through the service manager, its refusals
// speak for it alone, and restart = "if_needed_including_primary" is its opt-in.
func (a *Assessment) agGate() agGate {
	return agGate{where: a.where(), subject: "it", how: "restarting it", unchanged: nothingChanged, optIn: true}
}

// roleUnknown refuses a restart of an instance whose availability group role is
// unknown (rk.why says what was seen).
func (g agGate) roleUnknown(reason string, rk roleKnowledge) *Refusal {
	ways := []string{"configure the provider's sql block with a login that has VIEW SERVER STATE (GRANT VIEW SERVER STATE TO [login]), so SQL Server is asked"}
	if g.optIn {
		ways = append(ways, fmt.Sprintf("set restart = %q to restart whatever its role", RestartIfNeededIncludingPrimary))
	}
	return refusal("Availability group role unknown: refusing to restart "+g.where,
		fmt.Sprintf("%s needs a restart (%s)", g.where, reason),
		"the provider cannot tell whether it is the primary replica of an Always On availability group: "+rk.why,
		g.unchanged, append(ways, restartNever)...)
}

// primary refuses a restart of an instance that holds (or is resolving) a primary
// replica.
func (g agGate) primary(reason string, rk roleKnowledge) *Refusal {
	ways := []string{fmt.Sprintf("fail the availability group over first (ALTER AVAILABILITY GROUP [%s] FAILOVER on a synchronized secondary replica), "+
		"then apply again: a secondary restarts as usual", safetext.Escape(firstGroup(rk.groups)))}
	if g.optIn {
		ways = append(ways, fmt.Sprintf("set restart = %q to restart the primary anyway", RestartIfNeededIncludingPrimary))
	}
	return refusal("Primary availability replica: refusing to restart "+g.subject,
		fmt.Sprintf("%s is the %s replica of the Always On availability group %s (per %s) and IFI needs a restart (%s)",
			g.where, rk.role, safetext.Escape(strings.Join(rk.groups, ", ")), rk.source, reason),
		g.how+" would take the group's databases offline",
		g.unchanged, append(ways, `set restart = "never" to change the right only and restart in a maintenance window`)...)
}

// groupHealth is the gate's question of the group's health, answered by someone
// who can know: a primary sees every replica itself; a secondary's health comes
// from its group's primary (GroupView). A secondary whose primary could not be
// asked refuses.
func (a *Assessment) groupHealth(p *Plan) *Refusal {
	ag := a.AG
	if ag == nil || len(ag.Groups) == 0 {
		return nil
	}
	asked := fmt.Sprintf("%s is a replica of the availability group %s and needs a restart (%s)",
		capitalize(a.where()), safetext.Escape(strings.Join(ag.Groups, ", ")), p.RestartReason)
	wait := "wait until every replica is CONNECTED and HEALTHY (sys.dm_hadr_availability_replica_states on the primary), then apply again"
	if ag.Role == RolePrimary {
		if len(ag.Unhealthy) == 0 {
			return nil
		}
		return refusal("Availability group not healthy: refusing to restart "+a.where(), asked,
			"the group is not healthy as its primary sees it: "+safetext.Escape(strings.Join(ag.Unhealthy, "; "))+
				". Restarting a replica while another is down or behind can leave the group without a synchronized secondary (and stall commits on the primary)",
			nothingChanged, wait, restartNever)
	}
	if len(ag.Unhealthy) > 0 {
		// What this replica sees of itself suffices to refuse.
		return refusal("Availability group not healthy: refusing to restart "+a.where(), asked,
			"the group is not healthy as this replica sees it: "+safetext.Escape(strings.Join(ag.Unhealthy, "; ")),
			nothingChanged, wait, restartNever)
	}
	for _, g := range ag.Groups {
		view, ok := viewOf(ag.FromPrimary, g)
		switch {
		case !ok || view.Err != "":
			why := "the provider did not ask the group's primary"
			if ok {
				why = view.Err
			}
			return refusal("Availability group health unknown: refusing to restart "+a.where(), asked,
				fmt.Sprintf("only the primary replica sees every replica's health (a secondary sees its own row), and it could not be asked: %s", safetext.Escape(why)),
				nothingChanged,
				"make the primary reachable with the provider's sql login (VIEW SERVER STATE), or, where the names SQL Server reports do not resolve from where Terraform runs, "+
					"map each replica's name to its SQL address in availability_replica_addresses",
				restartNever)
		case len(view.Unhealthy) > 0:
			return refusal("Availability group not healthy: refusing to restart "+a.where(), asked,
				fmt.Sprintf("the group is not healthy as its primary %s sees it: %s. Restarting a replica while another is down or behind can leave the group "+
					"without a synchronized secondary (and stall commits on the primary)", safetext.Escape(view.Primary), safetext.Escape(strings.Join(view.Unhealthy, "; "))),
				nothingChanged, wait, restartNever)
		}
	}
	return nil
}

func viewOf(views []GroupView, group string) (GroupView, bool) {
	for _, v := range views {
		if strings.EqualFold(v.Group, group) {
			return v, true
		}
	}
	return GroupView{}, false
}

// GroupLocked refuses a restart because another run holds the restart lock of the
// instance's availability group: it is restarting replica ("" when it could not be
// told).
func GroupLocked(host, instance, reason, group, replica string) *Refusal {
	where := fmt.Sprintf("instance %s on %s", safetext.Escape(instance), safetext.Escape(host))
	who := "another of its replicas"
	if replica != "" {
		who = "its replica " + safetext.Escape(replica)
	}
	return refusal("Availability group "+safetext.Escape(group)+" is restarting another replica: refusing to restart "+where,
		fmt.Sprintf("%s needs a restart (%s)", capitalize(where), reason),
		fmt.Sprintf("another run (another working directory or state) holds the restart lock of the availability group %s on its primary and is restarting %s; "+
			"one replica of a group restarts at a time", safetext.Escape(group), who),
		"Nothing was stopped on this instance (a change of the right's holders made before the restart, if any, stays).",
		"apply again once that run has finished and the group is HEALTHY (the lock is released when that run's restart is over, or when it dies)",
		restartNever)
}

// GroupLockUnavailable refuses a restart whose group's restart lock could not be
// asked for on the primary (why).
func GroupLockUnavailable(host, instance, reason, group, primary, why string) *Refusal {
	where := fmt.Sprintf("instance %s on %s", safetext.Escape(instance), safetext.Escape(host))
	return refusal("Availability group restart lock unavailable: refusing to restart "+where,
		fmt.Sprintf("%s needs a restart (%s)", capitalize(where), reason),
		fmt.Sprintf("the restart lock of the availability group %s, which every run takes on the primary %s so that one replica restarts at a time, could not be taken: %s",
			safetext.Escape(group), safetext.Escape(primary), safetext.Escape(why)),
		"Nothing was stopped on this instance (a change of the right's holders made before the restart, if any, stays).",
		"make the primary reachable with the provider's sql login, or map its name to its SQL address in availability_replica_addresses, then apply again",
		restartNever)
}

// beforeAlwaysOn: the build (major.minor.build...) is older than SQL Server 2012
// (11.x), which introduced availability groups; false when it cannot be read.
func beforeAlwaysOn(version string) bool {
	major, _, _ := strings.Cut(version, ".")
	n, err := strconv.Atoi(major)
	return err == nil && n > 0 && n < 11
}
