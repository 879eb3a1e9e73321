package converge

import (
	"fmt"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

// Kind says which step failed.
type Kind int

const (
	// KindHostSetup: the WinRM client of the host could not be set up.
	KindHostSetup Kind = iota + 1
	// KindObserveFailed: read_instance failed; Err is the host's error.
	KindObserveFailed
	// KindNotFound: the host has no such instance; Installed lists what it has.
	KindNotFound
	// KindAssessFailed: what the host reports cannot be assessed (ifi.Assess).
	KindAssessFailed
	// KindDecideFailed: no plan could be made (ifi.PlanApply or ifi.PlanDestroy
	// failed for a reason other than a refusal).
	KindDecideFailed
	// KindRefused: the change must not be made here; Refusal says why. Nothing changed.
	KindRefused
	// KindSetRightFailed: granting or revoking failed; Step is the failed step.
	KindSetRightFailed
	// KindRestartFailed: restart_instance failed; the services may be stopped.
	KindRestartFailed
	// KindNotReady: SQL Server did not accept connections after the restart.
	KindNotReady
	// KindReadBackFailed: the instance could not be read after the change; Err is
	// the observation's *Error.
	KindReadBackFailed
	// KindVanished: the instance was gone when read back after the change.
	KindVanished
	// KindCheckFailed: after the restart SQL Server reports IFI other than the
	// right and start account should give (ifi.Check).
	KindCheckFailed
	// KindAfterDiffers: an update's read-back differs from a fact its plan showed
	// known (ifi.ExpectedAfter); the host was changed as planned.
	KindAfterDiffers
	// KindRestartSlot: the deadline passed while other restarts held every slot of
	// the RestartLimiter; the restart did not begin. MaxParallelRestarts is the limit.
	KindRestartSlot
	// KindRestartInProgress: the host refused the restart because another instance
	// of it is restarting (the host's restart lease, design/restart.md); Err is
	// the host's answer, naming that instance and since when. Nothing changed.
	KindRestartInProgress
	// KindClusterReadFailed: read_cluster failed on the node reached; Err is the
	// host's error (code contract.CodeNotClustered on a node of no cluster).
	KindClusterReadFailed
	// KindClusterActionFailed: the failover or cluster restart did not end with the
	// role Online where it was asked to; Move says where it ended and the cluster's
	// own error, Err the host's error when there was one.
	KindClusterActionFailed
	// KindSQLLogonFailed: the configured SQL login could not log on to SQL Server
	// (contract.SQLLogonFailed) and SQL verification is not optional
	// (Engine.SQLOptional); Err is the checker's error, naming the login, where it
	// was asked and what to check. SQLPort is where. Nothing changed.
	KindSQLLogonFailed
)

var kindNames = map[Kind]string{
	KindHostSetup: "host_setup", KindObserveFailed: "observe_failed", KindNotFound: "not_found",
	KindAssessFailed: "assess_failed", KindDecideFailed: "decide_failed", KindRefused: "refused",
	KindSetRightFailed: "set_right_failed", KindRestartFailed: "restart_failed", KindNotReady: "not_ready",
	KindReadBackFailed: "read_back_failed", KindVanished: "vanished", KindCheckFailed: "check_failed", KindAfterDiffers: "after_differs",
	KindRestartSlot: "restart_slot", KindRestartInProgress: "restart_in_progress",
	KindClusterReadFailed: "cluster_read_failed", KindClusterActionFailed: "cluster_action_failed",
	KindSQLLogonFailed: "sql_logon_failed",
}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is every error the engine returns.
type Error struct {
	Kind   Kind
	Target Target
	// Err is the underlying error: the host's (*remote.Error), the checker's, ifi's,
	// or for KindReadBackFailed the observation's *Error.
	Err error
	// Changed: the host was changed before the failure. Restarted: the Engine was
	// restarted before the failure.
	Changed   bool
	Restarted bool

	// Instance is the host's answer for KindNotFound and KindVanished (the
	// installed instances, the computer name).
	Instance *contract.ReadInstanceResult
	// Refusal is set for KindRefused.
	Refusal *ifi.Refusal
	// Argument is the resource argument a refusal is about ("" when none): the
	// instance two resources claim ("instance"), the node two reach a cluster role
	// through ("host").
	Argument string
	// Step is the failed step for KindSetRightFailed.
	Step *ifi.Step
	// ServiceName and RestartReason are set for KindRestartFailed.
	ServiceName   string
	RestartReason string
	// Restart is the host's account of a restart that ran and failed (KindRestartFailed).
	Restart *contract.RestartInstanceResult
	// SQLPort is where SQL Server was awaited, for KindNotReady, or asked, for
	// KindSQLLogonFailed.
	SQLPort int
	// MaxParallelRestarts is the limiter's limit, for KindRestartSlot.
	MaxParallelRestarts int
	// HostBusy, for KindRestartSlot: what was waited for was another instance of
	// the same host restarting in this run, not a slot of the limit.
	HostBusy bool
	// Node is the failover cluster node the failure happened on ("" when none).
	Node string
	// Move is where a failover or cluster restart left the role (KindClusterActionFailed,
	// and any later failure of an apply that moved it).
	Move *MoveResult
}

func (e *Error) Error() string {
	var what string
	switch e.Kind {
	case KindHostSetup:
		what = "cannot set up WinRM for " + safetext.Escape(e.Target.Host)
	case KindObserveFailed:
		what = "cannot read " + e.Target.String()
	case KindNotFound, KindVanished:
		what = fmt.Sprintf("%s is not installed (installed instances: %s)", e.Target, e.Installed())
	case KindAssessFailed:
		what = "cannot assess IFI on " + e.Target.String()
	case KindDecideFailed:
		what = "cannot decide what to change on " + e.Target.String()
	case KindRefused:
		what = "refused to change " + e.Target.String()
	case KindSetRightFailed:
		what = fmt.Sprintf("cannot %s %s on %s", verb(e.Step), stepRight(e.Step), e.Target)
	case KindRestartFailed:
		what = "cannot restart " + e.Target.String()
	case KindNotReady:
		what = fmt.Sprintf("%s did not accept connections on port %d after the restart", e.Target, e.SQLPort)
	case KindReadBackFailed:
		what = "cannot read back " + e.Target.String() + " after the change"
	case KindCheckFailed:
		what = "IFI is not as asked on " + e.Target.String() + " after the restart"
	case KindAfterDiffers:
		what = e.Target.String() + " reads back otherwise than its plan said"

	case KindRestartSlot:
		if e.HostBusy {
			what = fmt.Sprintf("the restart of %s did not begin: another instance of the same host was still restarting in this run when the deadline passed "+
				"(the instances of one host restart one at a time)", e.Target)
			break
		}
		what = fmt.Sprintf("the restart of %s did not begin: %d other restart(s) (the most allowed at once) were still running when the deadline passed",
			e.Target, e.MaxParallelRestarts)
	case KindRestartInProgress:
		// The host's message says who holds its lease: a restart of another instance,
		// or a request prepared and not let go (of this instance or another).
		what = "the restart of " + e.Target.String() + " did not begin: the host's restart lease is held"
	case KindClusterReadFailed:
		what = "cannot read the failover cluster of " + e.Target.String()
	case KindClusterActionFailed:
		what = e.Move.describe(e.Target)
	case KindSQLLogonFailed:
		what = "the SQL login cannot log on to " + e.Target.String()
	default:
		what = e.Kind.String() + " on " + e.Target.String()
	}
	if e.Node != "" {
		what += " (cluster node " + safetext.Escape(e.Node) + ")"
	}
	if e.Err != nil {
		return what + ": " + e.Err.Error()
	}
	return what
}

// describe says how a cluster action ended, for KindClusterActionFailed.
func (m *MoveResult) describe(t Target) string {
	if m == nil {
		return "the cluster action on " + t.String() + " failed"
	}
	what := "the failover"
	asked := "to move the role to " + safetext.Escape(m.Target)
	if m.Mode == ifi.RestartClusterRestart {
		what, asked = "the cluster restart", "to restart the role on "+safetext.Escape(m.Target)
	}
	if m.Refused {
		return fmt.Sprintf("the cluster refused %s of %s (%s) before anything was taken offline: the role %q stays on %s",
			what, t, asked, safetext.Escape(m.Group), safetext.Escape(m.From))
	}
	s := fmt.Sprintf("%s of %s did not end as asked (%s): ", what, t, asked)
	switch {
	case m.To == "" && m.State == "":
		s += fmt.Sprintf("where the role %q is now is unknown; check it in Failover Cluster Manager", safetext.Escape(m.Group))
	case m.State == contract.ClusterOnline:
		s += fmt.Sprintf("the cluster left the role %q Online on %s, not on %s (a fail back, or its failover policy)",
			safetext.Escape(m.Group), safetext.Escape(m.To), safetext.Escape(m.Target))
	case m.Guard != nil && m.Guard.Finished:
		s += fmt.Sprintf("the role %q is %s on %s, and the guard the action started on %s has ended without seeing it Online",
			safetext.Escape(m.Group), safetext.Escape(m.State), safetext.Escape(m.To), safetext.Escape(t.Host))
		if m.Guard.Error != "" {
			s += " (its last error: " + safetext.Escape(m.Guard.Error) + ")"
		}
		s += "; bring it online in Failover Cluster Manager and check the cluster log (Get-ClusterLog)"
	default:
		// The scripts take nothing offline before their guard has started, and the
		// guard outlives them: it brings the role online once the cluster is done.
		s += fmt.Sprintf("the role %q is %s on %s. The guard the action started on %s before taking anything offline brings the role online "+
			"once the cluster is done with it, and tries again a few times, for up to 2 hours: run terraform plan in a few minutes to see where the role is; "+
			"if it is still not Online, bring it online in Failover Cluster Manager and check the cluster log (Get-ClusterLog)",
			safetext.Escape(m.Group), safetext.Escape(m.State), safetext.Escape(m.To), safetext.Escape(t.Host))
	}
	if m.ClusterError != "" {
		s += "; the cluster said: " + safetext.Escape(m.ClusterError)
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Installed lists the host's instances for not-found errors ("none" when it has none).
func (e *Error) Installed() string {
	if e.Instance == nil || len(e.Instance.InstalledInstances) == 0 {
		return "none"
	}
	return safetext.Escape(strings.Join(e.Instance.InstalledInstances, ", "))
}

// verb is "grant" or "revoke" for a step.
func verb(s *ifi.Step) string {
	if s != nil && s.Grant {
		return "grant"
	}
	return "revoke"
}

// stepRight is the right a step changes; IFI's when there is no step.
func stepRight(s *ifi.Step) string {
	if s == nil {
		return contract.RightManageVolume
	}
	return s.RightOf()
}
