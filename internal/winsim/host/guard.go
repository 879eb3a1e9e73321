package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// The restart's guard as restart_guard.ps1 starts it (design/restart.md): its
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

// The guard's launchers (EndpointProtectionConfig.KillsPowerShellFrom).
const (
	LauncherWMI  = "wmi"
	LauncherTask = "scheduled_task"
)

// Execution policies (about_Execution_Policies).
var executionPolicyNames = []string{"AllSigned", "Bypass", "RemoteSigned", "Restricted", "Undefined", "Unrestricted"}

// canonicalExecutionPolicy spells an execution policy as Windows does; "" is Undefined.
func canonicalExecutionPolicy(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	for _, e := range executionPolicyNames {
		if strings.EqualFold(p, e) {
			if e == "Undefined" {
				return "", nil
			}
			return e, nil
		}
	}
	return "", fmt.Errorf("%q is not one of %s", p, strings.Join(executionPolicyNames, ", "))
}

// guardFileContent is the model's content of the guard's file: the restart's script
// (Write-RestartGuardFile writes the worker's text; the model needs only bytes whose
// hash the loader can check).
func guardFileContent() []byte {
	s, _ := contract.Script(contract.OpRestartInstance)
	return []byte(s)
}

// prepareGuardFile is Write-RestartGuardFile: it refuses a directory someone other
// than Administrators or SYSTEM owns, else creates it owned by Administrators.
// It returns the guard file's path and the SHA-256 of its content.
func (h *Host) prepareGuardFile() (string, string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	dir := contract.GuardDirectory
	switch h.guardDirOwner {
	case "":
		h.guardDirOwner = sidAdministrators
	case sidAdministrators, sidSystem:
	default:
		return "", "", fmt.Errorf("the directory %s is owned by %s, not by Administrators or SYSTEM. Check who created it, then delete it; "+
			"the provider creates it again with an ACL that lets only Administrators and SYSTEM write", dir, ownerName(h.nameOf(h.guardDirOwner), h.guardDirOwner))
	}
	sum := sha256.Sum256(guardFileContent())
	return dir + `\restart_guard_` + hex.EncodeToString(sum[:8]) + `.ps1`, hex.EncodeToString(sum[:]), nil
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

// SetWMIError makes every Win32_Process.Create call throw (Invoke-CimMethod's
// CimException) with msg, as WMI does when it refuses the call itself rather than
// answering with a return value: access denied on root\cimv2 (WBEM_E_ACCESS_DENIED,
// 0x80041003), a provider quota (WBEM_E_QUOTA_VIOLATION, 0x8004106C), the WMI
// service not answering. "" clears it.
func (h *Host) SetWMIError(msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.wmiError = msg
}

// scriptCatchesWMIError reports whether restart_guard.ps1 takes an exception from
// Win32_Process.Create as the WMI launcher's failure and tries the scheduled task
// (the simulator knows the scripts by content, as scriptWaitsForWMIGuard does); a
// script that does not ends the request with the exception's raw message.
func scriptCatchesWMIError() bool {
	s, err := contract.Script(contract.OpRestartInstance)
	return err == nil && strings.Contains(s, `$why.Add("Win32_Process.Create failed: $($_.Exception.Message)")`)
}

// powershell.exe's parameters the model reads (powershell.exe -?, about_PowerShell_exe):
// a parameter may be given by any prefix of its name that no earlier one in this
// list has (-e and -ec are -EncodedCommand, -ex and -ep -ExecutionPolicy).
var psParameters = []struct {
	name  string
	value bool
}{
	{"encodedcommand", true}, {"executionpolicy", true}, {"file", true}, {"command", true},
	{"noprofile", false}, {"noninteractive", false}, {"nologo", false}, {"windowstyle", true},
}

func psParameter(arg string) (string, bool, bool) {
	if !strings.HasPrefix(arg, "-") && !strings.HasPrefix(arg, "/") {
		return "", false, false
	}
	n := strings.ToLower(arg[1:])
	switch n {
	case "ec":
		return "encodedcommand", true, true
	case "ep":
		return "executionpolicy", true, true
	}
	for _, p := range psParameters {
		if n != "" && strings.HasPrefix(p.name, n) {
			return p.name, p.value, true
		}
	}
	return "", false, false
}

// startGuardProcess is a powershell.exe a launcher started with commandLine, up to
// the guard's first write: the token the guard it runs looks its marker up with,
// or why it ended before it wrote anything. What it runs is read from its command
// line, never from what the script believes it sent:
//   - an endpoint-protection product that ends the launcher's powershell.exe
//     children ends it before it runs a line;
//   - -File runs a script file, subject to the execution policy: a Group Policy's
//     (MachinePolicy) overrides -ExecutionPolicy; AllSigned and Restricted refuse
//     the guard's unsigned file (about_Execution_Policies, Set-ExecutionPolicy);
//   - -EncodedCommand runs a command, to which the execution policy does not apply;
//     the model knows only the guard's loader (contract.ParseGuardLoader), and runs
//     it as it is written: the file's owner must be Administrators or SYSTEM and its
//     content's SHA-256 the loader's, else it exits (3, 4) before the guard runs.
func (h *Host) startGuardProcess(commandLine, launcher, guardFile string) (token, ended string) {
	h.mu.Lock()
	kills := slices.Contains(h.cfg.EndpointProtection.KillsPowerShellFrom, launcher)
	gpo, _ := canonicalExecutionPolicy(h.cfg.GroupPolicyExecutionPolicy)
	owner := h.guardDirOwner
	h.mu.Unlock()
	args := splitCommandLine(commandLine)
	if len(args) == 0 || !strings.EqualFold(args[0], contract.GuardProgram) {
		return "", "it is not powershell.exe"
	}
	if kills {
		return "", "an endpoint-protection product ended it at its start"
	}
	vals := map[string]string{}
	var scriptArgs []string
	for i := 1; i < len(args); i++ {
		name, takesValue, ok := psParameter(args[i])
		if !ok {
			return "", fmt.Sprintf("powershell.exe does not take %q", args[i])
		}
		if !takesValue {
			continue
		}
		if i+1 >= len(args) {
			return "", fmt.Sprintf("powershell.exe: %s needs a value", args[i])
		}
		vals[name] = args[i+1]
		i++
		if name == "file" {
			scriptArgs = args[i+1:]
			break
		}
	}
	switch {
	case vals["file"] != "":
		policy := "RemoteSigned" // Windows Server's default (LocalMachine)
		if p, err := canonicalExecutionPolicy(vals["executionpolicy"]); err == nil && p != "" {
			policy = p
		}
		if gpo != "" {
			policy = gpo // MachinePolicy first: it overrides the Process scope (-ExecutionPolicy)
		}
		if policy == "AllSigned" || policy == "Restricted" {
			return "", fmt.Sprintf("the execution policy %s (set by Group Policy) does not let it run the unsigned script file %s", policy, vals["file"])
		}
		if !strings.EqualFold(vals["file"], guardFile) {
			return "", fmt.Sprintf("the file %s is not the guard's", vals["file"])
		}
		for i := 0; i+1 < len(scriptArgs); i++ {
			if strings.EqualFold(scriptArgs[i], "-Token") {
				return scriptArgs[i+1], ""
			}
		}
		return "", "the guard's file was given no token"
	case vals["encodedcommand"] != "":
		text, err := contract.DecodeCommand(vals["encodedcommand"])
		if err != nil {
			return "", "its -EncodedCommand is not Base64 of UTF-16LE text"
		}
		v, ok := contract.ParseGuardLoader(text)
		if !ok {
			return "", "its -EncodedCommand is not the guard's loader (the simulator runs no other command)"
		}
		if !strings.EqualFold(v.File, guardFile) {
			return "", fmt.Sprintf("the loader's file %s does not exist", v.File)
		}
		if owner != sidAdministrators && owner != sidSystem {
			return "", "the loader exited 3: the guard's file is not owned by Administrators or SYSTEM"
		}
		sum := sha256.Sum256(guardFileContent())
		if v.Hash != hex.EncodeToString(sum[:]) {
			return "", "the loader exited 4: the guard's file is not the one written"
		}
		return v.Token, ""
	}
	return "", "its command line runs neither a file nor an encoded command"
}

// guardLaunch is Start-RestartGuard's answer.
type guardLaunch struct {
	launcher string // "wmi", "scheduled_task"; "" when the guard could not be started
	task     string // the scheduled task's name
	why      string
	// raw: an exception the script did not catch ended the request, with why as
	// its message.
	raw bool
	// guarded: a guard runs (it wrote its start record); false when the script went
	// on without waiting for one that never started (it then dies with the shell).
	guarded bool
}

// scriptWaitsForWMIGuard reports whether restart_guard.ps1 waits for the start
// record of a guard Win32_Process.Create started (the simulator knows the scripts by
// content, as usesAddType does); a script that does not goes on unguarded when that
// guard never starts.
func scriptWaitsForWMIGuard() bool {
	s, err := contract.Script(contract.OpRestartInstance)
	return err == nil && strings.Contains(s, "Wait-RestartGuardStart -Marker $Marker -ProcessId $createdId")
}

// launchGuard is Start-RestartGuard: the guard's launcher, and why the others failed.
// Each launcher's powershell.exe is started with the command line restart_instance.ps1
// composes (contract.GuardCommandLine) and runs what that line says
// (startGuardProcess); restart_instance waits for its start record, at most
// contract.GuardStartSeconds (a WMI-created process that ended is seen at once).
func (h *Host) launchGuard(ctx context.Context, instance, token, guardFile, hash string) guardLaunch {
	var why []string
	h.mu.Lock()
	mode := h.asrRules[ASRRulePsExecWMI]
	schedulerStopped := h.cfg.TaskSchedulerStopped
	wmiError := h.wmiError
	h.mu.Unlock()
	line, err := contract.GuardCommandLine(guardFile, hash, token, 4096)
	if err != nil {
		return guardLaunch{why: err.Error()}
	}
	notStarted := func(what, ended string) string {
		return fmt.Sprintf("the guard %s started did not start within %d s: %s (a Group Policy execution policy, AMSI or an endpoint-protection product may have ended it)",
			what, contract.GuardStartSeconds, ended)
	}
	if mode == ASRBlock || mode == ASRWarn {
		name := "block"
		if mode == ASRWarn {
			name = "warn (which blocks where nobody can answer the prompt)"
		}
		why = append(why, fmt.Sprintf("Microsoft Defender's attack surface reduction rule %s (Block process creations originating from PSExec and WMI commands) is in %s mode, so Win32_Process.Create was not used", ASRRulePsExecWMI, name))
	} else if wmiError != "" {
		if !scriptCatchesWMIError() {
			return guardLaunch{why: wmiError, raw: true}
		}
		why = append(why, "Win32_Process.Create failed: "+wmiError)
	} else if rv := h.win32ProcessCreate(line); rv == 0 {
		h.stats.powershell.Add(1)
		got, ended := h.startGuardProcess(line, LauncherWMI, guardFile)
		started := ended == "" && got == token
		if ended == "" && !started {
			ended = "the guard found no marker with its token"
		}
		if !scriptWaitsForWMIGuard() {
			// The script goes on at once, guarded or not.
			if started {
				h.stats.guardWMI.Add(1)
			}
			return guardLaunch{launcher: LauncherWMI, guarded: started}
		}
		// restart_instance waits until the guard runs: its start's time (the process
		// was counted above, once).
		sleepContext(ctx, h.cost.PowerShellStart)
		if started {
			h.stats.guardWMI.Add(1)
			return guardLaunch{launcher: LauncherWMI, guarded: true}
		}
		why = append(why, notStarted("Win32_Process.Create", "it ended without its start record: "+ended))
	} else {
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
	h.chargeProcessStart(ctx) // restart_instance waits until the guard runs
	got, ended := h.startGuardProcess(line, LauncherTask, guardFile)
	if ended == "" && got == token {
		h.stats.guardTask.Add(1)
		return guardLaunch{launcher: LauncherTask, task: task, guarded: true}
	}
	if ended == "" {
		ended = "the guard found no marker with its token"
	}
	// No start record comes: the script waits its whole deadline.
	sleepContext(ctx, contract.GuardStartSeconds*time.Second)
	h.mu.Lock()
	h.removeTaskLocked(task)
	h.mu.Unlock()
	why = append(why, notStarted(`the scheduled task \mssqlifi\`+task, ended))
	return guardLaunch{why: strings.Join(why, "; ")}
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
