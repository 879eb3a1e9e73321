// Package host is the simulator's model of one Windows host with SQL Server
// instances: LSA user rights, the local Administrators group, domain Group Policy,
// the service control manager, the SQL Server Engine processes (with the token they
// captured when they started), their error logs and their SQL answers (each
// instance's T-SQL engine is internal/winsim/tsql, which sees the instance through
// sqlside.go). A host may be a node of a failover cluster (internal/winsim/wsfc,
// which sees it through wsfcside.go). It also runs the provider's host operations
// (internal/contract) as the WinRM endpoint's executor. Every behaviour follows
// design/windows-behaviour.md; comments cite its sections.
//
// The model is safe for concurrent use. Services change state on timers (the
// configured start/stop durations); use WaitServiceState to wait for a state.
package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/wsfc"
)

// Options are the model's settings that are not part of the host's configuration.
type Options struct {
	// Logf receives diagnostic messages (listener hooks failing, ...). Optional.
	Logf func(format string, args ...any)
	// Now is the clock for timestamps (process start times, error log lines, audit).
	// Durations always run on real timers. Optional; default time.Now.
	Now func() time.Time
	// Down counts this host's Engines while they are down (DownGauge); hosts may
	// share one. Optional.
	Down *DownGauge
	// AGs holds the availability replicas of the hosts that share it, so that a
	// primary sees its secondaries. Optional; default one of the host's own.
	AGs *AGDirectory
}

// Host is one simulated Windows host.
type Host struct {
	cfg      HostConfig
	opts     Options
	computer string
	loc      *time.Location

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every state change
	closed  bool
	booting bool // New is starting the initial services: transitions take no time

	accounts  map[string]string // lower-case account name → SID
	sidNames  map[string]string // SID → display name (accounts table, local users)
	users     []winrmUser
	admins    []string            // direct members of S-1-5-32-544, SIDs
	groupsOf  map[string][]string // member SID → SIDs of the groups it is directly in
	rights    map[string][]string // canonical right → direct holders (SIDs), in grant order
	rsop      bool
	langMode  string              // PowerShell's language mode for WinRM users' commands
	gpPolicy  map[string][]string // rights a GPO defines now (applied at the next refresh)
	gpApplied map[string][]string // rights as of the last refresh (what RSoP reports)
	// rsopLoggingOff: "Turn off Resultant Set of Policy logging" (RSoPLogging = 0):
	// a refresh applies the policy but RSoP keeps what it logged before (gpLogged).
	rsopLoggingOff bool
	gpLogged       map[string][]string
	gpRefresh      time.Time
	services       []*service
	svcByName      map[string]*service // upper-case name
	instances      []*Instance
	nextPID        int
	eventSeq       int64
	events         []serviceEvent
	audit          []AuditEntry
	// eventLog: the Application event log's entries of the provider's source, which
	// eventSource says is registered (eventlog.go).
	eventLog    []EventLogEntry
	eventSource bool
	// eventSourceAt is when the source was registered (eventlog.go).
	eventSourceAt time.Time
	auditLimit    int

	// life ends when the host is closed: processes of the host's own (the restart
	// workers, restart_job.go) run under it, not under a WinRM shell.
	life    context.Context
	endLife context.CancelFunc
	// restarts is each instance's last restart (restart_job.go), by upper-case name.
	restarts map[string]*restartJob
	// restartLock is restart.lock opened with FileShare.None (restart_common.ps1,
	// Enter-RestartLock): held from the look at the markers until a restart's own is
	// written, the host's restart lease's lock.
	restartLock sync.Mutex
	// guardGoLimit overrides how long a prepared restart's guard waits for its go
	// (SetGuardGoLimit); 0: as the scripts do.
	guardGoLimit time.Duration
	// preparedGuards counts the guards in their prepared phase (guardPrepared).
	preparedGuards int
	// The restart guard's world (guard.go): Defender's ASR rules (id → action), the
	// owner of %ProgramData%\mssqlifi ("" : it does not exist), the scheduled tasks
	// under \mssqlifi\.
	asrRules      map[string]int
	wmiError      string // SetWMIError: Win32_Process.Create's call throws this
	guardDirOwner string
	tasks         map[string]bool
	// clusterGuards: the last cluster guard's outcome per instance (cluster_ops.go).
	clusterGuards map[string]*ClusterGuardOutcome
	ags           *AGDirectory // the simulation's availability replicas (hadr.go)
	// cluster is the failover cluster the host is a node of (wsfc/cluster.go, wsfcside.go); nil when none.
	cluster *wsfc.Cluster

	cost  Cost
	stats stats
}

type winrmUser struct {
	name     string // as configured
	domain   string // "" for a local user
	user     string
	password string
	admin    bool
	sid      string
}

// serviceEvent is one state change, kept so restart_instance can report the order
// in which services stopped and started.
type serviceEvent struct {
	seq     int64
	at      time.Time
	service string
	state   string
}

// New builds the model of one host from its configuration. Services not marked
// "stopped" are Running (and Engines ready) when it returns, whatever their
// durations; their Engines captured their tokens from the initial rights.
func New(cfg HostConfig, opts Options) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	h := &Host{
		cfg:       cfg,
		opts:      opts,
		computer:  cfg.ComputerNameOrDefault(),
		cost:      cfg.Cost.Resolve(),
		loc:       time.FixedZone("host", cfg.UTCOffsetMinutes*60),
		changed:   make(chan struct{}),
		accounts:  map[string]string{},
		sidNames:  map[string]string{},
		rights:    map[string][]string{},
		rsop:      cfg.GroupPolicy.RSoP(),
		langMode:  LanguageFull,
		gpPolicy:  map[string][]string{},
		gpApplied: map[string][]string{},
		gpLogged:  map[string][]string{},
		// Logging off from the start: RSoP holds the policy processed before it was
		// turned off, modelled as none defining a right (gpLogged stays empty).
		rsopLoggingOff: cfg.GroupPolicy.RSoPLoggingOff,
		svcByName:      map[string]*service{},
		nextPID:        4100,
		auditLimit:     10000,
		restarts:       map[string]*restartJob{},
		ags:            opts.AGs,
	}
	if h.ags == nil {
		h.ags = &AGDirectory{}
	}
	h.life, h.endLife = context.WithCancel(context.Background())
	machineSID := derivedSID("machine:" + h.computer)
	domainSID := cfg.DomainSID
	if domainSID == "" && cfg.Domain != "" {
		domainSID = derivedSID("domain:" + cfg.Domain)
	}
	errs := h.addAccounts(cfg, machineSID)
	h.addWinRMUsers(cfg, machineSID, domainSID)
	errs = append(errs, h.installServices(cfg)...)
	errs = append(errs, h.addAdministrators(cfg, machineSID)...)
	errs = append(errs, h.applyLocalPolicies(cfg)...)
	errs = append(errs, h.addGroups(cfg)...)
	errs = append(errs, h.assignRights(cfg)...)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("host %s: %w", cfg.Name, err)
	}
	h.boot()
	return h, nil
}

// addAccounts adds the accounts the host can translate: its local Administrator
// (RID 500, on every host) and the configured ones.
func (h *Host) addAccounts(cfg HostConfig, machineSID string) []error {
	var errs []error
	h.addAccount(h.computer+`\Administrator`, machineSID+"-500")
	for name, sid := range cfg.Accounts {
		s, err := ParseSID(sid)
		if err != nil {
			errs = append(errs, fmt.Errorf("accounts[%q]: %w", name, err))
			continue
		}
		h.addAccount(name, s)
	}
	return errs
}

// addWinRMUsers adds the WinRM users, each with its account: a configured one, else
// a local account of the host or a domain account, with a SID derived for it.
func (h *Host) addWinRMUsers(cfg HostConfig, machineSID, domainSID string) {
	for i, u := range cfg.WinRM.Users {
		wu := winrmUser{name: u.Name, password: u.Password, admin: u.IsAdministrator()}
		if d, n, ok := strings.Cut(u.Name, `\`); ok {
			wu.domain, wu.user = d, n
		} else {
			wu.user = u.Name
		}
		full := h.computer + `\` + wu.user
		if wu.domain != "" {
			full = wu.domain + `\` + wu.user
		}
		if sid, ok := h.accounts[strings.ToLower(full)]; ok {
			wu.sid = sid
		} else {
			switch {
			case wu.domain == "" || strings.EqualFold(wu.domain, h.computer):
				if strings.EqualFold(wu.user, "Administrator") {
					wu.sid = machineSID + "-500"
				} else {
					wu.sid = fmt.Sprintf("%s-%d", machineSID, 1001+i)
				}
			case domainSID != "":
				wu.sid = fmt.Sprintf("%s-%d", domainSID, 1101+i)
			default:
				wu.sid = fmt.Sprintf("%s-%d", derivedSID("domain:"+wu.domain), 1101+i)
			}
			h.addAccount(full, wu.sid)
		}
		h.users = append(h.users, wu)
	}
}

// installServices installs each instance's Engine and Agent, then the extra
// services, and ties every service to those it depends on.
func (h *Host) installServices(cfg HostConfig) []error {
	var errs []error
	for _, ic := range cfg.Instances {
		inst, err := h.newInstance(ic)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		h.instances = append(h.instances, inst)
	}
	for _, sc := range cfg.Services {
		if _, dup := h.svcByName[strings.ToUpper(sc.Name)]; dup {
			errs = append(errs, fmt.Errorf("services: %q is already a service of this host", sc.Name))
			continue
		}
		sidType := 1
		if sc.ServiceSIDType != nil {
			sidType = *sc.ServiceSIDType
		}
		display := sc.DisplayName
		if display == "" {
			display = sc.Name
		}
		h.addService(&service{
			name: sc.Name, display: display, account: orDefault(sc.StartAccount, `NT Service\`+sc.Name),
			sidType: sidType, startDur: ms(sc.StartMS), stopDur: ms(sc.StopMS), failStart: sc.FailStart, refuseStop: sc.RefuseStop,
			dependsOnNames: sc.DependsOn, initiallyStopped: sc.Stopped,
		})
	}
	for _, s := range h.services {
		for _, dn := range s.dependsOnNames {
			d, ok := h.svcByName[strings.ToUpper(dn)]
			if !ok {
				errs = append(errs, fmt.Errorf("service %s depends on %q, which is not a service of this host (instances' services are MSSQLSERVER, MSSQL$NAME, SQLSERVERAGENT, SQLAgent$NAME)", s.name, dn))
				continue
			}
			s.dependsOn = append(s.dependsOn, d)
			d.dependents = append(d.dependents, s)
		}
		s.accountSID = h.accountSID(s.account)
	}
	if err := checkDependencyCycles(h.services); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// addAdministrators fills BUILTIN\Administrators: the configured members (default:
// the local Administrator), plus every WinRM user marked administrator.
func (h *Host) addAdministrators(cfg HostConfig, machineSID string) []error {
	var errs []error
	members := cfg.Administrators
	if members == nil {
		members = []string{machineSID + "-500"}
	}
	for _, m := range members {
		sid, err := h.resolvePrincipal(m)
		if err != nil {
			errs = append(errs, fmt.Errorf("administrators: %w", err))
			continue
		}
		h.admins = appendUnique(h.admins, sid)
	}
	for _, u := range h.users {
		if u.admin {
			h.admins = appendUnique(h.admins, u.sid)
		}
	}
	return errs
}

// applyLocalPolicies applies what policies set on the host before it starts:
// PowerShell's language mode, Defender's ASR rules, the guard directory's owner.
func (h *Host) applyLocalPolicies(cfg HostConfig) []error {
	var errs []error
	if m, err := CanonicalLanguageMode(cfg.PowerShellLanguageMode); err == nil { // else Validate said so
		h.langMode = m
	}
	h.asrRules, h.tasks, h.clusterGuards = map[string]int{}, map[string]bool{}, map[string]*ClusterGuardOutcome{}
	for id, action := range cfg.Defender.ASRRules {
		h.asrRules[strings.ToLower(id)] = action
	}
	if cfg.GuardDirectoryOwner != "" {
		sid, err := h.resolvePrincipal(cfg.GuardDirectoryOwner)
		if err != nil {
			errs = append(errs, fmt.Errorf("guard_directory_owner: %w", err))
		}
		h.guardDirOwner = sid
	}
	return errs
}

// addGroups records the groups every principal is a direct member of.
func (h *Host) addGroups(cfg HostConfig) []error {
	var errs []error
	h.groupsOf = map[string][]string{}
	for group, ms := range cfg.Groups {
		gsid, err := h.resolvePrincipal(group)
		if err != nil {
			errs = append(errs, fmt.Errorf("groups: %w", err))
			continue
		}
		for _, m := range ms {
			msid, err := h.resolvePrincipal(m)
			if err != nil {
				errs = append(errs, fmt.Errorf("groups[%s]: %w", group, err))
				continue
			}
			h.groupsOf[msid] = appendUnique(h.groupsOf[msid], gsid)
		}
	}
	return errs
}

// assignRights sets the user rights' initial local holders and what Group Policy
// defines.
func (h *Host) assignRights(cfg HostConfig) []error {
	var errs []error
	// Windows' default holder of "Perform volume maintenance tasks" is
	// BUILTIN\Administrators (design/windows-behaviour.md#who-holds-the-right:
	// members of Administrators hold it by default).
	h.rights[contract.RightManageVolume] = []string{winsid.Administrators}
	for right, holders := range cfg.Rights {
		canon, sids, err := h.resolveRightList("rights", right, holders)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		h.rights[canon] = sids
	}
	for right, holders := range cfg.GroupPolicy.Rights {
		canon, sids, err := h.resolveRightList("group_policy.rights", right, holders)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		h.gpPolicy[canon] = sids
	}
	return errs
}

// boot: the host has processed its Group Policy, and its services have started,
// before the simulation begins: the initial starts take no time.
func (h *Host) boot() {
	h.mu.Lock()
	h.refreshGroupPolicyLocked()
	h.booting = true
	for _, s := range h.services {
		if !s.initiallyStopped {
			_ = h.startLocked(s)
		}
	}
	h.advanceLocked()
	h.booting = false
	for _, i := range h.instances {
		i.publishReplicaLocked()
	}
	h.mu.Unlock()
	h.syncListeners()
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

func appendUnique(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

func (h *Host) addAccount(name, sid string) {
	h.accounts[strings.ToLower(name)] = sid
	if _, ok := h.sidNames[sid]; !ok {
		h.sidNames[sid] = name
	}
}

// accountSID translates a start account name to its SID (LookupAccountName); ""
// when the model cannot translate it.
func (h *Host) accountSID(account string) string {
	if sid, ok := winsid.WellKnownAccountSID(account); ok {
		return sid
	}
	a := strings.ToLower(strings.TrimSpace(account))
	if sid, ok := h.accounts[a]; ok {
		return sid
	}
	// ".\name" and "COMPUTER\name" are local accounts.
	if rest, ok := strings.CutPrefix(a, `.\`); ok {
		a = strings.ToLower(h.computer) + `\` + rest
	}
	if sid, ok := h.accounts[a]; ok {
		return sid
	}
	if !strings.Contains(a, `\`) {
		if sid, ok := h.accounts[strings.ToLower(h.computer)+`\`+a]; ok {
			return sid
		}
		if h.cfg.Domain != "" {
			if sid, ok := h.accounts[strings.ToLower(h.cfg.Domain)+`\`+a]; ok {
				return sid
			}
		}
	}
	return ""
}

// resolvePrincipal turns a configured SID or name into a SID.
func (h *Host) resolvePrincipal(s string) (string, error) {
	if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(s)), "S-1-") {
		return ParseSID(s)
	}
	for sid, name := range wellKnownNames {
		if strings.EqualFold(name, strings.TrimSpace(s)) {
			return sid, nil
		}
	}
	if sid := h.accountSID(s); sid != "" {
		return sid, nil
	}
	return "", fmt.Errorf("%q is neither a SID nor a name the host can translate: add it to \"accounts\" with its SID, or give the SID", s)
}

func (h *Host) resolveRightList(field, right string, holders []string) (string, []string, error) {
	canon, ok := canonicalRight(right)
	if !ok {
		return "", nil, fmt.Errorf("%s: %q is not a Windows privilege or account right (for IFI use %s)", field, right, contract.RightManageVolume)
	}
	sids := []string{}
	for _, p := range holders {
		sid, err := h.resolvePrincipal(p)
		if err != nil {
			return "", nil, fmt.Errorf("%s[%s]: %w", field, canon, err)
		}
		sids = appendUnique(sids, sid)
	}
	return canon, sids, nil
}

// nameOf translates a SID for display (LookupAccountSid); "" when it cannot, as for an
// orphaned SID (design/windows-behaviour.md#orphaned-and-untranslatable-sids:
// tolerate failure, work with SIDs).
func (h *Host) nameOf(sid string) string {
	if n, ok := wellKnownNames[sid]; ok {
		return n
	}
	// Per-service SIDs translate for installed services only.
	if strings.HasPrefix(sid, "S-1-5-80-") {
		for _, s := range h.services {
			if winsid.ServiceSID(s.name) == sid {
				return winsid.ServiceAccountName(s.name)
			}
		}
	}
	return h.sidNames[sid]
}

func (h *Host) principals(sids []string) []contract.Principal {
	out := make([]contract.Principal, 0, len(sids))
	for _, s := range sids {
		out = append(out, contract.Principal{SID: s, Name: h.nameOf(s)})
	}
	return out
}

// sidPrincipals lists SIDs without names: what the scripts report for a right's
// holders, which they do not translate (lsa.ps1: Get-RightHolder).
func sidPrincipals(sids []string) []contract.Principal {
	out := make([]contract.Principal, 0, len(sids))
	for _, s := range sids {
		out = append(out, contract.Principal{SID: s})
	}
	return out
}

// Name returns the host's configured name.
func (h *Host) Name() string { return h.cfg.Name }

// ComputerName returns the host's NetBIOS computer name.
func (h *Host) ComputerName() string { return h.computer }

// Config returns the configuration the host was built from.
func (h *Host) Config() HostConfig { return h.cfg }

// Lookup answers the password of a WinRM user, for the WinRM and NTLM servers
// (ntlm.Lookup's shape). user is case-insensitive; domain may be "", the computer
// name or "." for a local user, or the user's domain.
func (h *Host) Lookup(domain, user string) (string, bool) {
	u, ok := h.findUser(domain, user)
	if !ok {
		return "", false
	}
	return u.password, true
}

// findUser matches a user name as a client sends it: "name", "DOMAIN\name",
// "name@domain" or (domain, name).
func (h *Host) findUser(domain, user string) (winrmUser, bool) {
	if domain == "" {
		if d, n, ok := strings.Cut(user, `\`); ok {
			domain, user = d, n
		} else if n, d, ok := strings.Cut(user, "@"); ok {
			domain, user = d, n
			if i := strings.IndexByte(domain, '.'); i > 0 {
				domain = domain[:i]
			}
		}
	}
	local := domain == "" || domain == "." || strings.EqualFold(domain, h.computer)
	for _, u := range h.users {
		if !strings.EqualFold(u.user, user) {
			continue
		}
		if u.domain == "" || strings.EqualFold(u.domain, h.computer) {
			if local {
				return u, true
			}
			continue
		}
		if strings.EqualFold(u.domain, domain) || domain == "" {
			return u, true
		}
	}
	return winrmUser{}, false
}

// Instances returns the host's installed SQL Server instances, in configuration
// order (UninstallInstance removes one).
func (h *Host) Instances() []*Instance {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.instances)
}

// Instance finds an installed instance by name (case-insensitive; MSSQLSERVER is
// the default).
func (h *Host) Instance(name string) (*Instance, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.instanceLocked(name)
}

func (h *Host) instanceLocked(name string) (*Instance, bool) {
	for _, i := range h.instances {
		if strings.EqualFold(i.name, name) {
			return i, true
		}
	}
	return nil, false
}

func (h *Host) logf(format string, args ...any) {
	if h.opts.Logf != nil {
		h.opts.Logf("host %s: "+format, append([]any{h.cfg.Name}, args...)...)
	}
}

func (h *Host) now() time.Time { return h.opts.Now() }

// notifyLocked wakes every waiter; call with h.mu held after any state change.
func (h *Host) notifyLocked() {
	for _, i := range h.instances {
		i.publishReplicaLocked()
	}
	close(h.changed)
	h.changed = make(chan struct{})
}

// waitFor waits until cond (evaluated with h.mu held) reports done or an error, or
// ctx ends.
func (h *Host) waitFor(ctx context.Context, cond func() (bool, error)) error {
	for {
		h.mu.Lock()
		done, err := cond()
		ch := h.changed
		closed := h.closed
		h.mu.Unlock()
		if done || err != nil {
			return err
		}
		if closed {
			return errors.New("the host model was closed")
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ---- LSA user rights
// (design/windows-behaviour.md#changing-user-rights-the-lsa-api:
// LsaAddAccountRights/LsaRemoveAccountRights are atomic per SID; adding a held right is a
// no-op; enumeration lists direct holders).

// ErrNoSuchPrivilege is STATUS_NO_SUCH_PRIVILEGE: the right name is not one Windows knows.
var ErrNoSuchPrivilege = errors.New("a specified privilege does not exist (STATUS_NO_SUCH_PRIVILEGE 0xC0000060)")

// GrantRight adds one SID to a right's holders, like LsaAddAccountRights. changed is
// false when the SID already held it. Running processes keep their tokens: nothing
// changes for a running Engine until it restarts
// (design/windows-behaviour.md#the-restart-rule).
func (h *Host) GrantRight(right, sid string) (bool, error) {
	canon, s, err := checkRightAndSID(right, sid)
	if err != nil {
		return false, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if slices.Contains(h.rights[canon], s) {
		return false, nil
	}
	h.rights[canon] = append(h.rights[canon], s)
	h.notifyLocked()
	return true, nil
}

// RevokeRight removes one SID from a right's holders, like LsaRemoveAccountRights.
// changed is false when the SID did not hold it.
func (h *Host) RevokeRight(right, sid string) (bool, error) {
	canon, s, err := checkRightAndSID(right, sid)
	if err != nil {
		return false, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	i := slices.Index(h.rights[canon], s)
	if i < 0 {
		return false, nil
	}
	h.rights[canon] = slices.Delete(slices.Clone(h.rights[canon]), i, i+1)
	h.notifyLocked()
	return true, nil
}

func checkRightAndSID(right, sid string) (string, string, error) {
	canon, ok := canonicalRight(right)
	if !ok {
		return "", "", fmt.Errorf("right %q: %w", right, ErrNoSuchPrivilege)
	}
	s, err := ParseSID(sid)
	if err != nil {
		return "", "", err
	}
	return canon, s, nil
}

// RightHolders lists the direct holders of a right (LsaEnumerateAccountsWithUserRight).
func (h *Host) RightHolders(right string) ([]string, error) {
	canon, ok := canonicalRight(right)
	if !ok {
		return nil, fmt.Errorf("right %q: %w", right, ErrNoSuchPrivilege)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.rights[canon]), nil
}

// ---- Group Policy (design/windows-behaviour.md#group-policy: domain policy wins
// over a local grant; a refresh re-applies the security settings and overwrites the local
// holder list).

// SetGroupPolicyRight makes a GPO define a right's holder list (SIDs or names the
// host can translate), applied at the next RefreshGroupPolicy. sids == nil removes
// the definition; an empty non-nil list defines "nobody".
func (h *Host) SetGroupPolicyRight(right string, sids []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	canon, ok := canonicalRight(right)
	if !ok {
		return fmt.Errorf("group policy right %q: %w", right, ErrNoSuchPrivilege)
	}
	if sids == nil {
		delete(h.gpPolicy, canon)
		return nil
	}
	_, list, err := h.resolveRightList("group policy", canon, sids)
	if err != nil {
		return err
	}
	h.gpPolicy[canon] = list
	return nil
}

// RefreshGroupPolicy applies the policy as gpupdate /force does: every right the
// policy defines gets exactly the policy's holder list, whatever was granted locally.
// RSoP then reports the applied policy.
func (h *Host) RefreshGroupPolicy() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refreshGroupPolicyLocked()
	h.notifyLocked()
}

func (h *Host) refreshGroupPolicyLocked() {
	h.gpApplied = map[string][]string{}
	for right, sids := range h.gpPolicy {
		h.rights[right] = slices.Clone(sids)
		h.gpApplied[right] = slices.Clone(sids)
	}
	if !h.rsopLoggingOff {
		h.gpLogged = maps.Clone(h.gpApplied)
	}
	h.gpRefresh = h.now()
}

// SetRSoPLogging turns RSoP logging off (RSoPLogging = 0, the policy "Turn off
// Resultant Set of Policy logging") or on again. Off, policy refreshes go on
// applying the policy but RSoP keeps what it logged last; on, the next refresh logs
// again.
func (h *Host) SetRSoPLogging(off bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rsopLoggingOff = off
	h.notifyLocked()
}

// rsopLoggingOffValue is how instance_report.ps1 names the value that turns RSoP
// logging off.
const rsopLoggingOffValue = `HKLM\SOFTWARE\Policies\Microsoft\Windows\System\RSoPLogging = 0`

// groupPolicyInfo answers what RSOP_UserPrivilegeRight says about a right.
func (h *Host) groupPolicyInfo(right string) contract.GroupPolicyInfo {
	if !h.rsop {
		// design/windows-behaviour.md#group-policy: an empty RSoP result may mean
		// RSoP logging is off: report unknown.
		// read_instance.ps1: RSoP without any Group Policy object has no data.
		return contract.GroupPolicyInfo{Known: false, Holders: []contract.Principal{},
			Detail: `Group Policy (RSoP) could not be read: RSoP has no data on this host (root\rsop\computer lists no Group Policy object: RSoP logging may be off, or policy was never processed)`}
	}
	if h.rsopLoggingOff {
		// instance_report.ps1 reads RSoPLogging before RSoP, whose data is stale.
		return contract.GroupPolicyInfo{Known: false, Holders: []contract.Principal{}, RSoPLoggingOff: rsopLoggingOffValue,
			Detail: "Group Policy (RSoP) could not be read: RSoP logging is turned off on this host (" + rsopLoggingOffValue + `), so rootsop\computer ` +
				"may hold stale data and cannot say whether a Group Policy defines the right"}
	}
	sids, ok := h.gpLogged[right]
	if !ok {
		gpos := 1 // Local Group Policy
		if h.cfg.Domain != "" {
			gpos = 2 // and Default Domain Policy
		}
		return contract.GroupPolicyInfo{Known: true, Defined: false, Holders: []contract.Principal{},
			Detail: fmt.Sprintf("No Group Policy setting defines the right (RSoP lists %d Group Policy objects).", gpos)}
	}
	return contract.GroupPolicyInfo{Known: true, Defined: true, Holders: h.principals(sids),
		Detail: "a Group Policy object defines this right (RSOP_UserPrivilegeRight precedence 1); local grants are overwritten at every policy refresh"}
}

// ---- audit

// AuditEntry is one command run over WinRM.
type AuditEntry struct {
	Time      time.Time       `json:"time"`
	User      string          `json:"user"`
	UserAgent string          `json:"user_agent,omitempty"` // the HTTP User-Agent of the Command request
	Command   string          `json:"command"`              // the command line, the encoded bootstrap abbreviated
	Operation string          `json:"operation"`            // "" when the command was not a recognised operation
	Params    json.RawMessage `json:"params,omitempty"`     // the decoded parameters
	ExitCode  int             `json:"exit_code"`            // the process exit code
	Error     string          `json:"error,omitempty"`      // the error code or message, when it failed
	Duration  string          `json:"duration,omitempty"`   // how long it ran
}

// Audit returns every command run over WinRM, oldest first.
func (h *Host) Audit() []AuditEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.audit)
}

func (h *Host) addAudit(e AuditEntry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.audit) >= h.auditLimit {
		h.audit = slices.Delete(h.audit, 0, len(h.audit)-h.auditLimit+1)
	}
	h.audit = append(h.audit, e)
	h.notifyLocked()
}

// Close stops every timer; the model answers nothing afterwards.
func (h *Host) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	h.endLife()
	for _, s := range h.services {
		s.cancelTimer()
	}
	for _, i := range h.instances {
		if i.readyTimer != nil {
			i.readyTimer.Stop()
		}
	}
	h.notifyLocked()
	h.mu.Unlock()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// SetLanguageMode changes the language mode PowerShell runs WinRM users' commands in
// (as deploying or removing an AppLocker or App Control policy that enforces script
// rules does). Errors wrap ErrBadLanguageMode.
func (h *Host) SetLanguageMode(mode string) error {
	m, err := CanonicalLanguageMode(mode)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.langMode = m
	h.mu.Unlock()
	return nil
}

// LanguageMode is the language mode PowerShell runs WinRM users' commands in.
func (h *Host) LanguageMode() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.langMode
}
