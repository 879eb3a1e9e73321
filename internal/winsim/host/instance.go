package host

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tsql"
)

// Instance is one SQL Server instance of a host. Its mutable state is guarded by
// the host's mutex.
type Instance struct {
	h          *Host
	cfg        InstanceConfig
	name       string // MSSQLSERVER or the upper-cased instance name
	id         string // MSSQL16.MSSQLSERVER
	ver        version
	level      string
	edition    string
	engine     *service
	agent      *service // nil without Agent
	traceFlags []int
	// sql is the instance's T-SQL engine (its databases, its sessions' locks),
	// which sees the instance through sqlSide (sqlside.go).
	sql  *tsql.Server
	hadr bool                     // Always On enabled (SERVERPROPERTY('IsHadrEnabled'))
	ag   *AvailabilityGroupConfig // the replica's group and role; nil when not a replica
	// The registry's MSSQLServer\HADR key: found, HADR_Enabled (nil: no value) and
	// its last write; the Engine reads it at each start (hadr.go).
	hadrKey     bool
	hadrValue   *int
	hadrWritten time.Time
	syncedAt    time.Time // a secondary is catching up until then after its start
	backups     []string  // BACKUP / RESTORE commands running (sys.dm_exec_requests)
	// clustered: a failover cluster instance (the instance's Cluster registry key is
	// set); virtualName is its role's network name, what SERVERPROPERTY('MachineName')
	// and @@SERVERNAME report on every node (wsfc/cluster.go).
	clustered   bool
	virtualName atomic.Value // string; read without h.mu (ServerName)

	port       int
	proc       *Process // the running Engine process; nil when stopped
	ready      bool     // accepting SQL connections
	readyTimer *time.Timer
	// maxMemoryMB is max server memory (MB), value and value_in_use alike
	// (max_server_memory_mb, SetMaxServerMemory).
	maxMemoryMB int32
	errorlog    []string   // current ERRORLOG, line by line
	archives    [][]string // ERRORLOG.1, ERRORLOG.2, ... (six kept, as SQL Server does by default)

	hookMu    sync.Mutex // serialises listener hook calls
	open      func() error
	close     func()
	listening bool
}

// Process is what a running Engine captured when it started.
type Process struct {
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// TokenSIDs are the SIDs of the process token
	// (design/windows-behaviour.md#the-restart-rule: rights are read into the token
	// when the process starts).
	TokenSIDs []string `json:"token_sids"`
	// ManageVolume: the token holds SeManageVolumePrivilege.
	ManageVolume bool `json:"manage_volume_privilege"`
	// LockMemory: the token holds SeLockMemoryPrivilege (Lock Pages in Memory).
	LockMemory bool `json:"lock_memory_privilege"`
	// MemoryModel is the memory manager's model for this process, as
	// sys.dm_os_sys_info.sql_memory_model_desc and the error log report it
	// (contract.MemoryModel*; memoryModel).
	MemoryModel string `json:"memory_model"`
	// TraceFlags are the -T startup flags the process runs with.
	TraceFlags []int `json:"trace_flags"`
	// IFI is what the DMV and the error log report: the privilege, and trace flag 1806
	// off (design/windows-behaviour.md#when-ifi-never-applies: 1806 disables IFI).
	IFI bool `json:"instant_file_initialization"`
	// Connections counts the login attempts since the process started, successful
	// or not, as SQL Server's @@CONNECTIONS does.
	Connections int64 `json:"connections"`
	// ProgramNames are the distinct application names (LOGIN7 AppName, program_name
	// in sys.dm_exec_sessions) of those logins, in order of first appearance.
	ProgramNames []string `json:"program_names"`
}

const maxArchivedLogs = 6

func (h *Host) newInstance(ic InstanceConfig) (*Instance, error) {
	name := strings.ToUpper(strings.TrimSpace(ic.Name))
	vs := ic.Version
	if vs == "" {
		vs = DefaultVersion
	}
	ver, err := parseVersion(vs)
	if err != nil {
		return nil, fmt.Errorf("instance %s: %w", ic.Name, err)
	}
	inst := &Instance{
		h: h, cfg: ic, name: name, ver: ver,
		level:       orDefault(ic.ProductLevel, ver.productLevel()),
		edition:     orDefault(ic.Edition, DefaultEdition),
		traceFlags:  slices.Clone(ic.StartupTraceFlags),
		port:        ic.SQLPort,
		hadr:        ic.HADR(),
		clustered:   ic.Clustered,
		maxMemoryMB: contract.DefaultMaxServerMemoryMB,
	}
	if ic.MaxServerMemoryMB != nil {
		inst.maxMemoryMB = int32(*ic.MaxServerMemoryMB) // validated: 128..2147483647
	}
	inst.sql = tsql.New(sqlSide{inst}, tsql.Config{Logins: ic.Logins, TDEDatabases: ic.TDEDatabases,
		ZeroMBPerSecond: ic.ZeroMBPerSecond, IFIAllocMS: ic.IFIAllocMS})
	if ver.Major >= 11 {
		v := 0
		if inst.hadr {
			v = 1
		}
		inst.hadrKey, inst.hadrValue, inst.hadrWritten = true, &v, hadrBuildTime(h.now())
	}
	if ic.AvailabilityGroup != nil {
		ag := *ic.AvailabilityGroup
		ag.Role = strings.ToLower(ag.Role)
		inst.ag = &ag
	}
	// Registry instance id: MSSQL<major>.<NAME>; 2008 R2 is MSSQL10_50.
	major := strconv.Itoa(ver.Major)
	if ver.Major == 10 && ver.Minor == 50 {
		major = "10_50"
	}
	inst.id = "MSSQL" + major + "." + name
	sidType := 1 // SQL Server Setup sets UNRESTRICTED (design/windows-behaviour.md#who-holds-the-right)
	if ic.ServiceSIDType != nil {
		sidType = *ic.ServiceSIDType
	}
	engName := contract.EngineServiceName(name)
	if _, dup := h.svcByName[strings.ToUpper(engName)]; dup {
		return nil, fmt.Errorf("instance %s: service %s is configured twice", ic.Name, engName)
	}
	inst.engine = &service{
		name: engName, display: "SQL Server (" + name + ")",
		account: orDefault(ic.ServiceAccount, `NT Service\`+engName), sidType: sidType,
		startDur: ms(ic.StartMS), stopDur: ms(ic.StopMS), failStart: ic.FailStart,
		initiallyStopped: ic.Stopped, inst: inst,
	}
	h.addService(inst.engine)
	if ic.HasAgent() {
		agName := contract.AgentServiceName(name)
		inst.agent = &service{
			name: agName, display: "SQL Server Agent (" + name + ")",
			account: `NT Service\` + agName, sidType: 1,
			startDur: ms(ic.StartMS), stopDur: ms(ic.StopMS),
			dependsOnNames: []string{engName}, initiallyStopped: ic.Stopped,
		}
		h.addService(inst.agent)
	}
	return inst, nil
}

// Name is MSSQLSERVER for the default instance, else the instance name (upper case).
func (i *Instance) Name() string { return i.name }

// ServiceName is the Engine's service name (MSSQLSERVER or MSSQL$NAME).
func (i *Instance) ServiceName() string { return i.engine.name }

// AgentServiceName is the Agent's service name, "" when the instance has no Agent.
func (i *Instance) AgentServiceName() string {
	if i.agent == nil {
		return ""
	}
	return i.agent.name
}

// Host returns the host the instance belongs to.
func (i *Instance) Host() *Host { return i.h }

// SetTCPPort records the TCP port the instance's listener really uses (when the
// configuration said 0). read_instance and the error log report it.
func (i *Instance) SetTCPPort(port int) {
	i.h.mu.Lock()
	i.port = port
	i.h.mu.Unlock()
}

// TCPPort returns the instance's TCP port (0 when unknown).
func (i *Instance) TCPPort() int {
	i.h.mu.Lock()
	defer i.h.mu.Unlock()
	return i.port
}

// Clustered reports whether the instance is a failover cluster instance.
func (i *Instance) Clustered() bool {
	i.h.mu.Lock()
	defer i.h.mu.Unlock()
	return i.clustered
}

// Running reports whether the Engine's service is Running.
func (i *Instance) Running() bool {
	i.h.mu.Lock()
	defer i.h.mu.Unlock()
	return i.engine.state == contract.StateRunning
}

// Ready reports whether the Engine accepts SQL connections (Running and ready_ms
// passed).
// countConnection records a login attempt on the running process (@@CONNECTIONS)
// and the application name it sent.
func (i *Instance) countConnection(appName string) {
	i.h.mu.Lock()
	defer i.h.mu.Unlock()
	if i.proc != nil {
		i.proc.Connections++
		if !slices.Contains(i.proc.ProgramNames, appName) && len(i.proc.ProgramNames) < maxProgramNames {
			i.proc.ProgramNames = append(i.proc.ProgramNames, appName)
		}
	}
}

// maxProgramNames bounds the application names a process remembers.
const maxProgramNames = 32

func (i *Instance) Ready() bool {
	i.h.mu.Lock()
	defer i.h.mu.Unlock()
	return i.ready
}

// Process returns a copy of the running Engine's process, or nil when it is not
// running.
func (i *Instance) Process() *Process {
	i.h.mu.Lock()
	defer i.h.mu.Unlock()
	if i.proc == nil {
		return nil
	}
	p := *i.proc
	p.TokenSIDs = slices.Clone(p.TokenSIDs)
	p.TraceFlags = slices.Clone(p.TraceFlags)
	return &p
}

// ErrorLog returns the current error log (ERRORLOG) as text, CRLF line ends.
func (i *Instance) ErrorLog() string {
	i.h.mu.Lock()
	defer i.h.mu.Unlock()
	return joinLog(i.errorlog)
}

// ArchivedErrorLog returns ERRORLOG.n (n from 1, the previous start's log), and
// false when there is none.
func (i *Instance) ArchivedErrorLog(n int) (string, bool) {
	i.h.mu.Lock()
	defer i.h.mu.Unlock()
	if n < 1 || n > len(i.archives) {
		return "", false
	}
	return joinLog(i.archives[n-1]), true
}

func joinLog(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\r\n") + "\r\n"
}

// SetSQLListener installs the hooks that open and close the instance's SQL
// listener. The model calls open when the Engine becomes ready and close when it
// stops, so a stopped Engine refuses connections. SetSQLListener itself calls one
// of them at once to match the Engine's current state.
func (i *Instance) SetSQLListener(open func() error, close func()) {
	i.hookMu.Lock()
	i.open, i.close = open, close
	i.listening = false
	ready := i.Ready()
	if ready && open != nil {
		if err := open(); err != nil {
			i.h.logf("instance %s: opening the SQL listener: %v", i.name, err)
		} else {
			i.listening = true
		}
	} else if !ready && close != nil {
		close()
	}
	i.hookMu.Unlock()
}

// syncListener brings the listener to the Engine's state. Called without h.mu.
func (i *Instance) syncListener() {
	i.hookMu.Lock()
	defer i.hookMu.Unlock()
	ready := i.Ready()
	switch {
	case ready && !i.listening && i.open != nil:
		if err := i.open(); err != nil {
			i.h.logf("instance %s: opening the SQL listener: %v", i.name, err)
			return
		}
		i.listening = true
	case !ready && i.listening:
		if i.close != nil {
			i.close()
		}
		i.listening = false
	}
}

func (h *Host) syncListeners() {
	for _, i := range h.Instances() {
		i.syncListener()
	}
}

// isAdministratorsMember: the SID is a direct member of BUILTIN\Administrators.
func (h *Host) isAdministratorsMember(sid string) bool {
	return slices.Contains(h.admins, sid)
}

// groupClosure lists the groups ("groups" in the configuration) sid is in, directly
// or through other groups, as a logon token carries them.
func (h *Host) groupClosure(sid string) []string {
	var out []string
	queue := slices.Clone(h.groupsOf[sid])
	for len(queue) > 0 {
		g := queue[0]
		queue = queue[1:]
		if slices.Contains(out, g) {
			continue
		}
		out = append(out, g)
		queue = append(queue, h.groupsOf[g]...)
	}
	return out
}

// captureTokenLocked builds the token of a process started under the service's
// account, the way the SCM logs a service on: the account's SID, the per-service SID
// when the SID type is unrestricted or restricted (design/windows-behaviour.md#who-holds-the-right), the configured groups
// the account is in (transitively), Administrators when the account or one of those
// groups is a member (LocalSystem always is), and the groups every service logon
// gets. Which rights the token holds is tokenHoldsLocked's.
func (h *Host) captureTokenLocked(s *service) (sids []string) {
	localSystem := s.accountSID == winsid.LocalSystem
	if s.accountSID != "" {
		sids = append(sids, s.accountSID)
	}
	if s.sidType == 1 || s.sidType == 3 {
		// The service SID, and NT SERVICE\ALL SERVICES with it (FIDELITY.md).
		sids = appendUnique(appendUnique(sids, serviceSIDOf(s)), winsid.AllServices)
	}
	admin := localSystem || (s.accountSID != "" && h.isAdministratorsMember(s.accountSID))
	if s.accountSID != "" {
		for _, g := range h.groupClosure(s.accountSID) {
			sids = appendUnique(sids, g)
			admin = admin || h.isAdministratorsMember(g)
		}
	}
	if admin {
		sids = append(sids, winsid.Administrators)
	}
	for _, g := range []string{winsid.Everyone, winsid.AuthenticatedUsers, winsid.ServiceLogon, winsid.Users} {
		sids = appendUnique(sids, g)
	}
	return sids
}

// tokenHoldsLocked says whether a token of these SIDs holds the user right (a
// canonical name) at this moment: one of its SIDs is a direct holder, or it is
// LocalSystem's, whose token has every privilege the LocalSystem account page lists
// (SE_MANAGE_VOLUME_NAME and SE_LOCK_MEMORY_NAME among them;
// design/windows-behaviour.md#who-holds-the-right).
func (h *Host) tokenHoldsLocked(sids []string, right string) bool {
	if slices.Contains(sids, winsid.LocalSystem) {
		return true
	}
	holders := h.rights[right]
	for _, sid := range sids {
		if slices.Contains(holders, sid) {
			return true
		}
	}
	return false
}

// memoryModel is the memory model an Engine of this instance starts with, its
// token holding SeLockMemoryPrivilege or not (FIDELITY.md, "Lock Pages in Memory"):
// locked pages need the right and an edition that uses them. KB 2659143: SQL Server
// 2012 and later use locked pages with the right on Enterprise, Standard,
// Developer and Business Intelligence editions, never on Express; before 2012
// (KB 970070) Standard needs trace flag 845 as well. Large pages (trace flag 834)
// are not modelled: the simulator never reports LARGE_PAGES.
func (i *Instance) memoryModel(lockMemory bool) string {
	if !lockMemory {
		return contract.MemoryModelConventional
	}
	ed := strings.ToLower(i.edition)
	switch {
	case strings.HasPrefix(ed, "enterprise"), strings.HasPrefix(ed, "developer"), strings.HasPrefix(ed, "business intelligence"):
		return contract.MemoryModelLockPages
	case strings.HasPrefix(ed, "standard"):
		if i.ver.Major >= 11 || slices.Contains(i.traceFlags, 845) {
			return contract.MemoryModelLockPages
		}
	}
	return contract.MemoryModelConventional
}

// processStartedLocked: the Engine's process was created. It captures its token,
// archives the previous error log and writes the startup lines.
func (i *Instance) processStartedLocked() {
	h := i.h
	sids := h.captureTokenLocked(i.engine)
	mv := h.tokenHoldsLocked(sids, contract.RightManageVolume)
	lm := h.tokenHoldsLocked(sids, contract.RightLockMemory)
	tf := slices.Clone(i.traceFlags)
	i.hadrAtStartLocked()
	i.proc = &Process{
		PID: i.engine.pid, Started: i.engine.started, TokenSIDs: sids, ManageVolume: mv,
		LockMemory: lm, MemoryModel: i.memoryModel(lm),
		TraceFlags: tf, IFI: mv && !slices.Contains(tf, 1806), ProgramNames: []string{},
	}
	i.ready = false
	if len(i.errorlog) > 0 {
		i.archives = append([][]string{i.errorlog}, i.archives...)
		if len(i.archives) > maxArchivedLogs {
			i.archives = i.archives[:maxArchivedLogs]
		}
	}
	i.errorlog = i.startupLog()
}

// engineRunningLocked: the service reached Running; SQL connections are accepted
// after ready_ms.
func (i *Instance) engineRunningLocked() {
	h := i.h
	if i.readyTimer != nil {
		i.readyTimer.Stop()
		i.readyTimer = nil
	}
	d := ms(i.cfg.ReadyMS)
	if d <= 0 || h.booting {
		i.becomeReadyLocked()
		return
	}
	gen := i.engine.gen
	i.readyTimer = time.AfterFunc(d, func() {
		h.mu.Lock()
		if h.closed || i.engine.gen != gen || i.engine.state != contract.StateRunning {
			h.mu.Unlock()
			return
		}
		i.becomeReadyLocked()
		h.notifyLocked()
		h.mu.Unlock()
		i.syncListener()
	})
}

func (i *Instance) becomeReadyLocked() {
	i.ready = true
	port := i.port
	if port == 0 {
		port = 1433
	}
	at := i.h.now()
	i.logLine(at, "spid30s", fmt.Sprintf("Server is listening on [ 'any' <ipv4> %d].", port))
	i.logLine(at, "spid30s", "SQL Server is now ready for client connections. This is an informational message; no user action is required.")
}

// engineStoppingLocked: Stop Pending; connections are refused from now on.
func (i *Instance) engineStoppingLocked() {
	i.ready = false
	if i.readyTimer != nil {
		i.readyTimer.Stop()
		i.readyTimer = nil
	}
	at := i.h.now()
	i.logLine(at, "spid30s", "SQL Server is terminating in response to a 'stop' request from Service Control Manager. This is an informational message only. No user action is required.")
	i.logLine(at, "spid30s", "SQL Server shutdown has been initiated")
}

// processEndedLocked: the process exited (stopped, or its start failed).
func (i *Instance) processEndedLocked(failed bool) {
	i.proc = nil
	i.ready = false
	i.backups = nil           // a stop ends them
	i.sql.EndSessionsLocked() // and every session, with its locks
	if failed {
		i.logLine(i.h.now(), "Server", "Error: 17058, Severity: 16, State: 1. SQL Server could not start (winsim: the instance is configured with fail_start).")
	}
}

func (i *Instance) logLine(at time.Time, source, text string) {
	i.errorlog = append(i.errorlog, i.logPrefix(at, source)+text)
}

// logPrefix is an error log line's timestamp (host local time, centiseconds) and
// source column, as SQL Server writes them.
func (i *Instance) logPrefix(at time.Time, source string) string {
	return at.In(i.h.loc).Format("2006-01-02 15:04:05.00") + " " + fmt.Sprintf("%-12s", source)
}

// programRoot is the instance's folder under Program Files.
func (i *Instance) programRoot() string {
	return `C:\Program Files\Microsoft SQL Server\` + i.id + `\MSSQL`
}

// startupParameters are the registry's SQLArg0..N: -d, -e, -l, then -T flags.
func (i *Instance) startupParameters() []string {
	root := i.programRoot()
	p := []string{
		`-d` + root + `\DATA\master.mdf`,
		`-e` + root + `\Log\ERRORLOG`,
		`-l` + root + `\DATA\mastlog.ldf`,
	}
	for _, tf := range i.traceFlags {
		p = append(p, "-T"+strconv.Itoa(tf))
	}
	return p
}

// errorLogPath is the -e startup parameter.
func (i *Instance) errorLogPath() string {
	for _, p := range i.startupParameters() {
		if rest, ok := strings.CutPrefix(p, "-e"); ok {
			return rest
		}
	}
	return ""
}

// ifiLineText is the startup message SQL Server writes
// (design/windows-behaviour.md#verifying-ifi-through-sql-server: 2012 SP4, 2014 SP2,
// 2016+).
func ifiLineText(enabled bool) string {
	state := "disabled"
	if enabled {
		state = "enabled"
	}
	return "Database Instant File Initialization: " + state + ". For security and performance considerations see the topic 'Database Instant File Initialization' in SQL Server Books Online. This is an informational message only. No user action is required."
}

// memoryLineText is the memory manager's startup line for the model
// (contract.MemoryLines), written from SQL Server 2012 (11.x); "" before, whose
// builds worded it otherwise ("Using locked pages for buffer pool."), which the
// simulator does not write (FIDELITY.md, "Lock Pages in Memory").
func memoryLineText(v version, model string) string {
	if v.Major < 11 {
		return ""
	}
	for text, m := range contract.MemoryLines {
		if m == model {
			return text
		}
	}
	return ""
}

// startupLog writes the first lines of a new error log.
func (i *Instance) startupLog() []string {
	h := i.h
	at := i.engine.started
	var lines []string
	add := func(source, text string) { lines = append(lines, i.logPrefix(at, source)+text) }
	cont := func(text string) { lines = append(lines, "\t"+text) }
	add("Server", fmt.Sprintf("%s (%s) - %s (X64) ", i.ver.productName(), i.level, i.ver))
	cont(fmt.Sprintf("%s on Windows Server 2022 Datacenter 10.0 <X64> (Build 20348: ) (Hypervisor)", i.edition))
	_, offset := at.In(h.loc).Zone()
	add("Server", fmt.Sprintf("UTC adjustment: %d:%02d", offset/3600, abs(offset%3600)/60))
	add("Server", "(c) Microsoft Corporation.")
	add("Server", "All rights reserved.")
	add("Server", fmt.Sprintf("Server process ID is %d.", i.engine.pid))
	add("Server", "System Manufacturer: 'winsim', System Model: 'simulated Windows host'.")
	add("Server", "Authentication mode is MIXED.")
	add("Server", fmt.Sprintf("Logging SQL Server messages in file '%s'.", i.errorLogPath()))
	add("Server", fmt.Sprintf("The service account is '%s'. This is an informational message; no user action is required.", i.engine.account))
	add("Server", "Registry startup parameters: ")
	for _, p := range i.startupParameters() {
		cont(" " + p[:2] + " " + p[2:])
	}
	add("Server", "Command Line Startup Parameters:")
	cont(fmt.Sprintf(` -s %q`, i.name)) // instance names have no quotes or backslashes
	add("Server", "SQL Server detected 1 sockets with 2 cores per socket and 2 logical processors per socket, 2 total logical processors; using 2 logical processors based on SQL Server licensing. This is an informational message; no user action is required.")
	if text := memoryLineText(i.ver, i.proc.MemoryModel); text != "" {
		add("Server", text)
	}
	for _, tf := range i.traceFlags {
		add("Server", fmt.Sprintf("DBCC TRACEON %d, server process ID (SPID) 0. This is an informational message only; no user action is required.", tf))
	}
	for n := 0; n < i.cfg.StartupNoiseLines; n++ {
		add("Server", fmt.Sprintf("Startup message %d of a noisy configuration. This is an informational message only; no user action is required.", n+1))
	}
	if i.ver.writesIFILogLine() {
		add("Server", ifiLineText(i.proc.IFI))
	}
	add("spid8s", "Starting up database 'master'.")
	add("spid8s", "Starting up database 'msdb'.")
	add("spid8s", "Starting up database 'model'.")
	add("spid8s", "Clearing tempdb database.")
	for _, db := range i.sql.Databases()[4:] {
		add("spid20s", fmt.Sprintf("Starting up database '%s'.", db.Name))
	}
	return lines
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// errorLogInfoLocked returns the IFI line and the memory manager line of the
// current error log.
func (i *Instance) errorLogInfoLocked() contract.ErrorLogInfo {
	info := contract.ErrorLogInfo{Path: i.errorLogPath()}
	// As instance_report.ps1: the startup section only (contract.ErrorLogScan*), until
	// both lines are found.
	bytes := 0
	for n, l := range i.errorlog {
		if n >= contract.ErrorLogScanMaxLines || bytes > contract.ErrorLogScanMaxBytes || (info.Found && info.MemoryLine != "") {
			break
		}
		bytes += len(l) + 2 // CRLF
		if info.MemoryLine == "" {
			for text, model := range contract.MemoryLines {
				if strings.Contains(l, text) {
					info.MemoryLine, info.MemoryModel = strings.TrimSpace(l), model
				}
			}
		}
		idx := strings.Index(l, "Database Instant File Initialization: ")
		if idx < 0 || info.Found {
			continue
		}
		info.Found = true
		info.Line = l
		enabled := strings.HasPrefix(l[idx+len("Database Instant File Initialization: "):], "enabled")
		info.Enabled = &enabled
	}
	return info
}

// WaitEngineReady waits until the instance's Engine accepts SQL connections, or its
// start failed (an error naming the Windows error), or ctx ends.
func (h *Host) WaitEngineReady(ctx context.Context, instance string) error {
	inst, ok := h.Instance(instance)
	if !ok {
		return fmt.Errorf("%w: %q on host %s", ErrNoSuchInstance, instance, h.cfg.Name)
	}
	s := inst.engine
	err := h.waitFor(ctx, func() (bool, error) {
		if inst.ready && s.state == contract.StateRunning {
			return true, nil
		}
		if s.failed && s.state == contract.StateStopped && s.pending == "" {
			return false, fmt.Errorf("service %s failed to start: %s", s.name, s.lastError)
		}
		return false, nil
	})
	if err != nil && ctx.Err() != nil {
		h.mu.Lock()
		now := s.state
		h.mu.Unlock()
		return fmt.Errorf("the Engine %s was not ready for connections (its service is %s): %w", s.name, now, err)
	}
	return err
}

// maxServerMemoryMB is max server memory (MB) in use (sys.configurations), as an
// int sql_variant.
func (i *Instance) maxServerMemoryMB() int32 { return i.maxMemoryMB }

// ErrBadMaxServerMemory: a max server memory sp_configure would refuse.
var ErrBadMaxServerMemory = fmt.Errorf("max server memory (MB) must be %d to %d", MinMaxServerMemoryMB, contract.DefaultMaxServerMemoryMB)

// SetMaxServerMemory is sp_configure 'max server memory (MB)' followed by
// RECONFIGURE: the option is dynamic, so value and value_in_use change at once,
// without a restart ("Server memory configuration options"). nil sets the default.
func (h *Host) SetMaxServerMemory(instance string, mb *int) error {
	v := contract.DefaultMaxServerMemoryMB
	if mb != nil {
		if *mb < MinMaxServerMemoryMB || *mb > contract.DefaultMaxServerMemoryMB {
			return fmt.Errorf("%w, not %d", ErrBadMaxServerMemory, *mb)
		}
		v = *mb
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	inst, ok := h.instanceLocked(instance)
	if !ok {
		return fmt.Errorf("%w: %q on host %s", ErrNoSuchInstance, instance, h.cfg.Name)
	}
	inst.maxMemoryMB = int32(v) // in range: checked above
	h.notifyLocked()
	return nil
}
