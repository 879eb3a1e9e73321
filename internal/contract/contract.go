// Package contract is the one definition of what the provider asks a Windows host and
// what it gets back. The provider's script runner and the host simulator both import
// it, so the two sides cannot drift apart silently.
//
// An operation travels as:
//
//	powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand <bootstrap>
//
// with stdin framed by EncodeInput: a line of base64(UTF-8 JSON of the parameters), a
// line with the script's line count, then the operation's script. The bootstrap
// (scripts/bootstrap.ps1) reads exactly that, never waiting for an end-of-input (a
// console-mode stdin on Windows never delivers one), decodes the parameters into
// $Params and runs the script. The script prints one JSON object (the result type)
// on stdout and exits 0; a failure it foresees prints a ScriptError as JSON on stdout
// and exits with one of the Exit* codes; anything else is a terminating PowerShell
// error (CLIXML on stderr, exit 1). User input therefore reaches a host only as data,
// never as script text.
package contract

import (
	"context"
	"time"
)

// Operation is the stable name of one host operation. Each script's first line is
// "# mssqlifi-operation: <name>".
type Operation string

const (
	OpReadInstance    Operation = "read_instance"
	OpSetRight        Operation = "set_right"
	OpRestartInstance Operation = "restart_instance"
	OpRestartStatus   Operation = "restart_status"
)

// Operations lists every operation, in a stable order.
var Operations = []Operation{OpReadInstance, OpReadHost, OpSetRight, OpRestartInstance, OpRestartStatus, OpReadCluster, OpClusterMove, OpClusterRestart}

// Host runs the operations on one host: a method an operation. internal/remote runs
// them over WinRM; internal/converge drives them; tests fake them.
type Host interface {
	ReadInstance(ctx context.Context, p ReadInstanceParams) (*ReadInstanceResult, error)
	SetRight(ctx context.Context, p SetRightParams) (*SetRightResult, error)
	RestartInstance(ctx context.Context, p RestartInstanceParams) (*RestartInstanceResult, error)
	RestartStatus(ctx context.Context, p RestartStatusParams) (*RestartInstanceResult, error)
	// The failover cluster operations (cluster.go).
	ReadCluster(ctx context.Context, p ReadClusterParams) (*ReadClusterResult, error)
	ClusterMove(ctx context.Context, p ClusterMoveParams) (*ClusterActionResult, error)
	ClusterRestart(ctx context.Context, p ClusterRestartParams) (*ClusterActionResult, error)
}

// RightManageVolume is the user right behind Instant File Initialization,
// "Perform volume maintenance tasks".
const RightManageVolume = "SeManageVolumePrivilege"

// RightLockMemory is the user right behind Lock Pages in Memory, "Lock pages in
// memory": with it the Engine allocates its buffer pool as locked pages, which
// Windows never pages out (KB 2659143; design/lock-pages.md).
const RightLockMemory = "SeLockMemoryPrivilege"

// ManagedRights are the rights the provider reads, grants and revokes, and the only
// ones set_right and restart_instance's changes accept (the scripts hold the same
// list).
var ManagedRights = []string{RightManageVolume, RightLockMemory}

// IsManagedRight reports whether right is one of ManagedRights (exact spelling).
func IsManagedRight(right string) bool {
	for _, r := range ManagedRights {
		if r == right {
			return true
		}
	}
	return false
}

// Exit codes of the scripts.
const (
	ExitOK            = 0
	ExitFailure       = 1 // unforeseen terminating error; CLIXML error records on stderr
	ExitInvalidParams = 2 // parameters failed the script's own validation
	ExitRefused       = 3 // the operation must not run here (for example a clustered instance)
	ExitTimeout       = 4 // a wait ran out (service did not reach the wanted state)
	ExitNotFound      = 5 // the instance or service does not exist
	// ExitChangedNotStarted: restart_instance made its changes of the right's
	// holders, then its restart did not start (CodeChangedNotRestarted): unlike
	// every other nonzero exit, something was changed.
	ExitChangedNotStarted = 6
)

// ScriptError is what a script prints on stdout when it fails in a way it foresaw.
type ScriptError struct {
	// Error is a machine-readable code: invalid_parameters, clustered, timeout,
	// not_found, lsa_error, CodeRestartInProgress, CodeConstrainedLanguage, or a
	// cluster operation's CodeNotClustered, CodeClusterError, CodeMoveFailed.
	Error   string `json:"error"`
	Message string `json:"message"` // a sentence for people
}

// CodeRestartInProgress is restart_instance's answer (exit ExitRefused) when a
// restart of another instance of the host is in progress: the host's restart lease
// (design/restart.md) lets one instance of a host restart at a time. Nothing
// was changed or stopped; the message names the instance, since when and what next.
const CodeRestartInProgress = "restart_in_progress"

// CodeChangedNotRestarted is restart_instance's answer (exit ExitChangedNotStarted)
// when it made its changes of the right's holders and then the go was refused
// (Set-RestartGo: the marker another request's, or the guard ended): nothing was
// stopped, the changes were made; the message names them.
const CodeChangedNotRestarted = "changed_not_restarted"

// CodeConstrainedLanguage is the bootstrap's answer (exit ExitRefused), before it
// reads anything, when Windows PowerShell does not run in FullLanguage mode: an
// AppLocker or App Control for Business policy that enforces script rules puts
// commands in ConstrainedLanguage mode, where the operations cannot run
// (design/host-knowledge.md). The bootstrap builds its message as
// ConstrainedLanguageMessage does; a test holds the two together.
const CodeConstrainedLanguage = "constrained_language"

// ConstrainedLanguageMessage is the bootstrap's message for a language mode.
func ConstrainedLanguageMessage(mode string) string {
	return "Windows PowerShell runs in " + mode + " mode for this user (an AppLocker or App Control policy enforces script rules), " +
		"so the provider scripts cannot run"
}

// Principal is a SID with the account name Windows translated it to, when it could.
// Work with SIDs end to end; names are for display only.
type Principal struct {
	SID  string `json:"sid"`
	Name string `json:"name,omitempty"`
}

// ReadInstanceParams asks for everything the provider needs about one SQL Server
// instance, in one call.
type ReadInstanceParams struct {
	Instance string `json:"instance"` // MSSQLSERVER or a named instance's name
	Right    string `json:"right"`    // the right whose holders to list; RightManageVolume
}

// Service states as Win32_Service.State spells them.
const (
	StateRunning      = "Running"
	StateStopped      = "Stopped"
	StateStartPending = "Start Pending"
	StateStopPending  = "Stop Pending"
	StatePaused       = "Paused"
)

// ReadInstanceResult describes one instance as the host sees it now.
type ReadInstanceResult struct {
	ComputerName string `json:"computer_name"`
	// Found is false when no such instance is installed; then only ComputerName and
	// InstalledInstances are set.
	Found              bool     `json:"found"`
	InstalledInstances []string `json:"installed_instances"`

	Instance   string `json:"instance"`
	InstanceID string `json:"instance_id"` // registry instance id, e.g. MSSQL16.MSSQLSERVER
	Version    string `json:"version"`     // Setup\PatchLevel (or Version), e.g. 16.0.4135.4

	ServiceName      string     `json:"service_name"`                 // MSSQLSERVER or MSSQL$NAME
	ServiceState     string     `json:"service_state"`                // one of the State* constants
	ProcessID        int        `json:"process_id"`                   // 0 when not running
	ProcessStartTime *time.Time `json:"process_start_time,omitempty"` // UTC; nil when not running
	StartAccount     string     `json:"start_account"`                // Win32_Service.StartName
	StartAccountSID  string     `json:"start_account_sid,omitempty"`  // "" when it could not be translated
	// ServiceSIDType is the service's SID type (registry ServiceSidType):
	// 0 none, 1 unrestricted, 3 restricted. A grant to the service SID only counts
	// when it is 1 or 3.
	ServiceSIDType int `json:"service_sid_type"`

	TCPPort           int      `json:"tcp_port"`           // IPAll TcpPort, else TcpDynamicPorts; 0 unknown
	StartupParameters []string `json:"startup_parameters"` // SQLArg0..N, e.g. -T1806
	Clustered         bool     `json:"clustered"`

	RightHolders          []Principal `json:"right_holders"`          // direct holders of Params.Right
	AdministratorsMembers []Principal `json:"administrators_members"` // direct members of S-1-5-32-544
	// AdministratorsDigest is never sent by a host: the engine sets it when it keeps
	// a read between operations (ifi.KeepForDecisions), in place of
	// AdministratorsMembers: the SHA-256 of the members' sorted, upper-cased SIDs.
	AdministratorsDigest string          `json:"administrators_digest,omitempty"`
	GroupPolicy          GroupPolicyInfo `json:"group_policy"`
	// LockPages is the same read for RightLockMemory (Lock Pages in Memory), made in
	// the same process whatever Params.Right names; nil from a host that does not
	// report it (then it is unknown, never "nobody holds it").
	LockPages  *RightRead    `json:"lock_pages,omitempty"`
	ErrorLog   ErrorLogInfo  `json:"errorlog"`
	Dependents []ServiceInfo `json:"dependents"` // services that depend on the Engine
	// HADR is what Windows tells of the instance's Always On availability groups
	// without SQL Server; nil from a host that does not report it.
	HADR *HADRInfo `json:"hadr,omitempty"`
	// PowerShellVersion is $PSVersionTable.PSVersion of the PowerShell that ran the
	// operation (5.1.x on Windows Server 2016 and later); "" from a host that does not
	// report it. The real-host suite's preflight shows it.
	PowerShellVersion string `json:"powershell_version,omitempty"`
	// ExecutionPolicies is Get-ExecutionPolicy -List as the operation's process saw
	// it, most binding scope first (MachinePolicy, UserPolicy, Process, CurrentUser,
	// LocalMachine); nil from a host that does not report it. A Group Policy scope
	// (MachinePolicy, UserPolicy) other than Undefined overrides -ExecutionPolicy
	// Bypass for script files (-File). The real-host suite's preflight shows it.
	ExecutionPolicies []ExecutionPolicyScope `json:"execution_policies,omitempty"`
}

// ExecutionPolicyScope is one row of Get-ExecutionPolicy -List.
type ExecutionPolicyScope struct {
	Scope  string `json:"scope"`
	Policy string `json:"policy"`
}

// HADRInfo is what the registry and the failover cluster say about an instance's
// availability groups (design/windows-behaviour.md, "Availability groups").
type HADRInfo struct {
	// KeyFound: the instance's MSSQLServer\HADR registry key exists.
	KeyFound bool `json:"key_found"`
	// Enabled is the key's HADR_Enabled value; nil when the value is absent.
	Enabled *int `json:"enabled,omitempty"`
	// KeyWritten is the key's last write time (RegQueryInfoKey), UTC; nil when the
	// key is absent or the time could not be read. SQL Server reads HADR_Enabled
	// when it starts: a value written before the Engine's start is the running one.
	KeyWritten *time.Time `json:"key_written,omitempty"`
	// ClusterKnown: root\MSCluster answered (the host is a failover cluster node).
	ClusterKnown bool `json:"cluster_known"`
	// OwnedGroups are the "SQL Server Availability Group" cluster resources whose
	// owner node is this computer and that Windows ties to this instance (their
	// dependency on its "SQL Server" resource, or it is the node's only instance):
	// it holds their primary replicas.
	OwnedGroups []string `json:"owned_groups"`
	// UntiedGroups are such resources this node owns that Windows does not tie to
	// any instance (a node with several instances: an availability group's own
	// cluster group holds no SQL Server resource); nil from an older host.
	UntiedGroups []string `json:"untied_groups,omitempty"`
	// Detail says what could not be read, for messages.
	Detail string `json:"detail,omitempty"`
}

// GroupPolicyInfo says whether domain Group Policy defines the right (RSoP, precedence 1).
type GroupPolicyInfo struct {
	Known   bool        `json:"known"`   // false: RSoP could not be read; Detail says why
	Defined bool        `json:"defined"` // a winning policy defines the right's holder list
	Holders []Principal `json:"holders"` // the policy's holder list when Defined
	Detail  string      `json:"detail,omitempty"`
	// RSoPLoggingOff names the registry value that turns RSoP logging off
	// (`...\RSoPLogging = 0`): RSoP then holds stale data, so Known is false. ""
	// when logging is on (the default) or was not looked at.
	RSoPLoggingOff string `json:"rsop_logging_off,omitempty"`
}

// RightRead is who holds one right on the host, directly and by Group Policy.
type RightRead struct {
	Right       string          `json:"right"`
	Holders     []Principal     `json:"holders"` // direct holders
	GroupPolicy GroupPolicyInfo `json:"group_policy"`
}

// ErrorLogInfo is the IFI line of the current error log (written at each start),
// and its memory manager line.
type ErrorLogInfo struct {
	Path    string `json:"path"`
	Found   bool   `json:"found"`             // the startup IFI line is in the current log
	Line    string `json:"line,omitempty"`    // the whole line, timestamp included
	Enabled *bool  `json:"enabled,omitempty"` // what the line says; nil when not found
	// MemoryLine is the startup line that says which memory model the Engine
	// started with ("Using locked pages in the memory manager.", "Using
	// conventional memory in the memory manager.", "Using large pages in the memory
	// manager."), timestamp included; "" when the current log has none.
	MemoryLine string `json:"memory_line,omitempty"`
	// MemoryModel is what MemoryLine says, as sys.dm_os_sys_info spells it: one of
	// the MemoryModel* constants; "" when not found.
	MemoryModel string `json:"memory_model,omitempty"`
}

// The Engine's memory models, as sys.dm_os_sys_info.sql_memory_model_desc spells
// them. LOCK_PAGES: locked pages (the right held at start); LARGE_PAGES: large
// pages (trace flag 834 with the right), locked as well; CONVENTIONAL: neither.
const (
	MemoryModelConventional = "CONVENTIONAL"
	MemoryModelLockPages    = "LOCK_PAGES"
	MemoryModelLargePages   = "LARGE_PAGES"
)

// MemoryLines are the error log's memory manager lines (the message after the
// timestamp and source), each with the model it reports.
var MemoryLines = map[string]string{
	"Using conventional memory in the memory manager.": MemoryModelConventional,
	"Using locked pages in the memory manager.":        MemoryModelLockPages,
	"Using large pages in the memory manager.":         MemoryModelLargePages,
}

// ServiceInfo is a service name with its state.
type ServiceInfo struct {
	Name  string `json:"name"`
	State string `json:"state"`
}

// SetRightParams grants or revokes one right for one SID through the LSA API, or
// makes Changes.
type SetRightParams struct {
	Right string `json:"right"`
	SID   string `json:"sid"`
	Grant bool   `json:"grant"` // true: LsaAddAccountRights; false: LsaRemoveAccountRights
	// Changes, when not empty, are the changes to make, in order, in this one
	// process (Right, SID and Grant are then not used): an apply that changes both
	// managed rights without a restart sends one set_right, as restart_instance makes
	// its changes. At most MaxRestartChanges; every right is checked before anything
	// changes. The first change that fails ends the request, its error naming its
	// right and SID; the changes before it were made.
	Changes []RightChange `json:"changes,omitempty"`
	// ReadBack names an instance to read (as read_instance does) after the change, in
	// the same process: the apply's read-back without a powershell.exe of its own.
	// It reads with Right RightManageVolume whichever right changed, as
	// restart_instance's read-back does (RightLockMemory's holders are in LockPages).
	// "" reads nothing.
	ReadBack string `json:"read_back,omitempty"`
	// Agent is the provider's User-Agent, which the change's entry in the host's
	// Application event log names (event_log.ps1).
	Agent string `json:"agent,omitempty"`
}

// SetRightResult tells whether anything changed and who holds the right now (with
// Changes: whether any of them changed anything, and who holds the last one's
// right).
type SetRightResult struct {
	Changed bool        `json:"changed"`
	Holders []Principal `json:"holders"`
	// Instance is the read-back SetRightParams.ReadBack asked for (nil otherwise).
	Instance *ReadInstanceResult `json:"instance,omitempty"`
	// EventLogWarning says why the change could not be written to the host's
	// Application event log (the change itself was made); "" when it was.
	EventLogWarning string `json:"event_log_warning,omitempty"`
}

// EventSource is the Application event log source of the entries each grant,
// revoke and restart writes on the host (event_log.ps1), registered on first use.
const EventSource = "mssqlifi"

// Event IDs of those entries, by change.
const (
	EventGrant   = 1001
	EventRevoke  = 1002
	EventRestart = 1003
)

// RightChange is one change of a managed right's holders that restart_instance
// makes before the restart, in its own process (set_right's work).
type RightChange struct {
	// Right is one of ManagedRights; "" is RightManageVolume (requests written
	// before Lock Pages in Memory).
	Right string `json:"right,omitempty"`
	SID   string `json:"sid"`
	Grant bool   `json:"grant"`
}

// RightOf is the change's right, "" read as RightManageVolume.
func (c RightChange) RightOf() string {
	if c.Right == "" {
		return RightManageVolume
	}
	return c.Right
}

// MaxRestartChanges is the most changes one restart_instance request makes
// (restart_instance.ps1 holds the same number).
const MaxRestartChanges = 8

// MaxRestartSeconds is the largest timeout_seconds restart_instance accepts (24 hours).
const MaxRestartSeconds = 86400

// RestartInstanceParams asks the host to restart the Engine and the dependents that
// were running, after changing the right's holders when Changes says so. The script
// runs the restart itself and, before it stops anything, starts a guard process
// outside the WinRM shell's job object that completes the restart should the
// script's process end half-way (the shell deleted, the connection lost), so the
// restart completes whatever happens to the connection (design/restart.md).
type RestartInstanceParams struct {
	Instance       string `json:"instance"`
	TimeoutSeconds int    `json:"timeout_seconds"` // the restart's own deadline, 1..MaxRestartSeconds
	// RestartID names this request (RestartIDPattern; "" lets the host make one). A
	// request whose id is the last restart's is answered with that restart's outcome
	// and never restarts again.
	RestartID string `json:"restart_id,omitempty"`
	// WaitSeconds is how long a request that joins a restart in progress waits for
	// its outcome before it answers with the phase reached (Finished false); 0: until
	// the restart ends. A restart the request runs itself is answered when it
	// finished, or when it reports an error (a stop past the deadline).
	WaitSeconds int `json:"wait_seconds,omitempty"`
	// Changes are made first, in order, as set_right makes them (only
	// ManagedRights); a change that fails ends the request before anything is
	// stopped. One restart makes every change effective (IFI and Lock Pages in
	// Memory together).
	// At most MaxRestartChanges.
	Changes []RightChange `json:"changes,omitempty"`
	// ReadBack: once the restart finished, read the instance as read_instance does, in
	// the same process, into RestartInstanceResult.Instance.
	ReadBack bool `json:"read_back,omitempty"`
	// Agent: as SetRightParams.Agent, for the changes' and the restart's entries.
	Agent string `json:"agent,omitempty"`
	// AwaitGo makes the request a gated restart (restart_gate.go): prepared, it waits
	// at most GoSeconds (1..MaxGoSeconds) for the go line before it changes
	// anything. RestartID is required with it.
	AwaitGo   bool `json:"await_go,omitempty"`
	GoSeconds int  `json:"go_seconds,omitempty"`
}

// RestartStatusParams asks for the outcome of an instance's last restart, waiting at
// most WaitSeconds for it to finish (0: answer at once).
type RestartStatusParams struct {
	Instance    string `json:"instance"`
	WaitSeconds int    `json:"wait_seconds,omitempty"`
}

// RestartIDPattern is the syntax of a restart id: 32 lowercase hex digits.
const RestartIDPattern = `^[0-9a-f]{32}$`

// Phases of a restart.
const (
	PhasePrepared   = "prepared"   // the marker and the guard are there, nothing changed: the runner has not recorded its go
	PhaseStopping   = "stopping"   // stopping the dependents and the Engine
	PhaseStarting   = "starting"   // starting the Engine (with retries)
	PhaseDependents = "dependents" // starting the dependents that were running
	PhaseDone       = "done"       // finished: Error says whether it succeeded
)

// Restart error codes (RestartInstanceResult.Error).
const (
	RestartStopTimeout = "stop_timeout" // the Engine did not stop in time; the host starts it once it has stopped
	RestartStartFailed = "start_failed" // the Engine stopped but would not start after the retries
	RestartTimeout     = "timeout"      // a service did not reach Running before the deadline
	RestartFailed      = "failed"       // anything else (Message says what)
)

// RestartStartAttempts is how often the restart tries to start a service that
// stopped after its start failed.
const RestartStartAttempts = 3

// RestartInstanceResult is the state of an instance's last restart, as restart_instance
// and restart_status report it.
type RestartInstanceResult struct {
	// Found is false from restart_status when the instance has no restart on record.
	Found     bool   `json:"found"`
	RestartID string `json:"restart_id"`
	// Joined: restart_instance found a restart of this instance in progress (or this
	// request's own, finished) and reported it instead of starting another.
	Joined      bool   `json:"joined"`
	Phase       string `json:"phase"` // Phase*
	Finished    bool   `json:"finished"`
	ServiceName string `json:"service_name"`
	// Error is "" when the restart succeeded (or is still running), else a Restart* code
	// with Message saying what happened and what to do.
	Error   string `json:"error,omitempty"`
	Message string `json:"message,omitempty"`
	// Win32ExitCode is the Engine's Win32_Service.ExitCode after a failed start (1067:
	// the process terminated unexpectedly), 0 otherwise.
	Win32ExitCode int `json:"win32_exit_code,omitempty"`
	// ErrorLogTail is the last lines of the SQL Server error log after a failed start.
	ErrorLogTail  []string `json:"errorlog_tail,omitempty"`
	StartAttempts int      `json:"start_attempts,omitempty"`

	Stopped          []string   `json:"stopped"` // in the order they stopped
	Started          []string   `json:"started"` // in the order they were started
	ServiceState     string     `json:"service_state"`
	ProcessStartTime *time.Time `json:"process_start_time,omitempty"`
	StartedAt        time.Time  `json:"started_at"`            // when the restart began (UTC)
	FinishedAt       *time.Time `json:"finished_at,omitempty"` // when the Engine was seen running (UTC)

	// Changed: one of RestartInstanceParams.Changes changed the right's holders.
	Changed bool `json:"changed,omitempty"`
	// Instance is the read-back RestartInstanceParams.ReadBack asked for, once the
	// restart finished (nil otherwise).
	Instance *ReadInstanceResult `json:"instance,omitempty"`
	// EventLogWarning: as SetRightResult.EventLogWarning, for the changes and the
	// restart of this request.
	EventLogWarning string `json:"event_log_warning,omitempty"`
}

// Params returns an empty parameter value of the operation, for decoding.
func Params(op Operation) any {
	switch op {
	case OpReadInstance:
		return &ReadInstanceParams{}
	case OpReadHost:
		return &ReadHostParams{}
	case OpSetRight:
		return &SetRightParams{}
	case OpRestartInstance:
		return &RestartInstanceParams{}
	case OpRestartStatus:
		return &RestartStatusParams{}
	case OpReadCluster:
		return &ReadClusterParams{}
	case OpClusterMove:
		return &ClusterMoveParams{}
	case OpClusterRestart:
		return &ClusterRestartParams{}
	}
	return nil
}

// The error-log scan of read_instance reads the startup section only: at most
// ErrorLogScanMaxLines lines and about ErrorLogScanMaxBytes bytes (instance_report.ps1
// holds the same numbers; scripts_test.go checks them), never a whole log.
const (
	ErrorLogScanMaxLines = 10000
	ErrorLogScanMaxBytes = 1 << 20
)

// UserAgent is how the provider names itself to hosts: the WinRM User-Agent header
// and the SQL connection's application name (program_name in sys.dm_exec_sessions).
// An empty version is "dev".
func UserAgent(version string) string {
	if version == "" {
		version = "dev"
	}
	return "terraform-provider-mssqlifi/" + version
}
