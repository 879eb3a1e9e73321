package host

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tsql"
)

// HostConfig is the JSON configuration of one simulated Windows host. The simulator's
// configuration file holds a list of them (internal/winsim embeds it). Every field
// except "name" and "address" is optional; the comments give the defaults.
//
// Accounts may be named or given as SIDs wherever a list of principals is expected
// ("administrators", "rights", "group_policy.rights"): a name is resolved through
// the well-known names (BUILTIN\Administrators, NT AUTHORITY\SYSTEM, ...), the
// per-service names NT SERVICE\<service> (computed with the real SHA-1 algorithm),
// the "accounts" table and the WinRM users.
type HostConfig struct {
	// Name is the simulator's name of the host, e.g. "sql01".
	Name string `json:"name"`
	// Address is the host's own loopback address, e.g. "127.0.0.2" (used by the
	// simulator's listeners; the model only reports it).
	Address string `json:"address"`
	// ComputerName is the Windows NetBIOS computer name. Default: Name upper-cased.
	ComputerName string `json:"computer_name,omitempty"`
	// Domain is the NetBIOS domain name, e.g. "CONTOSO"; "" for a workgroup host.
	Domain string `json:"domain,omitempty"`
	// DNSDomain is the DNS name of the host's domain, its primary DNS suffix (a
	// domain member's FQDN is its computer name in it), e.g. "contoso.test".
	// Default for a domain host: its Kerberos realm in lower case (an AD domain's
	// realm is its DNS name), else Domain in lower case; "" for a workgroup host.
	DNSDomain string `json:"dns_domain,omitempty"`
	// DomainSID is the domain's SID prefix (S-1-5-21-x-y-z), used to give SIDs to
	// domain WinRM users missing from Accounts. Default: derived from Domain.
	DomainSID string `json:"domain_sid,omitempty"`
	// UTCOffsetMinutes is the host's time zone: error log timestamps and the DMV's
	// last_startup_time use it. Default 0 (UTC).
	UTCOffsetMinutes int `json:"utc_offset_minutes,omitempty"`

	// WinRM configures the WS-Management listeners and who may log on.
	WinRM WinRMConfig `json:"winrm"`

	// PowerShellLanguageMode is the language mode Windows PowerShell runs the WinRM
	// users' commands in: "FullLanguage" (default) or "ConstrainedLanguage", as
	// under an AppLocker or App Control for Business policy that enforces script
	// rules. The bootstrap then answers the ScriptError constrained_language
	// (exit 3) before it reads stdin. The control action set_language_mode changes it.
	PowerShellLanguageMode string `json:"powershell_language_mode,omitempty"`

	// EventSourceDenied: registering the provider's Application event log source
	// fails (a policy denies its registry key); changes then succeed without an
	// entry, with a warning (eventlog.go).
	EventSourceDenied bool `json:"event_source_denied,omitempty"`
	// EventSourceRefreshMS is how long after CreateEventSource a write under the new
	// source still fails, until the system has refreshed its list of sources (.NET
	// EventLog.CreateEventSource: "the write operation will fail"). Microsoft gives
	// no time; 0 means the default, 200 ms, so a write right after the registration
	// fails as the documentation warns; -1: no delay.
	EventSourceRefreshMS int `json:"event_source_refresh_ms,omitempty"`
	// Defender is Microsoft Defender's configuration, as far as the restart's guard
	// goes (restart_guard.ps1). Default: no attack surface reduction rule.
	Defender DefenderConfig `json:"defender,omitempty"`
	// TaskSchedulerStopped: the Task Scheduler service does not run, so no scheduled
	// task can be registered or started. Default false.
	TaskSchedulerStopped bool `json:"task_scheduler_stopped,omitempty"`
	// GroupPolicyExecutionPolicy is the PowerShell execution policy a Group Policy
	// sets ("Turn on Script Execution"; Get-ExecutionPolicy -List's MachinePolicy):
	// "" none (Undefined), "AllSigned", "Restricted", "RemoteSigned", "Unrestricted"
	// or "Bypass". It overrides -ExecutionPolicy on powershell.exe's command line for
	// -File, and does not apply to -EncodedCommand or a script block (guard.go,
	// FIDELITY.md). Default "".
	GroupPolicyExecutionPolicy string `json:"group_policy_execution_policy,omitempty"`
	// EndpointProtection is an endpoint-protection (EDR) product's policy on
	// powershell.exe processes. Default: none.
	EndpointProtection EndpointProtectionConfig `json:"endpoint_protection,omitempty"`
	// GuardDirectoryOwner is the owner (a SID or a name) of %ProgramData%\mssqlifi
	// when the host is built, as when someone created that directory before the
	// provider did (every user may create directories in ProgramData). Default "":
	// it does not exist.
	GuardDirectoryOwner string `json:"guard_directory_owner,omitempty"`

	// Cost is the cost model (round trips, PowerShell start, Add-Type). Off by
	// default; see CostConfig.
	Cost CostConfig `json:"cost,omitempty"`

	// Accounts maps account names to SIDs for domain and local accounts, e.g.
	// {"CONTOSO\\sqlsvc": "S-1-5-21-1-2-3-1105"}. Names are case-insensitive. An
	// account missing here cannot be translated: a service running as it reports
	// start_account_sid "" and its SID cannot be matched against right holders (as
	// on a host whose domain trust is broken).
	Accounts map[string]string `json:"accounts,omitempty"`
	// Administrators lists the direct members of BUILTIN\Administrators
	// (S-1-5-32-544), as SIDs or names. Default: the local Administrator account
	// (<machine SID>-500). WinRM users with "administrator": true are always added.
	Administrators []string `json:"administrators,omitempty"`
	// Groups are domain (or nested local) groups, group → members, each as a SID or
	// a name (the group's name must be in "accounts"). A process's token carries
	// every group its account is in, directly or through other groups, and
	// Administrators when any of them is a direct member of Administrators, as a
	// domain logon's token does. read_instance reports a group in Administrators
	// only as itself, never its members: Get-LocalGroupMember and the WinNT
	// provider list the direct members of a local group (design/host-knowledge.md).
	Groups map[string][]string `json:"groups,omitempty"`
	// Rights is the initial local holder list of each user right, right name → SIDs or
	// names. Rights not named keep Windows' defaults; the only default the model has is
	// SeManageVolumePrivilege → [BUILTIN\Administrators] (Windows' default for "Perform
	// volume maintenance tasks", design/windows-behaviour.md#who-holds-the-right).
	// Naming SeManageVolumePrivilege here replaces that default (an empty list: nobody).
	Rights map[string][]string `json:"rights,omitempty"`
	// GroupPolicy is the domain Group Policy as far as user rights go.
	GroupPolicy GroupPolicyConfig `json:"group_policy"`

	// Services are extra services besides the instances' own, e.g. PolyBase or
	// Launchpad depending on an Engine.
	Services []ServiceConfig `json:"services,omitempty"`
	// Instances are the SQL Server instances installed on the host.
	Instances []InstanceConfig `json:"instances,omitempty"`
}

// WinRMConfig is the host's WinRM service.
type WinRMConfig struct {
	// HTTPPort is the WinRM HTTP listener's port; 0 picks a free one.
	HTTPPort int `json:"http_port,omitempty"`
	// HTTPSPort is the WinRM HTTPS listener's port; 0 picks a free one.
	HTTPSPort int `json:"https_port,omitempty"`
	// Basic enables Basic authentication. Default false, as on Windows.
	Basic *bool `json:"basic,omitempty"`
	// NTLM enables NTLM (Negotiate) authentication. Default true.
	NTLM *bool `json:"ntlm,omitempty"`
	// AllowUnencrypted is the service's AllowUnencrypted. Default false, as on
	// Windows: over HTTP, Basic is refused and bodies must be sealed with NTLM.
	AllowUnencrypted bool `json:"allow_unencrypted,omitempty"`
	// CBTHardeningLevel is the service's CbtHardeningLevel for NTLM and Kerberos over HTTPS:
	// "none", "relaxed" (default, as on Windows) or "strict".
	CBTHardeningLevel string `json:"cbt_hardening_level,omitempty"`
	// Users may log on over WinRM.
	Users []UserConfig `json:"users,omitempty"`
	// Kerberos enables Kerberos logons (HTTP "Negotiate" with Kerberos, and the
	// "Kerberos" scheme) as on a domain-joined host. Default off.
	Kerberos *KerberosConfig `json:"kerberos,omitempty"`
}

// KerberosConfig is the host's membership in a Kerberos realm: the keys of its
// service principals, and the realm whose users log on as domain users.
type KerberosConfig struct {
	// Realm is the domain's realm, e.g. "MSSQLIFI.TEST": its principal user@REALM
	// logs on as <domain>\user (the host's "domain" must be set).
	Realm string `json:"realm"`
	// Keytab is the path of a keytab holding the host's HTTP/<fqdn>@REALM keys
	// (kadmin ktadd, ktpass), as the computer account's keys on Windows.
	Keytab string `json:"keytab"`
	// AcceptorSubkey makes the host's AP-REP carry a subkey of its own, which both
	// sides then seal with (RFC 4121 section 2), as an acceptor may. Default false.
	AcceptorSubkey bool `json:"acceptor_subkey,omitempty"`
	// ExtraCount is the filler (EC) the host seals its answers with, the trailer
	// rotated by RRC + EC (MS-KILE 3.4.5.4.1; 16 is what it says a GSS_WrapEx sender
	// should use). Default 0: what pywinrm's MIT GSSAPI, which rotates by RRC alone,
	// can read from Windows over WinRM.
	ExtraCount int `json:"extra_count,omitempty"`
	// ClockOffsetSeconds is how far the host's clock is ahead of the real time
	// (behind when negative), as its Kerberos acceptor sees it: beyond 5 minutes
	// either way it refuses every ticket with KRB_AP_ERR_SKEW, as a Windows host
	// whose time has drifted from its domain's does. Default 0.
	ClockOffsetSeconds int `json:"clock_offset_seconds,omitempty"`
}

// BasicEnabled reports whether Basic authentication is on (default false).
func (w WinRMConfig) BasicEnabled() bool { return w.Basic != nil && *w.Basic }

// NTLMEnabled reports whether NTLM authentication is on (default true).
func (w WinRMConfig) NTLMEnabled() bool { return w.NTLM == nil || *w.NTLM }

// UserConfig is one account that may use WinRM.
type UserConfig struct {
	// Name is "Administrator" (a local account) or "CONTOSO\\admin" (a domain
	// account). A local user logs on with or without the computer name as domain.
	Name     string `json:"name"`
	Password string `json:"password"`
	// Administrator: the user is a member of BUILTIN\Administrators. Default true.
	// A non-administrator gets "Access is denied" from the LSA (the operations
	// answer a ScriptError "lsa_error", exit 1), as Windows refuses LsaOpenPolicy.
	Administrator *bool `json:"administrator,omitempty"`
}

// IsAdministrator reports the Administrator flag (default true).
func (u UserConfig) IsAdministrator() bool { return u.Administrator == nil || *u.Administrator }

// GroupPolicyConfig is the domain Group Policy's user-rights part.
type GroupPolicyConfig struct {
	// RSoPAvailable: Resultant Set of Policy can be read (WMI root\rsop\computer).
	// Default true. When false, read_instance answers group_policy.known = false.
	RSoPAvailable *bool `json:"rsop_available,omitempty"`
	// RSoPLoggingOff: the policy "Turn off Resultant Set of Policy logging"
	// (HKLM\SOFTWARE\Policies\Microsoft\Windows\System\RSoPLogging = 0) is set:
	// refreshes apply the policy, RSoP keeps what it logged before (here: nothing),
	// and read_instance answers group_policy.known = false naming the value.
	RSoPLoggingOff bool `json:"rsop_logging_off,omitempty"`
	// Rights are the rights a GPO defines, right → SIDs or names. A policy-defined
	// right's local holder list is overwritten by the policy's at every refresh
	// (design/windows-behaviour.md#group-policy), and once when the host is built
	// (the host has already processed its policy when the simulation begins).
	Rights map[string][]string `json:"rights,omitempty"`
}

// RSoP reports the RSoPAvailable flag (default true).
func (g GroupPolicyConfig) RSoP() bool { return g.RSoPAvailable == nil || *g.RSoPAvailable }

// DefenderConfig is Microsoft Defender's configuration as Get-MpPreference reports it.
type DefenderConfig struct {
	// ASRRules maps attack surface reduction rule ids (GUIDs) to their action
	// (AttackSurfaceReductionRules_Ids and _Actions): 0 disabled, 1 block, 2 audit,
	// 5 not configured, 6 warn. The control action set_asr_rule changes one.
	ASRRules map[string]int `json:"asr_rules,omitempty"`
}

// EndpointProtectionConfig is what an endpoint-protection product does to a
// powershell.exe that a restart's guard launcher starts.
type EndpointProtectionConfig struct {
	// KillsPowerShellFrom lists the launchers whose powershell.exe children it ends
	// at their start, before they run a line: "wmi" (children of WmiPrvSE.exe,
	// Win32_Process.Create) and "scheduled_task" (started by the Task Scheduler).
	KillsPowerShellFrom []string `json:"kills_powershell_from,omitempty"`
}

// ServiceConfig is an extra Windows service.
type ServiceConfig struct {
	Name        string `json:"name"`                   // e.g. "MSSQLLaunchpad"
	DisplayName string `json:"display_name,omitempty"` // default: Name
	// DependsOn names the services this one needs running, e.g. ["MSSQLSERVER"].
	DependsOn []string `json:"depends_on,omitempty"`
	// StartAccount is the service's start account. Default NT Service\<name>.
	StartAccount string `json:"start_account,omitempty"`
	// ServiceSIDType: 0 none, 1 unrestricted, 3 restricted. Default 1.
	ServiceSIDType *int `json:"service_sid_type,omitempty"`
	StartMS        int  `json:"start_ms,omitempty"`   // Start Pending duration, ms
	StopMS         int  `json:"stop_ms,omitempty"`    // Stop Pending duration, ms
	FailStart      bool `json:"fail_start,omitempty"` // every start fails (error 1067)
	Stopped        bool `json:"stopped,omitempty"`    // the service is stopped when the host is built
	// RefuseStop: the service does not accept SERVICE_CONTROL_STOP (ControlService
	// answers 1052, ERROR_INVALID_SERVICE_CONTROL).
	RefuseStop bool `json:"refuse_stop,omitempty"`
}

// InstanceConfig is one installed SQL Server instance.
type InstanceConfig struct {
	// Name is MSSQLSERVER for the default instance, else the named instance's name.
	Name string `json:"name"`
	// Version is the build, major.minor.build.revision. Default "16.0.4135.4".
	Version string `json:"version,omitempty"`
	// ProductLevel is SERVERPROPERTY('ProductLevel'). Default: derived from the
	// build (RTM, SP1, ...).
	ProductLevel string `json:"product_level,omitempty"`
	// Edition is SERVERPROPERTY('Edition'). Default "Developer Edition (64-bit)".
	Edition string `json:"edition,omitempty"`
	// ServiceAccount is the Engine's start account. Default NT Service\<service>.
	ServiceAccount string `json:"service_account,omitempty"`
	// ServiceSIDType of the Engine: 0 none, 1 unrestricted (what Setup sets), 3
	// restricted. Default 1.
	ServiceSIDType *int `json:"service_sid_type,omitempty"`
	// SQLPort is the TCP port the instance listens on; 0 lets the simulator pick
	// one (it reports it to the model with Instance.SetTCPPort).
	SQLPort int `json:"sql_port,omitempty"`
	// Logins are the SQL logins that can connect over TDS.
	Logins []LoginConfig `json:"logins,omitempty"`
	// TDEDatabases are the user databases encrypted with TDE (encryption_state 3).
	TDEDatabases []string `json:"tde_databases,omitempty"`
	// StartupTraceFlags are -T startup parameters, e.g. [1806] (which disables IFI).
	StartupTraceFlags []int `json:"startup_trace_flags,omitempty"`
	// Clustered marks a failover cluster instance: restart_instance refuses it.
	Clustered bool `json:"clustered,omitempty"`
	// Agent installs SQL Server Agent (SQLSERVERAGENT / SQLAgent$NAME), which depends
	// on the Engine. Default true.
	Agent *bool `json:"agent,omitempty"`
	// StartMS and StopMS are the Start Pending and Stop Pending durations of the
	// Engine (and of its Agent), in milliseconds. Default 0.
	StartMS int `json:"start_ms,omitempty"`
	StopMS  int `json:"stop_ms,omitempty"`
	// ReadyMS is the delay between the Engine reaching Running and accepting SQL
	// connections. Default 0.
	ReadyMS int `json:"ready_ms,omitempty"`
	// ZeroMBPerSecond is how fast the Engine writes zeros into a new or grown file
	// it must zero (a log file always; a data file without IFI), in MB per second.
	// It sets the instance's clock: a data file under IFI is created or grown
	// tsql.ArticleRatio times faster. Default tsql.DefaultZeroMBPerSecond.
	ZeroMBPerSecond float64 `json:"zero_mb_per_s,omitempty"`
	// IFIAllocMS, when set, is what creating or growing a data file costs when IFI
	// applies (the space is allocated, not written), in milliseconds, whatever its
	// size. Default unset: the data file's size at ArticleRatio times
	// ZeroMBPerSecond; a negative value is refused.
	IFIAllocMS *int `json:"ifi_alloc_ms,omitempty"`
	// MaxServerMemoryMB is max server memory (MB) as sp_configure set it
	// (sys.configurations configuration_id 1544): MinMaxServerMemoryMB to
	// contract.DefaultMaxServerMemoryMB. Default (unset) the latter, no limit.
	MaxServerMemoryMB *int `json:"max_server_memory_mb,omitempty"`
	// FailStart makes every Engine start fail (error 1067).
	FailStart bool `json:"fail_start,omitempty"`
	// StartupNoiseLines are informational lines each start writes to the error log
	// before the IFI line; more than contract.ErrorLogScanMaxLines put it beyond the
	// section read_instance scans. Default 0.
	StartupNoiseLines int `json:"startup_noise_lines,omitempty"`
	// Stopped: the Engine (and Agent) are stopped when the host is built.
	Stopped bool `json:"stopped,omitempty"`
	// HADREnabled is the Always On availability groups feature of the instance
	// (SERVERPROPERTY('IsHadrEnabled')). Default: true when AvailabilityGroup is
	// set, else false. Needs SQL Server 2012 (11.x) or later.
	HADREnabled *bool `json:"hadr_enabled,omitempty"`
	// AvailabilityGroup makes the instance a replica of an availability group. The
	// control action set_ag_role changes its role, joins or leaves a group.
	AvailabilityGroup *AvailabilityGroupConfig `json:"availability_group,omitempty"`
	// AGSyncMS is how long a secondary replica reports NOT_HEALTHY after its Engine
	// starts, while it catches up with the primary. Default 0.
	AGSyncMS int `json:"ag_sync_ms,omitempty"`
}

// AvailabilityGroupConfig is the instance's replica of an Always On availability
// group, as the HADR DMVs report it.
type AvailabilityGroupConfig struct {
	// Name is sys.availability_groups.name, e.g. "AG1".
	Name string `json:"name"`
	// Role is "primary" or "secondary" (sys.dm_hadr_availability_replica_states.role_desc).
	Role string `json:"role"`
	// ClusterType is "wsfc" (the default: the group is a Windows failover cluster
	// resource, whose owner node holds the primary), "none" or "external".
	ClusterType string `json:"cluster_type,omitempty"`
}

// AG replica roles, as the configuration and set_ag_role name them.
const (
	AGRolePrimary   = "primary"
	AGRoleSecondary = "secondary"
)

// HADR reports whether Always On availability groups are enabled on the instance.
func (c InstanceConfig) HADR() bool {
	if c.HADREnabled != nil {
		return *c.HADREnabled
	}
	return c.AvailabilityGroup != nil
}

// validateAG checks an availability group's name and role.
func validateAG(ag AvailabilityGroupConfig) error {
	if strings.TrimSpace(ag.Name) == "" || len([]rune(ag.Name)) > 128 {
		return fmt.Errorf(`availability group "name" %q must be 1 to 128 characters, e.g. "AG1"`, ag.Name)
	}
	switch strings.ToLower(ag.ClusterType) {
	case "", ClusterTypeWSFC, ClusterTypeNone, ClusterTypeExternal:
	default:
		return fmt.Errorf(`availability group %q: "cluster_type" %q is not %q, %q or %q`, ag.Name, ag.ClusterType, ClusterTypeWSFC, ClusterTypeNone, ClusterTypeExternal)
	}
	switch strings.ToLower(ag.Role) {
	case AGRolePrimary, AGRoleSecondary:
		return nil
	}
	return fmt.Errorf(`availability group %q: "role" %q is not %q or %q`, ag.Name, ag.Role, AGRolePrimary, AGRoleSecondary)
}

// HasAgent reports whether the instance has SQL Server Agent (default true).
func (c InstanceConfig) HasAgent() bool { return c.Agent == nil || *c.Agent }

// LoginConfig is one SQL login (the T-SQL engine's; tsql.LoginConfig).
type LoginConfig = tsql.LoginConfig

// DefaultVersion is the build an instance gets when its config names none
// (SQL Server 2022 CU12).
const DefaultVersion = "16.0.4135.4"

// MinMaxServerMemoryMB is the least max server memory (MB) sp_configure accepts
// ("Server memory configuration options").
const MinMaxServerMemoryMB = 128

// DefaultEdition is SERVERPROPERTY('Edition') when the config names none.
const DefaultEdition = "Developer Edition (64-bit)"

// ComputerNameOrDefault returns the configured computer name, else Name upper-cased.
func (c HostConfig) DNSDomainOrDefault() string {
	switch {
	case c.Domain == "":
		return ""
	case c.DNSDomain != "":
		return strings.ToLower(c.DNSDomain)
	case c.WinRM.Kerberos != nil && c.WinRM.Kerberos.Realm != "":
		return strings.ToLower(c.WinRM.Kerberos.Realm)
	}
	return strings.ToLower(c.Domain)
}

// FQDN is the host's DNS name: its computer name, in its domain's DNS name for a
// domain host; the computer name alone for a workgroup host.
func (c HostConfig) FQDN() string {
	if d := c.DNSDomainOrDefault(); d != "" {
		return strings.ToLower(c.ComputerNameOrDefault()) + "." + d
	}
	return strings.ToLower(c.ComputerNameOrDefault())
}

// ComputerNameOrDefault is the NetBIOS computer name.
func (c HostConfig) ComputerNameOrDefault() string {
	if c.ComputerName != "" {
		return strings.ToUpper(c.ComputerName)
	}
	return strings.ToUpper(c.Name)
}

// version is a parsed SQL Server build number.
type version struct {
	Major, Minor, Build, Revision int
}

func parseVersion(s string) (version, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return version{}, fmt.Errorf("version %q is not major.minor.build.revision such as %q", s, DefaultVersion)
	}
	var n [4]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return version{}, fmt.Errorf("version %q: part %q is not a number; use a build such as %q", s, p, DefaultVersion)
		}
		n[i] = v
	}
	if n[0] < 9 || n[0] > 17 {
		return version{}, fmt.Errorf("version %q: major version %d is not a SQL Server the simulator knows (9 to 17)", s, n[0])
	}
	if n[0] > 255 || n[1] > 255 || n[2] > 65535 {
		return version{}, fmt.Errorf("version %q does not fit the TDS LOGINACK version fields", s)
	}
	return version{n[0], n[1], n[2], n[3]}, nil
}

func (v version) String() string {
	return fmt.Sprintf("%d.%d.%d.%d", v.Major, v.Minor, v.Build, v.Revision)
}

// atLeast compares major.minor.build with those of floor.
func (v version) atLeast(floor version) bool {
	if v.Major != floor.Major {
		return v.Major > floor.Major
	}
	if v.Minor != floor.Minor {
		return v.Minor > floor.Minor
	}
	return v.Build >= floor.Build
}

// hasIFIColumn: sys.dm_server_services.instant_file_initialization_enabled exists on 2012
// SP4 (11.0.7001) and 2016 SP1 (13.0.4001) and later majors.
// design/windows-behaviour.md#verifying-ifi-through-sql-server: 2014 is not
// documented (unverified), so the model leaves it out there: the provider must then treat
// IFI as unknown.
func (v version) hasIFIColumn() bool {
	switch v.Major {
	case 11:
		return v.atLeast(version{Major: 11, Minor: 0, Build: 7001})
	case 12:
		return false
	case 13:
		return v.atLeast(version{Major: 13, Minor: 0, Build: 4001})
	}
	return v.Major >= 14
}

// hasMemoryModelColumn: sys.dm_os_sys_info.sql_memory_model(_desc) exist from
// SQL Server 2016 SP1 (13.0.4001) on (the DMV's page).
func (v version) hasMemoryModelColumn() bool {
	return v.atLeast(version{Major: 13, Minor: 0, Build: 4001})
}

// writesIFILogLine: the startup line "Database Instant File Initialization:
// enabled|disabled" appears from 2012 SP4, 2014 SP2 and 2016
// (design/windows-behaviour.md#verifying-ifi-through-sql-server).
func (v version) writesIFILogLine() bool {
	switch v.Major {
	case 11:
		return v.atLeast(version{Major: 11, Minor: 0, Build: 7001})
	case 12:
		return v.atLeast(version{Major: 12, Minor: 0, Build: 5000})
	}
	return v.Major >= 13
}

// productLevel derives SERVERPROPERTY('ProductLevel') from the build: service pack
// baselines of 2012-2016; later versions ship only cumulative updates and say RTM.
func (v version) productLevel() string {
	type sp struct {
		build int
		level string
	}
	table := map[int][]sp{
		11: {{7001, "SP4"}, {6020, "SP3"}, {5058, "SP2"}, {3000, "SP1"}},
		12: {{6024, "SP3"}, {5000, "SP2"}, {4100, "SP1"}},
		13: {{6300, "SP3"}, {5026, "SP2"}, {4001, "SP1"}},
	}
	for _, e := range table[v.Major] {
		if v.Build >= e.build {
			return e.level
		}
	}
	return "RTM"
}

// productName is the marketing name written at the top of the error log.
func (v version) productName() string {
	switch v.Major {
	case 9:
		return "Microsoft SQL Server 2005"
	case 10:
		if v.Minor >= 50 {
			return "Microsoft SQL Server 2008 R2"
		}
		return "Microsoft SQL Server 2008"
	case 11:
		return "Microsoft SQL Server 2012"
	case 12:
		return "Microsoft SQL Server 2014"
	case 13:
		return "Microsoft SQL Server 2016"
	case 14:
		return "Microsoft SQL Server 2017"
	case 15:
		return "Microsoft SQL Server 2019"
	case 16:
		return "Microsoft SQL Server 2022"
	}
	return "Microsoft SQL Server 2025"
}

// Validate checks one host's configuration on its own and reports every problem:
// the one check of a host's settings, run by New and by the simulator's
// configuration loader.
func (c HostConfig) Validate() error {
	var errs []error
	if strings.TrimSpace(c.Name) == "" {
		errs = append(errs, errors.New(`host "name" is empty: give the host a name such as "sql01"`))
	}
	if c.UTCOffsetMinutes < -14*60 || c.UTCOffsetMinutes > 14*60 {
		errs = append(errs, fmt.Errorf(`"utc_offset_minutes" %d is outside -840..840`, c.UTCOffsetMinutes))
	}
	seen := map[string]bool{}
	for i, ic := range c.Instances {
		where := fmt.Sprintf("instances[%d] (%q)", i, ic.Name)
		if ic.Name == "" {
			errs = append(errs, fmt.Errorf(`%s: "name" is empty: use MSSQLSERVER for the default instance or a name such as REPORTING`, where))
			continue
		}
		if err := contract.ValidateInstanceName(ic.Name); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
		key := strings.ToUpper(ic.Name)
		if seen[key] {
			errs = append(errs, fmt.Errorf("%s: the instance is configured twice on this host", where))
		}
		seen[key] = true
		if ic.Version != "" {
			if _, err := parseVersion(ic.Version); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
			}
		}
		if ic.ServiceSIDType != nil && !validSIDType(*ic.ServiceSIDType) {
			errs = append(errs, fmt.Errorf(`%s: "service_sid_type" %d is not 0 (none), 1 (unrestricted) or 3 (restricted)`, where, *ic.ServiceSIDType))
		}
		for _, tf := range ic.StartupTraceFlags {
			if tf <= 0 || tf > 65535 {
				errs = append(errs, fmt.Errorf(`%s: trace flag %d is not a trace flag number`, where, tf))
			}
		}
		if ic.StartMS < 0 || ic.StopMS < 0 || ic.ReadyMS < 0 {
			errs = append(errs, fmt.Errorf(`%s: "start_ms", "stop_ms" and "ready_ms" must not be negative`, where))
		}
		if ic.ZeroMBPerSecond < 0 || (ic.IFIAllocMS != nil && *ic.IFIAllocMS < 0) {
			errs = append(errs, fmt.Errorf(`%s: "zero_mb_per_s" and "ifi_alloc_ms" must not be negative (leave them out for the defaults)`, where))
		}
		if ic.AvailabilityGroup != nil {
			if err := validateAG(*ic.AvailabilityGroup); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
			}
			if !ic.HADR() {
				errs = append(errs, fmt.Errorf(`%s: "availability_group" needs "hadr_enabled" true (or left out): an instance without Always On cannot be a replica`, where))
			}
		}
		if ic.HADR() {
			v, err := parseVersion(orDefault(ic.Version, DefaultVersion))
			if err == nil && v.Major < 11 {
				errs = append(errs, fmt.Errorf(`%s: Always On availability groups need SQL Server 2012 (11.x) or later, not version %s: drop "hadr_enabled" and "availability_group"`, where, v))
			}
		}
		if m := ic.MaxServerMemoryMB; m != nil && (*m < MinMaxServerMemoryMB || *m > contract.DefaultMaxServerMemoryMB) {
			errs = append(errs, fmt.Errorf(`%s: "max_server_memory_mb" %d is outside %d..%d, the range sp_configure accepts (leave it out for %d, no limit)`,
				where, *m, MinMaxServerMemoryMB, contract.DefaultMaxServerMemoryMB, contract.DefaultMaxServerMemoryMB))
		}
		if ic.Edition != "" && !knownEdition(ic.Edition) {
			errs = append(errs, fmt.Errorf(`%s: "edition" %q is not an edition SERVERPROPERTY('Edition') reports; use one such as %q, "Enterprise Edition (64-bit)", "Standard Edition (64-bit)" or "Express Edition (64-bit)"`,
				where, ic.Edition, DefaultEdition))
		}
		if ic.SQLPort < 0 || ic.SQLPort > 65535 {
			errs = append(errs, fmt.Errorf(`%s: "sql_port" %d is not a TCP port (0-65535; 0 picks a free one)`, where, ic.SQLPort))
		}
	}
	for i, sc := range c.Services {
		where := fmt.Sprintf("services[%d] (%q)", i, sc.Name)
		if sc.Name == "" {
			errs = append(errs, fmt.Errorf(`%s: "name" is empty`, where))
		}
		if sc.ServiceSIDType != nil && !validSIDType(*sc.ServiceSIDType) {
			errs = append(errs, fmt.Errorf(`%s: "service_sid_type" %d is not 0, 1 or 3`, where, *sc.ServiceSIDType))
		}
		if sc.StartMS < 0 || sc.StopMS < 0 {
			errs = append(errs, fmt.Errorf(`%s: "start_ms" and "stop_ms" must not be negative`, where))
		}
	}
	for _, l := range []struct {
		field string
		port  int
	}{{"http_port", c.WinRM.HTTPPort}, {"https_port", c.WinRM.HTTPSPort}} {
		if l.port < 0 || l.port > 65535 {
			errs = append(errs, fmt.Errorf(`winrm: "%s" %d is not a TCP port (0-65535; 0 picks a free one)`, l.field, l.port))
		}
	}
	switch strings.ToLower(c.WinRM.CBTHardeningLevel) {
	case "", "none", "relaxed", "strict":
	default:
		errs = append(errs, fmt.Errorf(`winrm.cbt_hardening_level %q: use "none", "relaxed" (the default) or "strict"`, c.WinRM.CBTHardeningLevel))
	}
	if _, err := CanonicalLanguageMode(c.PowerShellLanguageMode); err != nil {
		errs = append(errs, err)
	}
	if _, err := canonicalExecutionPolicy(c.GroupPolicyExecutionPolicy); err != nil {
		errs = append(errs, fmt.Errorf("group_policy_execution_policy: %w", err))
	}
	for _, l := range c.EndpointProtection.KillsPowerShellFrom {
		if l != LauncherWMI && l != LauncherTask {
			errs = append(errs, fmt.Errorf("endpoint_protection.kills_powershell_from: %q is not %q or %q", l, LauncherWMI, LauncherTask))
		}
	}
	for id, action := range c.Defender.ASRRules {
		if err := validateASRRule(id, action); err != nil {
			errs = append(errs, fmt.Errorf("defender.asr_rules: %w", err))
		}
	}
	if err := c.Cost.validate(); err != nil {
		errs = append(errs, err)
	}
	for i, u := range c.WinRM.Users {
		if strings.TrimSpace(u.Name) == "" {
			errs = append(errs, fmt.Errorf(`winrm.users[%d]: "name" is empty`, i))
		}
	}
	return errors.Join(errs...)
}

func validSIDType(t int) bool { return t == 0 || t == 1 || t == 3 }

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// PowerShell language modes the simulator models.
const (
	LanguageFull        = "FullLanguage"
	LanguageConstrained = "ConstrainedLanguage"
)

// ErrBadLanguageMode is wrapped by CanonicalLanguageMode's errors.
var ErrBadLanguageMode = errors.New("unknown PowerShell language mode")

// CanonicalLanguageMode spells a language mode as PowerShell does; "" is FullLanguage.
func CanonicalLanguageMode(mode string) (string, error) {
	switch {
	case mode == "" || strings.EqualFold(mode, LanguageFull):
		return LanguageFull, nil
	case strings.EqualFold(mode, LanguageConstrained):
		return LanguageConstrained, nil
	}
	return "", fmt.Errorf(`%w: "powershell_language_mode" %q: use %q (default) or %q`, ErrBadLanguageMode, mode, LanguageFull, LanguageConstrained)
}

// editionPrefixes are the editions SERVERPROPERTY('Edition') reports ("Enterprise
// Edition: Core-based Licensing (64-bit)", "Express Edition with Advanced Services
// (64-bit)", ...), by the words they begin with.
var editionPrefixes = []string{"Enterprise Edition", "Enterprise Evaluation Edition", "Standard Edition",
	"Developer Edition", "Express Edition", "Web Edition", "Business Intelligence Edition", "Workgroup Edition"}

// knownEdition says whether edition begins as one SQL Server reports.
func knownEdition(edition string) bool {
	for _, p := range editionPrefixes {
		if strings.HasPrefix(edition, p) {
			return true
		}
	}
	return false
}
