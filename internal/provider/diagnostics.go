package provider

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
)

// operation says which Terraform operation an engine error comes from, since the
// next step a diagnostic names depends on it.
type operation int

const (
	opApply   operation = iota // create or update
	opRead                     // the resource's refresh or the data source's read
	opDestroy                  // delete
	opAction                   // an invocation of the mssqlifi_restart action
)

// again is the command that tries op again, as its error's next step says it: an
// apply's failure names terraform apply, an action's its own invocation (Terraform
// 1.14's -invoke; the provider is not told the action block's name).
func again(op operation) string {
	if op == opAction {
		return "invoke the action again (terraform apply -invoke=action.mssqlifi_restart.NAME)"
	}
	return "run terraform apply again"
}

// timeoutsOf names the setting that bounds op: the resource's timeouts, the
// action's timeout argument.
func timeoutsOf(op operation) string {
	if op == opAction {
		return "action's timeout"
	}
	return "resource's timeouts"
}

// upper is s with its first letter upper-cased, to open a sentence.
func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// restartChanged is what a failed restart of op leaves of the rights: an apply
// changed them as asked before its restart, an action changes none.
func restartChanged(op operation) string {
	if op == opAction {
		return "No right was changed (the Engine takes the rights the host holds at its next start)"
	}
	return "The right was changed as asked"
}

// errorReport is what the diagnostics of an engine error need from the run.
type errorReport struct {
	// user is the WinRM user, for authentication failures.
	user string
	// logonAdvised, when set, is called for a failed logon (what: WinRM's logonWinRM
	// or the sql login's logonSQL) on t's host: it returns "" for the run's first of
	// that logon on that host, whose error then carries the full advice, and for the
	// others the instance whose error carries it. nil: every error carries it.
	logonAdvised func(what string, t converge.Target) string
	// sqlAuth is the sql block's login kind (sql.auth, defaults applied), for a
	// login SQL Server refused.
	sqlAuth string
}

// addEngineError adds the diagnostics of an error from the converge engine.
func addEngineError(diags *diag.Diagnostics, op operation, err error, rep errorReport) {
	var ce *converge.Error
	if !errors.As(err, &ce) {
		diags.AddError("Unexpected error", fmt.Sprintf("%v. This is a bug in the provider; please report it.", err))
		return
	}
	t := escapedTarget(ce.Target)
	user := safetext.Escape(rep.user)
	detail := func(err error) string { return hostErrorDetailOnce(t, ce.Target, err, user, rep.logonAdvised) }
	switch ce.Kind {
	case converge.KindHostSetup:
		diags.AddError(fmt.Sprintf("Cannot set up WinRM for %s", t.Host), detail(ce.Err))
	case converge.KindObserveFailed:
		diags.AddError(fmt.Sprintf("Cannot read SQL Server instance %s on %s", t.Instance, t.Host), detail(ce.Err))
	case converge.KindNotFound:
		diags.AddAttributeError(path.Root("instance"), "SQL Server instance not found", notFoundDetail(t, ce.Instance))
	case converge.KindVanished:
		diags.AddError("SQL Server instance disappeared", notFoundDetail(t, ce.Instance))
	case converge.KindAssessFailed:
		diags.AddError(fmt.Sprintf("Cannot assess IFI on %s", t), ce.Err.Error())
	case converge.KindDecideFailed:
		if op == opDestroy {
			diags.AddError(fmt.Sprintf("Cannot decide how to remove IFI from %s", t), ce.Err.Error())
		} else {
			diags.AddError(fmt.Sprintf("Cannot decide how to apply IFI on %s", t), ce.Err.Error())
		}
	case converge.KindRefused:
		if ce.Argument != "" {
			diags.AddAttributeError(path.Root(ce.Argument), ce.Refusal.Summary, ce.Refusal.Detail)
			return
		}
		diags.AddError(ce.Refusal.Summary, ce.Refusal.Detail)
	case converge.KindSetRightFailed:
		if op == opDestroy {
			diags.AddError(fmt.Sprintf("Cannot revoke the right on %s", t.Host),
				fmt.Sprintf("Could not revoke %s from %s: %s The resource stays in the state; run terraform destroy again.",
					ce.Step.RightOf(), ce.Step.SID, detail(ce.Err)))
			return
		}
		verb, prep := "revoke", "from"
		if ce.Step.Grant {
			verb, prep = "grant", "to"
		}
		diags.AddError(fmt.Sprintf("Cannot %s the right on %s", verb, t.Host),
			fmt.Sprintf("Could not %s %s %s %s: %s", verb, ce.Step.RightOf(), prep, ce.Step.SID, detail(ce.Err)))
	case converge.KindRestartFailed:
		var unfinished *converge.RestartUnfinishedError
		switch {
		case ce.Restart != nil:
			// The host's account: what happened, the Windows error and the error log.
			diags.AddError(fmt.Sprintf("Cannot restart SQL Server %s on %s", t.Instance, t.Host),
				fmt.Sprintf("The restart of %s (%s) on %s failed: %v %s; %s once the service can restart.",
					ce.ServiceName, ce.RestartReason, t, ce.Err, restartChanged(op), again(op)))
			return
		case errors.As(ce.Err, &unfinished):
			summary := fmt.Sprintf("The restart of SQL Server %s on %s was not seen to finish", t.Instance, t.Host)
			if unfinished.NotReceived {
				summary = fmt.Sprintf("The restart request did not reach %s", t.Host)
			}
			diags.AddError(summary,
				fmt.Sprintf("The restart of %s (%s) on %s: %s Run terraform plan to see what the host has now.",
					ce.ServiceName, ce.RestartReason, t, detail(ce.Err)))
			return
		}
		diags.AddError(fmt.Sprintf("Cannot restart SQL Server %s on %s", t.Instance, t.Host),
			fmt.Sprintf("The restart of %s (%s) failed: %s %s; %s once the service can restart, or restart it yourself.",
				ce.ServiceName, ce.RestartReason, detail(ce.Err), restartChanged(op), again(op)))
	case converge.KindNotReady:
		diags.AddError(fmt.Sprintf("SQL Server %s on %s did not accept connections after the restart", t.Instance, t.Host),
			fmt.Sprintf("Waiting for %s at %s:%d: %s. Check the service and its error log on the host; raise the %s "+
				"if recovery takes long, then %s.", t, t.Host, ce.SQLPort, sqlErrorDetail(ce.Err), timeoutsOf(op), again(op)))
	case converge.KindReadBackFailed:
		inner := ce.Err
		if le := (*converge.Error)(nil); errors.As(inner, &le) && le.Kind == converge.KindSQLLogonFailed && ce.Changed {
			changed := *le
			changed.Changed = true // its detail must not say that nothing was changed
			inner = &changed
		}
		addEngineError(diags, op, inner, rep)
		if ce.Changed {
			restarted := ""
			if ce.Restarted {
				restarted = " and SQL Server restarted"
			}
			// Nothing better to save: the prior state is kept, the error says the host could not be read back.
			diags.AddError("The change was made but could not be read back",
				fmt.Sprintf("On %s the right was changed%s, but reading the instance back failed. Run terraform refresh once the host answers.",
					t, restarted))
		}
	case converge.KindCheckFailed:
		diags.AddError(fmt.Sprintf("IFI is not as asked on %s after the restart", t), fmt.Sprintf("%s, then %s.", ce.Err, again(op)))
	case converge.KindAfterDiffers:
		diags.AddError(fmt.Sprintf("%s reads back otherwise than its plan said", t), ce.Err.Error())
	case converge.KindRestartSlot:
		if ce.HostBusy {
			diags.AddError(fmt.Sprintf("SQL Server %s on %s was not restarted: another instance of the host was restarting", t.Instance, t.Host),
				fmt.Sprintf("The instances of one host restart one at a time. The restart of %s waited for another instance of %s restarting in "+
					"this run until the operation's timeout ran out, and did not begin; nothing was changed on it. %s, "+
					"or raise the %s.", t, t.Host, upper(again(op)), timeoutsOf(op)))
			break
		}
		diags.AddError(fmt.Sprintf("SQL Server %s on %s was not restarted: no restart slot before the deadline", t.Instance, t.Host),
			fmt.Sprintf("The restart of %s waited for other instances' restarts (max_parallel_restarts = %d) until the operation's "+
				"timeout ran out, and did not begin; nothing was changed on it (the change travels with the restart). %s, raise the "+
				"%s, or raise max_parallel_restarts in the provider block (or %s; 0 = no limit).",
				t, ce.MaxParallelRestarts, upper(again(op)), timeoutsOf(op), EnvMaxParallelRestarts))
	case converge.KindRestartInProgress:
		diags.AddError(fmt.Sprintf("SQL Server %s on %s was not restarted: the host's restart lease is held", t.Instance, t.Host),
			detail(ce.Err)+" The next plan shows what is still to do for this instance.")
	case converge.KindClusterReadFailed:
		diags.AddError(fmt.Sprintf("Cannot read the failover cluster of %s", t),
			detail(ce.Err)+" The instance is a failover cluster instance (its Cluster registry key is set), and the provider reads its "+
				"nodes and role through root\\MSCluster on the node reached. Nothing was changed. Check that the Cluster service runs "+
				"on that node, or point host at another node of the cluster.")
	case converge.KindClusterActionFailed:
		diags.AddError(fmt.Sprintf("The cluster did not restart SQL Server %s as asked", t.Instance),
			ce.Error()+". The right was changed as asked on every possible owner. Run terraform plan to see where the role is "+
				"and what each node holds (cluster_nodes), then apply again once the cause is fixed.")
	case converge.KindSQLLogonFailed:
		unchanged := " Nothing was changed."
		if ce.Changed {
			unchanged = ""
		}
		if first := advisedBy(rep, logonSQL, ce.Target); first != "" {
			// The same login on the same host: its facts, and where the advice is.
			facts := ce.Err.Error()
			if se := (*sqlcheck.Error)(nil); errors.As(ce.Err, &se) {
				short := *se
				short.Hint = ""
				facts = short.Error()
			}
			diags.AddError(fmt.Sprintf("The sql login cannot log on to SQL Server %s on %s", t.Instance, t.Host),
				fmt.Sprintf("%s. %s.%s", facts, sqlLogonAdviceGiven(safetext.Escape(first)), unchanged))
			break
		}
		diags.AddError(fmt.Sprintf("The sql login cannot log on to SQL Server %s on %s", t.Instance, t.Host),
			fmt.Sprintf("%s. %s.%s To plan and apply without SQL Server's answer when it refuses the login "+
				"(verification then falls back to the error log, and a restart that needs SQL Server's answer is refused), set sql.optional = true.",
				sqlErrorDetail(ce.Err), sqlLogonAdvice(rep.sqlAuth), unchanged))
	default:
		diags.AddError(fmt.Sprintf("Cannot manage IFI on %s", t), ce.Error()+".")
	}
}

// The logons whose advice is given once per host and run (errorReport.logonAdvised).
const (
	logonWinRM = "logon"     // the WinRM user's
	logonSQL   = "sql logon" // the sql block's login
)

// advisedBy is the instance whose error on t's host carries the advice for the
// failed logon what in this run; "" when this error is the first (it carries it).
func advisedBy(rep errorReport, what string, t converge.Target) string {
	return advisedByOf(rep.logonAdvised, what, t)
}

func advisedByOf(logonAdvised func(string, converge.Target) string, what string, t converge.Target) string {
	if logonAdvised == nil {
		return ""
	}
	return logonAdvised(what, t)
}

// escapedTarget is t with its user-supplied text escaped for messages (safetext);
// every diagnostic that names a target goes through it.
func escapedTarget(t converge.Target) converge.Target {
	t.Host, t.Instance = safetext.Escape(t.Host), safetext.Escape(t.Instance)
	return t
}

// hostErrorDetail says what failed at the host and what to do next.
func hostErrorDetail(t converge.Target, err error, user string) string {
	return hostErrorDetailOnce(t, t, err, user, nil)
}

// hostErrorDetailOnce is hostErrorDetail, with a failed logon's advice given once
// per host in a run: logonAdvised (if set) says whether another instance's error
// on the host (raw, unescaped) already carries it.
func hostErrorDetailOnce(t, raw converge.Target, err error, user string, logonAdvised func(string, converge.Target) string) string {
	var re *remote.Error
	if errors.As(err, &re) {
		if user == "" {
			user = safetext.Escape(re.User) // a logon from the credential cache: its principal
		}
		logon := re.Kind == remote.KindAuth && (re.Setting == remote.SettingUsername || re.Setting == remote.SettingPassword)
		advisedBy := ""
		if logon {
			advisedBy = advisedByOf(logonAdvised, logonWinRM, raw)
		}
		facts := *re
		if advisedBy != "" {
			facts.Hint = "" // the host-side hint is part of the advice given once
		}
		msg := facts.Error()
		if re.Kind == remote.KindAuth && !strings.Contains(strings.ToLower(msg), "authentication failed") {
			msg = fmt.Sprintf("WinRM authentication failed for %s at %s: %s", user, t.Host, msg)
		}
		// remote says what failed and what to check on the host; the provider's
		// arguments to change are ours to name.
		if advisedBy != "" {
			msg += ". " + logonAdviceGiven(safetext.Escape(advisedBy))
		} else if re.Kind == remote.KindScript && re.Code == contract.CodeConstrainedLanguage {
			msg += ". " + constrainedLanguageAdvice(t.Host, user)
		} else if adv := winrmAdvice(re); adv != "" {
			msg += ". " + adv
		} else if re.Hint == "" && (re.Kind == remote.KindUnreachable || re.Kind == remote.KindTimeout) {
			msg += ". Check that the host is up, WinRM listens on the configured port and no firewall blocks it; the Terraform state was not changed"
		}
		return fmt.Sprintf("%s (%s).", msg, t)
	}
	return fmt.Sprintf("%s: %v. Check the host and the provider's winrm settings, then retry.", t, err)
}

// notFoundDetail names the instances the host has.
func notFoundDetail(t converge.Target, ri *contract.ReadInstanceResult) string {
	t = escapedTarget(t)
	inst := "none"
	if ri != nil && len(ri.InstalledInstances) > 0 {
		inst = safetext.Escape(strings.Join(ri.InstalledInstances, ", "))
	}
	name := t.Host
	if ri != nil && ri.ComputerName != "" {
		name = fmt.Sprintf("%s (%s)", t.Host, safetext.Escape(ri.ComputerName))
	}
	return fmt.Sprintf("SQL Server instance %q is not installed on %s; installed instances: %s. Check the instance argument.",
		t.Instance, name, inst)
}

// notFound returns the engine's not-found error, if err is one.
func notFound(err error) (*converge.Error, bool) {
	var ce *converge.Error
	if errors.As(err, &ce) && ce.Kind == converge.KindNotFound {
		return ce, true
	}
	return nil, false
}

// addWarnings adds warnings to diags, leaving out those whose code is in skip.
func addWarnings(diags *diag.Diagnostics, ws []ifi.Warning, skip ...string) {
	for _, w := range ws {
		if slices.Contains(skip, w.Code) {
			continue
		}
		diags.AddWarning(w.Summary, warningDetail(w))
	}
}

// warningDetail is a warning's facts with the provider arguments to change: the
// engine states what it saw, the provider names its own settings.
func warningDetail(w ifi.Warning) string {
	switch w.Code {
	case converge.WarnStateStale:
		return w.Detail + " The Terraform state keeps its previous values; run terraform plan once the host answers to see what changed."
	case converge.WarnSQLSetup:
		return w.Detail + " Check the provider's sql block."
	case converge.WarnSQLPortUnknown:
		return w.Detail + " Set sql_port on the resource so SQL Server can be asked."
	case converge.WarnSQLCheck:
		if contract.SQLLogonFailed(w.Err) {
			return fmt.Sprintf("%s Cause: %s. sql.optional = true makes a login SQL Server refuses a warning; without it, the plan fails.",
				w.Detail, sqlErrorDetail(w.Err))
		}
		return fmt.Sprintf("%s Cause: %s. Check the sql block's login (it needs VIEW SERVER STATE), encryption settings and sql_port.",
			w.Detail, sqlErrorDetail(w.Err))
	}
	return w.Detail
}
