package host

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// The restart's guard as restart_guard.ps1 starts it (docs/design/restart.md): its
// script in a file under %ProgramData%\mssqlifi, whose owner is checked first; then
// Win32_Process.Create, unless Defender's attack surface reduction rule "Block process
// creations originating from PSExec and WMI commands" is in block or warn mode (read
// from Defender's settings, Get-MpPreference), and a one-time scheduled task running
// as SYSTEM when WMI cannot be used. The guard removes its task when it ends; the
// next restart of the instance removes one left behind.

// ASRRulePsExecWMI is the rule "Block process creations originating from PSExec and
// WMI commands" (Microsoft Learn, "Attack surface reduction rules reference").
const ASRRulePsExecWMI = "d1e49aac-8f56-4280-b9ba-993a6d77406c"

// ASR rule actions (AttackSurfaceReductionRules_Actions).
const (
	ASRDisabled      = 0
	ASRBlock         = 1
	ASRAudit         = 2
	ASRNotConfigured = 5
	ASRWarn          = 6
)

// Well-known SIDs the guard's directory may be owned by.
const (
	sidAdministrators = "S-1-5-32-544"
	sidSystem         = "S-1-5-18"
)

func validateASRRule(id string, action int) error {
	if len(id) != 36 || strings.Count(id, "-") != 4 {
		return fmt.Errorf("%q is not a rule id (a GUID such as %s)", id, ASRRulePsExecWMI)
	}
	switch action {
	case ASRDisabled, ASRBlock, ASRAudit, ASRNotConfigured, ASRWarn:
		return nil
	}
	return fmt.Errorf("rule %s: action %d is not 0 (disabled), 1 (block), 2 (audit), 5 (not configured) or 6 (warn)", id, action)
}

// SetASRRule sets an attack surface reduction rule's action, as
// Add-MpPreference -AttackSurfaceReductionRules_Ids ... -AttackSurfaceReductionRules_Actions ... does.
func (h *Host) SetASRRule(id string, action int) error {
	if err := validateASRRule(id, action); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asrRules[strings.ToLower(id)] = action
	return nil
}

// ScheduledTasks lists the scheduled tasks under \mssqlifi\ (the guards' tasks).
func (h *Host) ScheduledTasks() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.tasks))
	for name := range h.tasks {
		out = append(out, `\mssqlifi\`+name)
	}
	slices.Sort(out)
	return out
}

// prepareGuardFile is Write-RestartGuardFile: it refuses a directory someone other
// than Administrators or SYSTEM owns, else creates it owned by Administrators.
// It returns the guard file's path.
func (h *Host) prepareGuardFile() (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	dir := contract.GuardDirectory
	switch h.guardDirOwner {
	case "":
		h.guardDirOwner = sidAdministrators
	case sidAdministrators, sidSystem:
	default:
		return "", fmt.Errorf("the directory %s is owned by %s, not by Administrators or SYSTEM. Check who created it, then delete it; "+
			"the provider creates it again with an ACL that lets only Administrators and SYSTEM write", dir, ownerName(h.nameOf(h.guardDirOwner), h.guardDirOwner))
	}
	return dir + `\restart_guard_0123456789abcdef.ps1`, nil
}

// win32ProcessCreate is Win32_Process.Create: its return value. Defender's ASR rule
// in block (or warn, where nobody can answer the prompt) mode refuses the process;
// the return value Windows then gives is not documented, and the model's 2 (access
// denied) is an assumption the scripts do not rely on: they read the rule's mode
// from Get-MpPreference first. A command line CreateProcess refuses (32,767
// characters or more) is 21, invalid parameter.
func (h *Host) win32ProcessCreate(commandLine string) int {
	h.mu.Lock()
	mode := h.asrRules[ASRRulePsExecWMI]
	h.mu.Unlock()
	switch {
	case mode == ASRBlock || mode == ASRWarn:
		return 2
	case len(commandLine) >= 32767:
		return 21
	}
	return 0
}

// guardLaunch is Start-RestartGuard's answer.
type guardLaunch struct {
	launcher string // "wmi", "scheduled_task"; "" when the guard could not be started
	task     string // the scheduled task's name
	why      string
}

// launchGuard is Start-RestartGuard: the guard's launcher, and why the others failed.
// A guard started by a scheduled task is waited for (its powershell.exe start is on
// the restart's path); one created through WMI is not.
func (h *Host) launchGuard(ctx context.Context, instance, token, guardFile string) guardLaunch {
	var why []string
	h.mu.Lock()
	mode := h.asrRules[ASRRulePsExecWMI]
	schedulerStopped := h.cfg.TaskSchedulerStopped
	h.mu.Unlock()
	if mode == ASRBlock || mode == ASRWarn {
		name := "block"
		if mode == ASRWarn {
			name = "warn (which blocks where nobody can answer the prompt)"
		}
		why = append(why, fmt.Sprintf("Microsoft Defender's attack surface reduction rule %s (Block process creations originating from PSExec and WMI commands) is in %s mode, so Win32_Process.Create was not used", ASRRulePsExecWMI, name))
	} else {
		line, err := contract.GuardCommandLine(guardFile, token, 4096)
		if err != nil {
			return guardLaunch{why: err.Error()}
		}
		rv := h.win32ProcessCreate(line)
		if rv == 0 {
			h.stats.powershell.Add(1)
			h.stats.guardWMI.Add(1)
			return guardLaunch{launcher: "wmi"}
		}
		why = append(why, fmt.Sprintf("Win32_Process.Create returned %d", rv))
	}
	task := "restart_guard_" + instance + "_" + token
	if schedulerStopped {
		why = append(why, fmt.Sprintf(`the scheduled task \mssqlifi\%s could not be started: the Task Scheduler service is not running`, task))
		return guardLaunch{why: strings.Join(why, "; ")}
	}
	h.mu.Lock()
	h.tasks[task] = true
	h.mu.Unlock()
	h.stats.guardTask.Add(1)
	h.chargeProcessStart(ctx) // restart_instance waits until the guard runs
	return guardLaunch{launcher: "scheduled_task", task: task}
}

// removeTask is Unregister-ScheduledTask (no error when the task is gone).
func (h *Host) removeTaskLocked(name string) {
	if name != "" {
		delete(h.tasks, name)
	}
}

// ownerName is Get-Acl's Owner: the account's name, or its SID when it does not translate.
func ownerName(name, sid string) string {
	if name == "" {
		return sid
	}
	return name
}
