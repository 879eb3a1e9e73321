package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/wsman"
)

// Execute runs one command a WinRM client started (wsman.Executor). It accepts the
// provider's shape only (design/windows-behaviour.md#running-powershell-over-winrm:
// a short bootstrap on the command line, the script on stdin): powershell.exe with
// exactly contract.CommandArgs(), stdin = contract.EncodeInput(...). The operation's
// result is printed as JSON on stdout, exit 0; a failure the script foresees prints a
// contract.ScriptError on stdout and exits with the contract's code; anything else fails
// as powershell.exe would (exit 1, a CLIXML error record on stderr). Other programs
// answer as cmd.exe would.
//
// Validation, as the operations' scripts (internal/contract/scripts) do it:
//   - instance: contract.InstanceNameSyntaxValid (common.ps1 Test-SqlInstanceName,
//     case-sensitive) → else invalid_parameters (exit 2);
//   - right: ^Se[A-Za-z]+Privilege$ (case-sensitive) → else invalid_parameters;
//     set_right, and restart_instance's changes (before anything changes):
//     anything but contract.ManagedRights → invalid_parameters; a name Windows
//     does not know fails in the LSA (STATUS_NO_SUCH_PRIVILEGE);
//   - sid: S-1-<authority>-<sub>... that SecurityIdentifier accepts → else
//     invalid_parameters;
//   - timeout_seconds: 1..86400 → else invalid_parameters.
//
// LSA failures (a WinRM user who is not an administrator: LsaOpenPolicy answers
// Access is denied; an unknown privilege) surface as the scripts let them: from
// read_instance as a terminating error (CLIXML, exit 1), from set_right as a
// ScriptError "lsa_error" (exit 1). restart_instance by a non-administrator fails
// with a CLIXML error (the SCM refuses to open the service).
func (h *Host) Execute(ctx context.Context, cmd wsman.Command, stdout, stderr io.Writer) int {
	start := h.now()
	entry := AuditEntry{Time: start.UTC(), User: cmd.User, UserAgent: cmd.UserAgent}
	// WinRS joins the command and its arguments with blanks into one command line for
	// CreateProcess, so clients that pass the arguments as one element (pywinrm) and
	// clients that pass them one by one (masterzen) start the same process.
	tokens := splitCommandLine(strings.Join(append([]string{cmd.Command}, cmd.Arguments...), " "))
	entry.Command = summarizeCommand(tokens)
	code := h.executeTokens(ctx, cmd, tokens, stdout, stderr, &entry)
	entry.ExitCode = code
	entry.Duration = h.now().Sub(start).String()
	h.addAudit(entry)
	return code
}

func (h *Host) executeTokens(ctx context.Context, cmd wsman.Command, tokens []string, stdout, stderr io.Writer, entry *AuditEntry) int {
	if len(tokens) == 0 {
		entry.Error = "empty command"
		fmt.Fprint(stderr, "The syntax of the command is incorrect.\r\n")
		return 1
	}
	prog := programName(tokens[0])
	switch prog {
	case "powershell", "powershell.exe":
		return h.runPowerShell(ctx, cmd, tokens[1:], stdout, stderr, entry)
	case "cmd", "cmd.exe":
		rest := tokens[1:]
		if len(rest) > 0 && (strings.EqualFold(rest[0], "/c") || strings.EqualFold(rest[0], "/k")) {
			inner := rest[1:]
			if len(inner) == 1 {
				inner = splitCommandLine(inner[0])
			}
			return h.executeTokens(ctx, cmd, inner, stdout, stderr, entry)
		}
		entry.Error = "interactive cmd.exe is not modelled"
		fmt.Fprint(stderr, "winsim does not model an interactive cmd.exe: use cmd /c <command>\r\n")
		return 1
	case "hostname", "hostname.exe":
		fmt.Fprintf(stdout, "%s\r\n", h.computer)
		return 0
	case "echo":
		fmt.Fprintf(stdout, "%s\r\n", strings.Join(tokens[1:], " "))
		return 0
	}
	entry.Error = "unrecognised program " + tokens[0]
	// cmd.exe's answer for a program it cannot find.
	fmt.Fprintf(stderr, "'%s' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n", tokens[0])
	return 1
}

func programName(tok string) string {
	tok = strings.Trim(tok, `"`)
	if i := strings.LastIndexAny(tok, `\/`); i >= 0 {
		tok = tok[i+1:]
	}
	return strings.ToLower(tok)
}

// splitCommandLine splits a Windows command line on blanks, honouring double quotes.
func splitCommandLine(s string) []string {
	var out []string
	var cur strings.Builder
	inQuote, have := false, false
	for _, r := range s {
		switch {
		case r == '"':
			inQuote = !inQuote
			have = true
		case (r == ' ' || r == '\t') && !inQuote:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}

func summarizeCommand(tokens []string) string {
	parts := make([]string, len(tokens))
	for i, t := range tokens {
		if i > 0 && strings.EqualFold(tokens[i-1], "-EncodedCommand") {
			if dec, err := contract.DecodeCommand(t); err == nil && dec == contract.Bootstrap() {
				t = fmt.Sprintf("<mssqlifi bootstrap, %d characters>", len(t))
			} else if len(t) > 60 {
				t = t[:60] + fmt.Sprintf("...<%d characters>", len(t))
			}
		} else if len(t) > 200 {
			t = t[:200] + "..."
		}
		parts[i] = t
	}
	return strings.Join(parts, " ")
}

// psFailure is a terminating PowerShell error: CLIXML on stderr, exit 1.
func psFailure(stderr io.Writer, entry *AuditEntry, message, category, errorID string) int {
	entry.Error = message
	// stderr is the command's output stream: a failed write means the client has gone.
	_, _ = io.WriteString(stderr, clixmlError(message, category, errorID))
	return contract.ExitFailure
}

func (h *Host) runPowerShell(ctx context.Context, cmd wsman.Command, args []string, stdout, stderr io.Writer, entry *AuditEntry) int {
	want := contract.CommandArgs()
	if len(args) != len(want) {
		return psFailure(stderr, entry, "winsim does not model this PowerShell command line: it runs only "+contract.Shell+" "+strings.Join(want[:5], " ")+" <the mssqlifi bootstrap> (contract.CommandArgs)",
			"NotImplemented: (:) [], RuntimeException", "WinsimUnmodelledCommand")
	}
	var bootstrap string
	for i := range want {
		if i == len(want)-1 {
			dec, err := contract.DecodeCommand(args[i])
			if err != nil {
				// powershell.exe's own message for an undecodable -EncodedCommand.
				return psFailure(stderr, entry, "Cannot process the command because the value specified with -EncodedCommand is not properly encoded. The value must be Base64 encoded.",
					"InvalidArgument: (:) [], ParameterBindingException", "EncodedCommandNotBase64")
			}
			if dec != contract.Bootstrap() && dec != unframedBootstrap {
				return psFailure(stderr, entry, "winsim does not model this script: the -EncodedCommand is not the mssqlifi bootstrap of this build (contract.Bootstrap); the simulator does not interpret PowerShell",
					"NotImplemented: (:) [], RuntimeException", "WinsimUnmodelledScript")
			}
			bootstrap = dec
			continue
		}
		if !strings.EqualFold(args[i], want[i]) {
			return psFailure(stderr, entry, fmt.Sprintf("winsim does not model this PowerShell command line: argument %d is %q where the provider sends %q", i+1, args[i], want[i]),
				"NotImplemented: (:) [], RuntimeException", "WinsimUnmodelledCommand")
		}
	}
	h.chargeProcessStart(ctx)
	if mode := h.LanguageMode(); mode != LanguageFull {
		return constrainedLanguage(mode, bootstrap, stdout, stderr, entry)
	}
	var op contract.Operation
	var raw json.RawMessage
	if bootstrap == unframedBootstrap {
		var code int
		var ok bool
		if op, raw, code, ok = h.readUnframed(ctx, cmd, stderr, entry); !ok {
			return code
		}
	} else {
		var code int
		var ok bool
		if op, raw, code, ok = h.readFramed(ctx, cmd, stderr, entry); !ok {
			return code
		}
	}
	entry.Operation = string(op)
	entry.Params = raw
	h.chargeScript(ctx, op)
	params := contract.Params(op)
	if err := json.Unmarshal(raw, params); err != nil {
		return h.scriptError(stdout, entry, contract.ExitInvalidParams, "invalid_parameters", fmt.Sprintf("the %s parameters do not have the contract's shape: %v", op, err))
	}
	user, known := h.findUser("", cmd.User)
	admin := known && user.admin
	switch p := params.(type) {
	case *contract.ReadInstanceParams:
		return h.opReadInstance(p, admin, stdout, stderr, entry)
	case *contract.ReadHostParams:
		return h.opReadHost(p, admin, stdout, stderr, entry)
	case *contract.SetRightParams:
		return h.opSetRight(p, admin, stdout, entry)
	case *contract.RestartInstanceParams:
		return h.opRestartInstance(ctx, p, admin, cmd.Stdin, stdout, stderr, entry)
	case *contract.RestartStatusParams:
		return h.opRestartStatus(ctx, p, admin, stdout, stderr, entry)
	case *contract.ReadClusterParams:
		return h.opReadCluster(p, admin, stdout, entry)
	case *contract.ClusterMoveParams:
		return h.opClusterMove(ctx, p, admin, stdout, entry)
	case *contract.ClusterRestartParams:
		return h.opClusterRestart(ctx, p, admin, stdout, entry)
	}
	return psFailure(stderr, entry, "winsim does not model operation "+string(op), "NotImplemented: (:) [], RuntimeException", "WinsimUnmodelledOperation")
}

// constrainedLanguage is the bootstrap in a language mode other than FullLanguage:
// its first lines print the ScriptError as one string (PowerShell's output adds
// CRLF) and exit ExitRefused, before stdin is read. 0.1.0's bootstrap began with a
// method call on [Console], which ConstrainedLanguage refuses.
func constrainedLanguage(mode, bootstrap string, stdout, stderr io.Writer, entry *AuditEntry) int {
	if bootstrap == unframedBootstrap {
		return psFailure(stderr, entry, "Cannot invoke method. Method invocation is supported only on core types in this language mode.",
			"InvalidOperation: (:) [], RuntimeException", "MethodInvocationNotSupportedInConstrainedLanguage")
	}
	msg := contract.ConstrainedLanguageMessage(mode)
	entry.Error = contract.CodeConstrainedLanguage + ": " + msg
	fmt.Fprintf(stdout, "{\"error\":\"%s\",\"message\":\"%s\"}\r\n", contract.CodeConstrainedLanguage, msg)
	return contract.ExitRefused
}

// readFramed reads stdin as the bootstrap does (contract.ReadInput): the parameters
// line, the line count, that many lines; never waiting for end-of-input. Its
// failures are the bootstrap's own.
func (h *Host) readFramed(ctx context.Context, cmd wsman.Command, stderr io.Writer, entry *AuditEntry) (contract.Operation, json.RawMessage, int, bool) {
	stdin, err := readContext(ctx, cmd.Stdin, contract.ReadInput)
	var ie *contract.InputError
	switch {
	case ctx.Err() != nil || errors.Is(err, errStopped):
		return "", nil, psFailure(stderr, entry, "The pipeline has been stopped.", "OperationStopped: (:) [], PipelineStoppedException", "PipelineStopped"), false
	case errors.As(err, &ie) && (ie.Stage == "params" || ie.Stage == "count" && ie.Missing):
		// ReadLine answered $null, and the bootstrap called .Trim() on it.
		return "", nil, psFailure(stderr, entry, "You cannot call a method on a null-valued expression.", "InvalidOperation: (:) [], RuntimeException", "InvokeMethodOnNull"), false
	case errors.As(err, &ie) && ie.Stage == "count":
		return "", nil, psFailure(stderr, entry, fmt.Sprintf("Cannot convert value %q to type \"System.Int32\". Error: \"Input string was not in a correct format.\"", ie.Value), "InvalidArgument: (:) [], RuntimeException", "InvalidCastFromStringToInteger"), false
	case errors.As(err, &ie):
		// The bootstrap's own throw.
		return "", nil, psFailure(stderr, entry, ie.Detail, "OperationStopped: (:) [], RuntimeException", ie.Detail), false
	case err != nil:
		return "", nil, psFailure(stderr, entry, "The pipeline has been stopped.", "OperationStopped: (:) [], PipelineStoppedException", "PipelineStopped"), false
	}
	text := strings.ReplaceAll(string(stdin), "\r\n", "\n")
	first, _, _ := strings.Cut(text, "\n")
	if _, err := base64.StdEncoding.DecodeString(strings.TrimSpace(first)); err != nil {
		return "", nil, psFailure(stderr, entry, "Exception calling \"FromBase64String\" with \"1\" argument(s): \"The input is not a valid Base-64 string as it contains a non-base 64 character, more than two padding characters, or an illegal character among the padding characters. \"",
			"NotSpecified: (:) [], MethodInvocationException", "FormatException"), false
	}
	return decodeOperation(contract.DecodeInput, stdin, stderr, entry)
}

// readUnframed models the bootstrap of 0.1.0 ([Console]::In.ReadToEnd()): it waits
// for end-of-input, which a console-mode stdin never delivers, so in console mode it
// waits until the client terminates the command.
func (h *Host) readUnframed(ctx context.Context, cmd wsman.Command, stderr io.Writer, entry *AuditEntry) (contract.Operation, json.RawMessage, int, bool) {
	stdin, err := readContext(ctx, cmd.Stdin, io.ReadAll)
	if err != nil {
		return "", nil, psFailure(stderr, entry, "The pipeline has been stopped.", "OperationStopped: (:) [], PipelineStoppedException", "PipelineStopped"), false
	}
	text := strings.ReplaceAll(string(stdin), "\r\n", "\n")
	nl := strings.IndexByte(text, '\n')
	if nl < 0 {
		return "", nil, psFailure(stderr, entry, "Exception calling \"Substring\" with \"2\" argument(s): \"Length cannot be less than zero.\r\nParameter name: length\"",
			"NotSpecified: (:) [], MethodInvocationException", "ArgumentOutOfRangeException"), false
	}
	return decodeOperation(contract.DecodeUnframedInput, stdin, stderr, entry)
}

func decodeOperation(decode func([]byte) (contract.Operation, json.RawMessage, error), stdin []byte, stderr io.Writer, entry *AuditEntry) (contract.Operation, json.RawMessage, int, bool) {
	op, raw, err := decode(stdin)
	if err != nil {
		if strings.Contains(err.Error(), "not JSON") {
			return "", nil, psFailure(stderr, entry, "ConvertFrom-Json : Invalid JSON primitive.",
				"NotSpecified: (:) [ConvertFrom-Json], ArgumentException", "System.ArgumentException,Microsoft.PowerShell.Commands.ConvertFromJsonCommand"), false
		}
		return "", nil, psFailure(stderr, entry, "winsim does not model this script: stdin does not carry one of the contract's operation scripts verbatim (was it altered, or built from another version of internal/contract?); the simulator does not interpret PowerShell",
			"NotImplemented: (:) [], RuntimeException", "WinsimUnmodelledScript"), false
	}
	return op, raw, 0, true
}

var errStopped = errors.New("the command was terminated")

// readContext runs read on r until it returns or ctx ends (the client terminated the
// command: the process is killed).
func readContext(ctx context.Context, r io.Reader, read func(io.Reader) ([]byte, error)) ([]byte, error) {
	if r == nil {
		r = strings.NewReader("")
	}
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := read(r)
		ch <- result{b, err}
	}()
	select {
	case res := <-ch:
		return res.b, res.err
	case <-ctx.Done():
		return nil, errStopped
	}
}

// readLineWithin reads the next line of r (without its line end) within d, as
// restart_common.ps1's Read-GoLine does: false at the end of r, past d, when ctx
// ends, or after 100 characters. A read left waiting past d is abandoned, as the
// script's is.
func readLineWithin(ctx context.Context, r io.Reader, d time.Duration) (string, bool) {
	if r == nil {
		return "", false
	}
	type result struct {
		line string
		ok   bool
	}
	ch := make(chan result, 1)
	go func() {
		var b []byte
		one := make([]byte, 1)
		for len(b) < 100 {
			n, err := r.Read(one)
			if n == 1 {
				if one[0] == '\n' {
					ch <- result{strings.TrimSuffix(string(b), "\r"), true}
					return
				}
				b = append(b, one[0])
				continue
			}
			if err != nil {
				break
			}
		}
		ch <- result{}
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case res := <-ch:
		return res.line, res.ok
	case <-t.C:
		return "", false
	case <-ctx.Done():
		return "", false
	}
}

func writeJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(fmt.Sprintf(`{"error":"internal","message":%q}`, err.Error()))
	}
	_, _ = w.Write(b) // the client is gone if this fails
}

func (h *Host) scriptError(stdout io.Writer, entry *AuditEntry, code int, name, message string) int {
	entry.Error = name + ": " + message
	writeJSON(stdout, contract.ScriptError{Error: name, Message: message})
	return code
}

// The LSA failures, worded as lsa.ps1's Failure() formats them.
const (
	lsaAccessDenied = "LsaOpenPolicy failed: Access is denied. (NTSTATUS 0xC0000022)"
	lsaNoPrivilege  = "LsaEnumerateAccountsWithUserRight failed: A specified privilege does not exist. (NTSTATUS 0xC0000060)"
)

// lsaTerminating is an LSA exception escaping read_instance: lsa.ps1 throws the
// Win32Exception itself, so PowerShell reports its message.
func lsaTerminating(stderr io.Writer, entry *AuditEntry, lsaMessage string) int {
	return psFailure(stderr, entry, lsaMessage, "OperationStopped: (:) [], Win32Exception", lsaMessage)
}

func (h *Host) checkInstanceParam(name string, stdout io.Writer, entry *AuditEntry) (int, bool) {
	if !contract.InstanceNameSyntaxValid(name) {
		return h.scriptError(stdout, entry, contract.ExitInvalidParams, "invalid_parameters",
			fmt.Sprintf("'%s' is not a SQL Server instance name (MSSQLSERVER, or 1-16 letters, digits, _ or $ starting with a letter or _).", name)), false
	}
	return 0, true
}

func (h *Host) checkRightParam(right string, stdout io.Writer, entry *AuditEntry) (int, bool) {
	if !rightNamePattern.MatchString(right) {
		return h.scriptError(stdout, entry, contract.ExitInvalidParams, "invalid_parameters",
			fmt.Sprintf("'%s' is not a user right name (Se...Privilege).", right)), false
	}
	return 0, true
}

// PowerShellVersion is what read_instance reports as $PSVersionTable.PSVersion:
// Windows PowerShell 5.1 as Windows Server 2022 ships it (every supported Windows
// Server has 5.1; the build number follows the OS build).
const PowerShellVersion = "5.1.20348.2849"

// executionPolicies is Get-ExecutionPolicy -List in the provider's process: the
// bootstrap's -ExecutionPolicy Bypass sets the Process scope; Windows Server's
// default for LocalMachine is RemoteSigned; MachinePolicy is the Group Policy the
// host is configured with (GroupPolicyExecutionPolicy, the one the guard's launch
// obeys), Undefined by default (about_Execution_Policies).
func (h *Host) executionPolicies() []contract.ExecutionPolicyScope {
	gpo, _ := canonicalExecutionPolicy(h.cfg.GroupPolicyExecutionPolicy)
	if gpo == "" {
		gpo = "Undefined"
	}
	return []contract.ExecutionPolicyScope{
		{Scope: "MachinePolicy", Policy: gpo}, {Scope: "UserPolicy", Policy: "Undefined"},
		{Scope: "Process", Policy: "Bypass"}, {Scope: "CurrentUser", Policy: "Undefined"}, {Scope: "LocalMachine", Policy: "RemoteSigned"},
	}
}

func (h *Host) opReadInstance(p *contract.ReadInstanceParams, admin bool, stdout, stderr io.Writer, entry *AuditEntry) int {
	if code, ok := h.checkInstanceParam(p.Instance, stdout, entry); !ok {
		return code
	}
	if code, ok := h.checkRightParam(p.Right, stdout, entry); !ok {
		return code
	}
	if _, found := h.Instance(p.Instance); !found {
		writeJSON(stdout, contract.ReadInstanceResult{ComputerName: h.computer, Found: false, InstalledInstances: h.installedNames(), PowerShellVersion: PowerShellVersion})
		return contract.ExitOK
	}
	if !admin {
		return lsaTerminating(stderr, entry, lsaAccessDenied)
	}
	right, ok := canonicalRight(p.Right)
	if !ok {
		return lsaTerminating(stderr, entry, lsaNoPrivilege)
	}
	writeJSON(stdout, h.instanceReport(p.Instance, right))
	return contract.ExitOK
}

// instanceReport is Get-InstanceReport (instance_report.ps1): the instance as
// read_instance reports it, and as set_right and restart_instance read it back. right
// is canonical.
func (h *Host) instanceReport(name, right string) contract.ReadInstanceResult {
	inst, found := h.Instance(name)
	installed := h.installedNames()
	h.mu.Lock()
	defer h.mu.Unlock()
	if !found || !slices.Contains(h.instances, inst) {
		// Not installed, or uninstalled since the lookup: answer as the registry now does.
		return contract.ReadInstanceResult{ComputerName: h.computer, Found: false, InstalledInstances: installed, PowerShellVersion: PowerShellVersion}
	}
	res := h.readInstanceLocked(inst, right)
	res.InstalledInstances = installed
	return res
}

func (h *Host) readInstanceLocked(inst *Instance, right string) contract.ReadInstanceResult {
	e := inst.engine
	res := contract.ReadInstanceResult{
		ComputerName:          h.computer,
		Found:                 true,
		Instance:              inst.name,
		InstanceID:            inst.id,
		Version:               inst.ver.String(),
		ServiceName:           e.name,
		ServiceState:          e.state,
		ProcessID:             e.pid,
		StartAccount:          e.account,
		StartAccountSID:       e.accountSID,
		ServiceSIDType:        e.sidType,
		TCPPort:               inst.port,
		StartupParameters:     inst.startupParameters(),
		Clustered:             inst.clustered,
		RightHolders:          sidPrincipals(h.rights[right]),
		AdministratorsMembers: h.principals(h.admins),
		GroupPolicy:           h.groupPolicyInfo(right),
		LockPages: &contract.RightRead{Right: contract.RightLockMemory, Holders: sidPrincipals(h.rights[contract.RightLockMemory]),
			GroupPolicy: h.groupPolicyInfo(contract.RightLockMemory)},
		ErrorLog:          inst.errorLogInfoLocked(),
		Dependents:        []contract.ServiceInfo{},
		PowerShellVersion: PowerShellVersion,
		ExecutionPolicies: h.executionPolicies(),
	}
	if e.pid != 0 {
		t := e.started.UTC()
		res.ProcessStartTime = &t
	}
	res.HADR = inst.hadrInfoLocked()
	deps := allDependents(e)
	for _, s := range h.services {
		if slices.Contains(deps, s) {
			res.Dependents = append(res.Dependents, contract.ServiceInfo{Name: s.name, State: s.state})
		}
	}
	return res
}

// opSetRight is set_right.ps1: one change (right, sid, grant), or each of changes
// in order, every right checked before anything changes; the first change that
// fails ends it (the ones before it made), its error naming its right and SID.
func (h *Host) opSetRight(p *contract.SetRightParams, admin bool, stdout io.Writer, entry *AuditEntry) int {
	changes := p.Changes
	if len(changes) == 0 {
		changes = []contract.RightChange{{Right: p.Right, SID: p.SID, Grant: p.Grant}}
		if p.Right == "" {
			// Only a change of the list reads a missing right as SeManageVolumePrivilege.
			return h.scriptError(stdout, entry, contract.ExitInvalidParams, "invalid_parameters", "'' is not a user right name (Se...Privilege).")
		}
	}
	if len(changes) > contract.MaxRestartChanges {
		return h.scriptError(stdout, entry, contract.ExitInvalidParams, "invalid_parameters", fmt.Sprintf("changes lists at most %d changes.", contract.MaxRestartChanges))
	}
	for _, c := range changes {
		if code, ok := h.checkRightParam(c.RightOf(), stdout, entry); !ok {
			return code
		}
		if !contract.IsManagedRight(c.RightOf()) {
			// set_right.ps1 refuses every other right itself (Test-ManagedRight).
			return h.scriptError(stdout, entry, contract.ExitInvalidParams, "invalid_parameters", notManagedRight("set_right", c.RightOf(), h.computer))
		}
	}
	if p.ReadBack != "" && !contract.InstanceNameSyntaxValid(p.ReadBack) {
		return h.scriptError(stdout, entry, contract.ExitInvalidParams, "invalid_parameters",
			fmt.Sprintf("read_back '%s' is not a SQL Server instance name.", p.ReadBack))
	}
	var res *contract.SetRightResult
	changed := false
	for _, c := range changes {
		r, code, ok := h.setUserRight(c.RightOf(), c.SID, c.Grant, admin, p.ReadBack, p.Agent, stdout, entry)
		if !ok {
			return code
		}
		if r.Changed {
			changed = true
		}
		if res != nil && r.EventLogWarning == "" {
			r.EventLogWarning = res.EventLogWarning // the script says the last write that failed ($EventLogNotes)
		}
		res = r
	}
	res.Changed = changed
	if p.ReadBack != "" {
		rb := h.instanceReport(p.ReadBack, contract.RightManageVolume)
		res.Instance = &rb
	}
	writeJSON(stdout, res)
	return contract.ExitOK
}

// notManagedRight is the scripts' refusal of a right outside contract.ManagedRights
// (set_right.ps1, restart_instance.ps1).
func notManagedRight(op, right, computer string) string {
	return fmt.Sprintf("%s changes only %s; '%s' is refused on %s.", op, strings.Join(contract.ManagedRights, " and "), right, computer)
}

// setUserRight is Set-UserRight (right_change.ps1): one change of a managed right's
// holders (right is one of contract.ManagedRights, checked by the caller). When it
// fails, the script error is written and ok is false.
// A change writes its entry to the event log (Write-ChangeEvent) for instance and
// agent, as entry's user, naming the right.
func (h *Host) setUserRight(right, sidText string, grant, admin bool, instance, agent string, stdout io.Writer, entry *AuditEntry) (res *contract.SetRightResult, code int, ok bool) {
	sid, err := ParseSID(sidText)
	if err != nil {
		return nil, h.scriptError(stdout, entry, contract.ExitInvalidParams, "invalid_parameters", fmt.Sprintf("'%s' is not a SID (S-1-...).", sidText)), false
	}
	if !admin {
		return nil, h.scriptError(stdout, entry, contract.ExitFailure, "lsa_error",
			fmt.Sprintf("Changing %s for %s on %s failed: %s", right, sid, h.computer, lsaAccessDenied)), false
	}
	h.registerEventSource() // Register-ChangeEventSource, before the change
	var changed bool
	if grant {
		changed, err = h.GrantRight(right, sid)
	} else {
		changed, err = h.RevokeRight(right, sid)
	}
	if err != nil {
		return nil, h.scriptError(stdout, entry, contract.ExitFailure, "lsa_error",
			fmt.Sprintf("Changing %s for %s on %s failed: %s", right, sid, h.computer, err.Error())), false
	}
	warning := ""
	if changed {
		change := "revoke"
		if grant {
			change = "grant"
		}
		warning = h.writeChangeEvent(change, right, instance, sid, entry.User, agent)
	}
	h.mu.Lock()
	holders := sidPrincipals(h.rights[right])
	h.mu.Unlock()
	return &contract.SetRightResult{Changed: changed, Holders: holders, EventLogWarning: warning}, contract.ExitOK, true
}

func (h *Host) opRestartInstance(ctx context.Context, p *contract.RestartInstanceParams, admin bool, stdin io.Reader, stdout, stderr io.Writer, entry *AuditEntry) int {
	if code, ok := h.checkInstanceParam(p.Instance, stdout, entry); !ok {
		return code
	}
	if msg := h.restartParamsProblem(p); msg != "" {
		return h.scriptError(stdout, entry, contract.ExitInvalidParams, "invalid_parameters", msg)
	}
	inst, found := h.Instance(p.Instance)
	if !found {
		names := h.installedNames()
		return h.scriptError(stdout, entry, contract.ExitNotFound, "not_found",
			fmt.Sprintf("SQL Server instance %s is not installed on %s (installed: %s)", p.Instance, h.computer, strings.Join(names, ", ")))
	}
	if inst.Clustered() {
		// design/windows-behaviour.md#failover-clusters: never stop a clustered SQL
		// Server through the SCM.
		return h.scriptError(stdout, entry, contract.ExitRefused, "clustered",
			fmt.Sprintf("instance %s is a failover cluster instance: restart it through the cluster (its SQL Server resource), not the service control manager", inst.name))
	}
	// The guard's file, then the host's restart lease (restart_job.go): a restart of
	// another instance in progress refuses this request before anything changes.
	lease, err := h.enterRestartLease(inst, p.RestartID)
	if err != nil {
		if _, refused := err.(*leaseRefusal); refused {
			return h.scriptError(stdout, entry, contract.ExitRefused, contract.CodeRestartInProgress, err.Error())
		}
		return h.scriptError(stdout, entry, contract.ExitFailure, contract.RestartFailed, err.Error())
	}
	defer lease.release()
	joined := lease.join != nil
	// The event source before anything it records (Register-ChangeEventSource): the
	// guard's start lies between it and the first write.
	if admin {
		h.registerEventSource()
	}
	timeout := time.Duration(p.TimeoutSeconds) * time.Second
	key := strings.ToUpper(inst.name)
	var j *restartJob
	if !joined && admin { // without administrator rights the script fails on its changes or its stop (below)
		// The marker in phase prepared and the guard, which waits for the go changing
		// nothing (restart_job.go, prepareRestart); then, gated, the prepared line and
		// the go line (contract/restart_gate.go): without it nothing is changed, and
		// the marker goes (Remove-PreparedRestart).
		goWait := timeout
		if p.AwaitGo {
			goWait = time.Duration(p.GoSeconds) * time.Second
		}
		if j, err = h.prepareRestart(ctx, inst, p.RestartID, goWait, lease); err != nil {
			return h.scriptError(stdout, entry, contract.ExitFailure, contract.RestartFailed, err.Error())
		}
		// However this script ends before its go (a change that failed, the go
		// refused), its process ends: the prepared marker is then no restart.
		defer h.endPreparedRunner(j)
		if p.AwaitGo {
			if code, ok := h.awaitGo(ctx, p, key, j, goWait, stdin, stdout, entry); !ok {
				return code
			}
		}
	}
	// The changes first (Set-UserRight): one that fails stops nothing (its go
	// never recorded, the guard ends having changed nothing).
	ch, code, ok := h.restartChanges(p, admin, stdout, entry)
	if !ok {
		return code
	}
	if !admin {
		return psFailure(stderr, entry, fmt.Sprintf("Service '%s (%s)' cannot be stopped due to the following error: Cannot open %s service on computer '.'.", inst.engine.display, inst.engine.name, inst.engine.name),
			"CloseError: (System.ServiceProcess.ServiceController:ServiceController) [Restart-Service], ServiceCommandException", "CouldNotStopService,Microsoft.PowerShell.Commands.RestartServiceCommand")
	}
	// The go (Set-RestartGo), then the restart in this script's process, watched by
	// the guard started before the go, which completes it should this process end
	// (restart_worker.ps1): the restart outlives the shell, so the simulator runs it
	// under the host's lifetime. The guard is a powershell.exe of its own, counted;
	// its start was waited for before the prepared line, off the restart's path.
	if joined {
		j = lease.join
	} else if err := h.goRestart(ctx, inst, j, timeout); err != nil {
		return h.restartNotStarted(p, ch, err, stdout, entry)
	}
	wait := timeout + 10*time.Second
	if joined && p.WaitSeconds > 0 {
		wait = time.Duration(p.WaitSeconds) * time.Second
	}
	if !joined {
		if w := h.writeChangeEvent("restart", "", inst.name, strings.Join(ch.sids, ","), entry.User, p.Agent); w != "" {
			ch.eventWarning = w
		}
	}
	if p.AwaitGo && !joined {
		h.reportEngineStarted(ctx, j, inst, p.RestartID, wait, stdout)
	}
	res := h.waitRestart(ctx, j, wait, !joined)
	if ctx.Err() != nil {
		return psFailure(io.Discard, entry, "The pipeline has been stopped.", "", "")
	}
	res.Joined = joined
	res.Changed = ch.changed
	res.EventLogWarning = ch.eventWarning
	if res.Error != "" {
		entry.Error = res.Error + ": " + res.Message
	}
	if p.ReadBack && res.Finished {
		rb := h.instanceReport(inst.name, contract.RightManageVolume)
		res.Instance = &rb
	}
	writeJSON(stdout, res)
	return contract.ExitOK
}

// restartParamsProblem is what restart_instance.ps1's parameter checks refuse in
// its parameters beyond the instance's name ("" when nothing).
func (h *Host) restartParamsProblem(p *contract.RestartInstanceParams) string {
	if p.TimeoutSeconds < 1 || p.TimeoutSeconds > contract.MaxRestartSeconds {
		return fmt.Sprintf("timeout_seconds %d is outside 1..86400", p.TimeoutSeconds)
	}
	if p.WaitSeconds < 0 || p.WaitSeconds > contract.MaxRestartSeconds {
		return fmt.Sprintf("wait_seconds %d is outside 0..86400", p.WaitSeconds)
	}
	if p.RestartID != "" && !restartIDPattern.MatchString(p.RestartID) {
		return "restart_id must be 32 lowercase hexadecimal digits."
	}
	if len(p.Changes) > contract.MaxRestartChanges {
		return fmt.Sprintf("changes lists at most %d changes.", contract.MaxRestartChanges)
	}
	for _, c := range p.Changes {
		if !contract.IsManagedRight(c.RightOf()) {
			return notManagedRight("restart_instance", c.Right, h.computer)
		}
	}
	if p.AwaitGo && p.RestartID == "" {
		return "await_go needs a restart_id (the go line names it)."
	}
	if p.AwaitGo && (p.GoSeconds < 1 || p.GoSeconds > contract.MaxGoSeconds) {
		return "go_seconds must be a whole number of seconds between 1 and 86400."
	}
	return ""
}

// awaitGo is the gate's prepared line and its wait for the provider's go line
// (contract/restart_gate.go): without the go, nothing is changed and the prepared
// marker goes (Remove-PreparedRestart). False with the script's exit code when the
// restart goes no further.
func (h *Host) awaitGo(ctx context.Context, p *contract.RestartInstanceParams, key string, j *restartJob, goWait time.Duration, stdin io.Reader, stdout io.Writer, entry *AuditEntry) (int, bool) {
	fmt.Fprintf(stdout, "%s%s %s\r\n", contract.ProgressPrefix, contract.ProgressPrepared, p.RestartID)
	line, ok := readLineWithin(ctx, stdin, goWait)
	if ctx.Err() != nil {
		// The shell deleted: the process ends, its marker left prepared (no restart).
		return psFailure(io.Discard, entry, "The pipeline has been stopped.", "", ""), false
	}
	if !ok || line != strings.TrimSuffix(contract.GoLine(p.RestartID), "\n") {
		h.removePrepared(key, j)
		return h.scriptError(stdout, entry, contract.ExitRefused, contract.CodeRestartNotStarted,
			fmt.Sprintf("The restart of %s on %s did not start: the provider's go line did not come within %d seconds. Nothing was changed or stopped; apply again.",
				p.Instance, h.computer, p.GoSeconds)), false
	}
	return 0, true
}

// restartChangeSet is what restart_instance's changes did before its restart.
type restartChangeSet struct {
	changed      bool
	eventWarning string
	sids         []string // every change's SID, for the restart's event
	made         []string // the changes made, as restart_instance.ps1 names them
}

// restartChanges makes restart_instance's changes (Set-UserRight), in order; false
// with the script's exit code at the first that fails.
func (h *Host) restartChanges(p *contract.RestartInstanceParams, admin bool, stdout io.Writer, entry *AuditEntry) (restartChangeSet, int, bool) {
	ch := restartChangeSet{sids: make([]string, 0, len(p.Changes))}
	for _, c := range p.Changes {
		r, code, ok := h.setUserRight(c.RightOf(), c.SID, c.Grant, admin, p.Instance, p.Agent, stdout, entry)
		if !ok {
			return ch, code, false
		}
		ch.changed = ch.changed || r.Changed
		if r.Changed && c.Grant {
			ch.made = append(ch.made, "granted "+c.RightOf()+" to "+c.SID)
		} else if r.Changed {
			ch.made = append(ch.made, "revoked "+c.RightOf()+" from "+c.SID)
		}
		ch.sids = append(ch.sids, c.SID)
		if r.EventLogWarning != "" {
			ch.eventWarning = r.EventLogWarning
		}
	}
	return ch, 0, true
}

// restartNotStarted answers a restart whose go was refused: exit 6 naming the
// changes when some were made (restart_instance.ps1), else a refusal.
func (h *Host) restartNotStarted(p *contract.RestartInstanceParams, ch restartChangeSet, err error, stdout io.Writer, entry *AuditEntry) int {
	if ch.changed {
		// The changes were made: exit 6, naming them (restart_instance.ps1).
		return h.scriptError(stdout, entry, contract.ExitChangedNotStarted, contract.CodeChangedNotRestarted,
			fmt.Sprintf("The restart of %s on %s did not start: %v. The right's holders were changed (%s), and nothing was stopped: "+
				"the change takes effect at the Engine's next start; apply again to restart it.", p.Instance, h.computer, err, strings.Join(ch.made, "; ")))
	}
	return h.scriptError(stdout, entry, contract.ExitRefused, contract.CodeRestartNotStarted,
		fmt.Sprintf("The restart of %s on %s did not start: %v. Nothing was stopped; apply again.", p.Instance, h.computer, err))
}

// reportEngineStarted is the gated restart's started line: restart_worker.ps1 says
// when the Engine runs again (phase dependents).
func (h *Host) reportEngineStarted(ctx context.Context, j *restartJob, inst *Instance, restartID string, wait time.Duration, stdout io.Writer) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	_ = h.waitFor(wctx, func() (bool, error) {
		return j.res.Finished || j.handedOver || j.res.Phase == contract.PhaseDependents, nil
	})
	cancel()
	h.mu.Lock()
	started := slices.Contains(j.res.Started, inst.engine.name) // the Engine runs again
	h.mu.Unlock()
	if started {
		fmt.Fprintf(stdout, "%s%s %s\r\n", contract.ProgressPrefix, contract.ProgressStarted, restartID)
	}
}

func (h *Host) opRestartStatus(ctx context.Context, p *contract.RestartStatusParams, admin bool, stdout, stderr io.Writer, entry *AuditEntry) int {
	if code, ok := h.checkInstanceParam(p.Instance, stdout, entry); !ok {
		return code
	}
	if p.WaitSeconds < 0 || p.WaitSeconds > 600 {
		return h.scriptError(stdout, entry, contract.ExitInvalidParams, "invalid_parameters",
			fmt.Sprintf("wait_seconds %d is outside 0..600", p.WaitSeconds))
	}
	inst, found := h.Instance(p.Instance)
	if !found {
		return h.scriptError(stdout, entry, contract.ExitNotFound, "not_found",
			fmt.Sprintf("SQL Server instance %s is not installed on %s.", p.Instance, h.computer))
	}
	if !admin {
		// HKLM\SOFTWARE\mssqlifi is readable by administrators only.
		return psFailure(stderr, entry, "Requested registry access is not allowed.",
			"PermissionDenied: (HKEY_LOCAL_MACHINE\\SOFTWARE\\mssqlifi\\Restart:String) [Get-Item], SecurityException", "System.Security.SecurityException,Microsoft.PowerShell.Commands.GetItemCommand")
	}
	h.mu.Lock()
	j := h.restarts[strings.ToUpper(inst.name)]
	none := j == nil || j.noRecordLocked() // prepared and not let go: nothing happened
	h.mu.Unlock()
	if none {
		writeJSON(stdout, contract.RestartInstanceResult{ServiceName: inst.engine.name, Stopped: []string{}, Started: []string{}})
		return contract.ExitOK
	}
	res := h.waitRestart(ctx, j, time.Duration(p.WaitSeconds)*time.Second, false)
	if ctx.Err() != nil {
		return psFailure(io.Discard, entry, "The pipeline has been stopped.", "", "")
	}
	writeJSON(stdout, res)
	return contract.ExitOK
}

// clixmlError renders an error record the way powershell.exe writes it to stderr when its
// output is redirected (design/windows-behaviour.md#running-powershell-over-winrm:
// only S="Error" records are errors).
func clixmlError(message, category, errorID string) string {
	var sb strings.Builder
	sb.WriteString("#< CLIXML\r\n<Objs Version=\"1.1.0.1\" xmlns=\"http://schemas.microsoft.com/powershell/2004/04\">")
	lines := strings.Split(strings.ReplaceAll(message, "\r\n", "\n"), "\n")
	if category != "" {
		lines = append(lines, "    + CategoryInfo          : "+category)
	}
	if errorID != "" {
		lines = append(lines, "    + FullyQualifiedErrorId : "+errorID)
	}
	lines = append(lines, " ")
	for _, l := range lines {
		sb.WriteString(`<S S="Error">`)
		sb.WriteString(clixmlEscape(l + "\r\n"))
		sb.WriteString(`</S>`)
	}
	sb.WriteString("</Objs>")
	return sb.String()
}

// clixmlEscape escapes text for a CLIXML string: XML entities, control characters
// as _xHHHH_, and an underscore that would read as such an escape as _x005F_.
func clixmlEscape(s string) string {
	var sb strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case r == '&':
			sb.WriteString("&amp;")
		case r == '<':
			sb.WriteString("&lt;")
		case r == '>':
			sb.WriteString("&gt;")
		case r == '_' && i+1 < len(rs) && (rs[i+1] == 'x' || rs[i+1] == 'X'):
			sb.WriteString("_x005F_")
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&sb, "_x%04X_", r)
		default:
			sb.WriteRune(r)
		}
	}
	return sb.String()
}
