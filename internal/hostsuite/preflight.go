package hostsuite

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/hostsuite/transcript"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
)

func (s *Suite) planPreflight() []string {
	sql := "check the SQL login (" + EnvSQLUser + "): VIEW SERVER STATE (sys.dm_server_services), whether catalog views are visible, HADR as SQL Server reports it, the memory model (sys.dm_os_sys_info) and max server memory"
	switch {
	case s.cfg.sqlKerberos():
		sql = "check the SQL login by Kerberos (" + EnvSQLAuth + "=kerberos): krb5.conf, the credentials (" + kerberosSource(s.cfg) + "), a ticket for " +
			spnText(s.cfg) + " and SQL Server accepting it; then VIEW SERVER STATE (sys.dm_server_services), whether catalog views are visible, HADR as SQL Server reports it, the memory model (sys.dm_os_sys_info) and max server memory"
	case s.cfg.SQLUser == "":
		sql = "skip the SQL login's checks: " + EnvSQLUser + " is not set"
	}
	return []string{
		"connect to WinRM and run read_instance (reads only): reachability, the logon mechanism used, message encryption",
		"report Windows PowerShell's version and language mode (the bootstrap refuses anything but FullLanguage)",
		"report Get-ExecutionPolicy -List (a Group Policy scope overrides -ExecutionPolicy Bypass for script files)",
		"report the LSA read: the holders of " + contract.RightManageVolume + ", and whether the service SID is one",
		"report the same for " + contract.RightLockMemory + " (Lock Pages in Memory, and its Group Policy), and the error log's memory manager line",
		"report UAC's remote restrictions (LocalAccountTokenFilterPolicy) for a local account other than the built-in Administrator",
		"run read_host (every instance of the host in one powershell.exe, reads only) and check that its report of the instance is read_instance's",
		sql,
		"report the instance's failover-cluster and Always On (HADR) status",
	}
}

// preflight: read-only checks, each with what to do when it fails.
func (s *Suite) preflight(ctx context.Context) {
	var err error
	if s.sqlCfg, err = s.checkSQLConfig(); err != nil {
		s.p.fail("sql settings", "%v", err)
		return
	}
	s.p.about("connect to WinRM on %s and run read_instance for %s (reads only)", s.cfg.Host, s.cfg.Instance)
	if s.host, err = s.newHost(); err != nil {
		s.p.fail("winrm", "%v. Fix the setting it names (%s, %s, %s, %s)", err, EnvHTTPS, EnvPort, EnvAuth, EnvCACert)
		return
	}
	r, err := s.readInstance(ctx)
	if lr, ok := s.host.(remote.LogonReporter); ok {
		s.logon = lr.Logon()
	}
	var re *remote.Error
	errors.As(err, &re)
	switch {
	case err == nil:
		s.p.pass("winrm", "reached %s; logged on with %s (%s)", s.endpoint(), s.logon.Mechanism, s.logon.Why)
	case re != nil && re.Kind == remote.KindScript:
		// The shell ran: WinRM and the logon work, the script did not.
		s.p.pass("winrm", "reached %s; logged on with %s (%s)", s.endpoint(), s.logon.Mechanism, s.logon.Why)
	default:
		s.p.fail("winrm", "%v. %s", err, winrmRemedy(re))
		s.uac(err)
		return
	}
	s.encryption(ctx)
	if re != nil && re.Code == contract.CodeConstrainedLanguage {
		s.p.fail("powershell", "%s. Nothing was changed. Run the suite as a user whose PowerShell runs in FullLanguage, or allow the provider's scripts in the App Control / AppLocker policy", re.Message)
		return
	}
	if err != nil {
		s.p.fail("lsa read", "%v", err)
		s.uac(err)
		return
	}
	if !r.Found {
		s.p.fail("instance", "%s has no instance %s (installed: %s). Set %s to one of them", r.ComputerName, s.cfg.Instance,
			strings.Join(r.InstalledInstances, ", "), EnvInstance)
		return
	}
	ver := r.PowerShellVersion
	if ver == "" {
		ver = "not reported by this host"
	}
	s.p.pass("powershell", "Windows PowerShell %s in FullLanguage mode (the bootstrap refuses any other mode before it reads its input)", ver)
	s.executionPolicy(r)
	s.before, s.serviceSID = r, serviceSIDOf(r)
	s.p.pass("lsa read", "%d holder(s) of %s; the service SID %s (NT SERVICE\\%s) holds it: %s; Engine %s is %s",
		len(r.RightHolders), contract.RightManageVolume, s.serviceSID, r.ServiceName, yesNo(holds(r, s.serviceSID)), r.ServiceName, r.ServiceState)
	s.lockPages(r)
	s.uac(nil)
	s.hostRead(ctx, r)
	s.sqlPort = s.cfg.SQLPort
	if s.sqlPort == 0 {
		s.sqlPort = r.TCPPort
	}
	s.sqlChecks(ctx)
	s.hadr(r)
	s.describe(r)
}

// lockPages reports the read of Lock Pages in Memory's right (its holders and
// Group Policy, which read_instance makes whatever right it names) and the memory
// model the error log's startup line says the Engine started with.
func (s *Suite) lockPages(r *contract.ReadInstanceResult) {
	lp := r.LockPages
	if lp == nil {
		s.p.fail("lock pages read", "read_instance did not report lock_pages (the holders of %s): the host ran scripts older than this suite's; report this with the transcript", contract.RightLockMemory)
		return
	}
	policy := "unknown (" + lp.GroupPolicy.Detail + ")"
	if lp.GroupPolicy.Known {
		policy = yesNo(lp.GroupPolicy.Defined)
	}
	s.p.pass("lock pages read", "%d holder(s) of %s; the service SID holds it: %s; a Group Policy defines it: %s; %s",
		len(lp.Holders), lp.Right, yesNo(holdsSID(lp.Holders, s.serviceSID)), policy, memoryLineText(r.ErrorLog))
}

// memoryLineText says what the error log's memory manager line reports.
func memoryLineText(el contract.ErrorLogInfo) string {
	if el.MemoryLine == "" {
		return "the current error log has no memory manager line in its startup section (SQL Server before 2012 words it otherwise)"
	}
	return "the error log's memory manager line says " + el.MemoryModel
}

func (s *Suite) endpoint() string {
	scheme, port := "http", remote.DefaultHTTPPort
	if s.cfg.HTTPS {
		scheme, port = "https", remote.DefaultHTTPSPort
	}
	if s.cfg.Port != 0 {
		port = s.cfg.Port
	}
	return fmt.Sprintf("%s://%s:%d/wsman", scheme, s.cfg.Host, port)
}

func winrmRemedy(re *remote.Error) string {
	if re == nil {
		return ""
	}
	switch re.Kind {
	case remote.KindUnreachable:
		return "On the host: Enable-PSRemoting -Force (HTTP 5985), open the firewall for the listener's port, or set " + EnvPort + "/" + EnvHTTPS + " to the listener that exists"
	case remote.KindAuth:
		return "Check " + EnvWinRMUser + "/" + EnvWinRMPass + "; the account must be a local administrator of the host (or in Remote Management Users, which is not enough for the LSA)"
	case remote.KindTLS:
		return "Give the CA of the listener's certificate in " + EnvCACert + " (or " + EnvInsecure + "=true for a throw-away test host)"
	}
	return ""
}

// encryption reports how the messages were protected; over HTTP it also sends one
// unsealed body, which a listener with AllowUnencrypted false (Windows' default)
// refuses.
func (s *Suite) encryption(ctx context.Context) {
	if !s.cfg.HTTPS && s.cfg.Auth != "kerberos" {
		port := s.cfg.Port
		if port == 0 {
			port = remote.DefaultHTTPPort
		}
		s.p.about("send one unsealed WS-Management body (a shell's Create, as masterzen/winrm's NTLM client sends it) to the HTTP listener: it must be refused")
		shape, err := transcript.ProbeClearTextBody(ctx, s.cfg.Host, port, s.cfg.WinRMUser, s.cfg.WinRMPassword)
		s.opt.Recorder.Error(s.p.stage, transcript.ProbeClearText, shape, err)
		switch {
		case err == nil && shape.HTTPStatus == http.StatusOK:
			s.p.fail("encryption", "the HTTP listener accepted an unsealed body: the WinRM service allows unencrypted messages. "+
				"On the host: winrm set winrm/config/service '@{AllowUnencrypted=\"false\"}'")
			return
		case shape.HTTPStatus == 0:
			s.p.fail("encryption", "the unsealed probe got no HTTP answer: %v", err)
			return
		}
		s.p.pass("encryption", "HTTP with every message sealed by the %s logon; an unsealed body was refused (HTTP %d%s)",
			s.logon.Mechanism, shape.HTTPStatus, faultText(shape))
		return
	}
	switch {
	case s.cfg.HTTPS && s.cfg.Insecure:
		s.p.pass("encryption", "HTTPS (TLS); the certificate was NOT verified (%s=true): use %s for anything but a throw-away host", EnvInsecure, EnvCACert)
	case s.cfg.HTTPS:
		s.p.pass("encryption", "HTTPS (TLS), the listener's certificate verified")
	default:
		s.p.pass("encryption", "HTTP with every message sealed by the Kerberos logon (the unsealed probe logs on with NTLM, so it was not sent)")
	}
}

func faultText(shape transcript.ErrorShape) string {
	if shape.FaultCode != "" {
		return ", WS-Management fault " + shape.FaultCode
	}
	return ""
}

// localNonBuiltin reports whether user names a local account other than the
// built-in Administrator (UAC's remote restrictions filter exactly those).
func localNonBuiltin(user string, computers ...string) (local, builtin bool) {
	if strings.Contains(user, "@") {
		return false, false
	}
	name := user
	if i := strings.LastIndex(user, `\`); i >= 0 {
		dom := user[:i]
		name = user[i+1:]
		known := dom == "." || strings.EqualFold(dom, "localhost")
		for _, c := range computers {
			known = known || c != "" && strings.EqualFold(dom, c)
		}
		if !known {
			return false, false
		}
	}
	return true, strings.EqualFold(name, "Administrator")
}

// uac reports UAC's remote restrictions, from what the logon and the LSA did (err
// is the failure of the first operation, nil when it worked).
func (s *Suite) uac(err error) {
	var computers []string
	if s.before != nil {
		computers = append(computers, s.before.ComputerName)
	}
	if s.cfg.Local { // the suite runs on the host: its name is this machine's
		if name, err := os.Hostname(); err == nil {
			computers = append(computers, strings.SplitN(name, ".", 2)[0])
		}
	}
	local, builtin := localNonBuiltin(s.cfg.WinRMUser, computers...)
	const fix = `set LocalAccountTokenFilterPolicy to 1 on the host (New-ItemProperty -Path HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\Policies\System -Name LocalAccountTokenFilterPolicy -Value 1 -PropertyType DWord -Force), or use the built-in Administrator or a domain account`
	switch {
	case !local:
		s.p.skip("uac remote restrictions", "a domain account: UAC's remote restrictions filter local accounts only")
	case builtin:
		s.p.pass("uac remote restrictions", "the built-in Administrator is not filtered (unless FilterAdministratorToken is set)")
	case err == nil:
		s.p.pass("uac remote restrictions", "the local account %s kept its administrator token over the network (LocalAccountTokenFilterPolicy is 1)", s.cfg.WinRMUser)
	default:
		var re *remote.Error
		denied := errors.As(err, &re) && (re.Kind == remote.KindAuth || re.Code == "lsa_error" ||
			strings.Contains(strings.ToLower(re.Message), "access is denied"))
		if denied {
			s.p.fail("uac remote restrictions", "%s is a local account other than the built-in Administrator and was refused: UAC's remote restrictions probably filtered its administrator token. To fix: %s", s.cfg.WinRMUser, fix)
		} else {
			s.p.skip("uac remote restrictions", "cannot tell: the logon failed for another reason (above)")
		}
	}
}

// sqlChecks: the SQL login's permissions and what it sees.
func (s *Suite) sqlChecks(ctx context.Context) {
	if s.sqlCfg == nil {
		s.p.skip("sql login", "%s is not set: the provider then verifies IFI through the error log only. Create a login with VIEW SERVER STATE (CREATE LOGIN ...; GRANT VIEW SERVER STATE TO ...) and set %s/%s", EnvSQLUser, EnvSQLUser, EnvSQLPass)
		return
	}
	if s.cfg.sqlKerberos() {
		if err := s.sqlCfg.CheckKerberos(); err != nil {
			s.p.fail("sql kerberos", "%v. Fix krb5.conf (KRB5_CONFIG), %s or %s, or run kinit for the credential cache", err, EnvSQLKeytab, EnvSQLPass)
			return
		}
		s.p.about("log in to SQL Server at %s:%d by Kerberos (%s) for %s and read sys.dm_server_services (reads only)", s.cfg.Host, s.sqlPort, kerberosSource(s.cfg), s.sqlCfg.SPNFor(s.sqlTarget()))
	} else {
		s.p.about("log in to SQL Server at %s:%d as %s and read sys.dm_server_services (reads only)", s.cfg.Host, s.sqlPort, s.cfg.SQLUser)
	}
	rep, err := sqlcheck.New(*s.sqlCfg).Check(ctx, s.sqlTarget())
	if s.cfg.sqlKerberos() && err == nil {
		s.p.pass("sql kerberos", "SQL Server accepted the Kerberos login (%s) for %s", kerberosSource(s.cfg), s.sqlCfg.SPNFor(s.sqlTarget()))
	}
	if s.opt.Recorder != nil {
		// The transcript holds the provider's own queries' columns, types and rows.
		for _, q := range []string{contract.QueryServerProperties, contract.QueryServerServices, contract.QueryHADREnabled} {
			_, _ = s.query(ctx, s.sqlCfg, q)
		}
	}
	var se *sqlcheck.Error
	switch {
	case err == nil:
		ifi := "NULL"
		if rep.IFIEnabled != nil {
			ifi = map[bool]string{true: "Y", false: "N"}[*rep.IFIEnabled]
		}
		s.sqlRep = rep
		s.p.pass("view server state", "sys.dm_server_services answered: SQL Server %s %s, instant_file_initialization_enabled = %s", rep.ProductVersion, rep.Edition, ifi)
	case errors.As(err, &se) && se.Kind == sqlcheck.KindPermission:
		s.p.fail("view server state", "%v. Run on the instance: GRANT VIEW SERVER STATE TO [%s]", err, s.cfg.SQLUser)
		return
	default:
		s.p.fail("sql login", "%v", err)
		return
	}
	s.catalog(ctx, rep)
	s.memory(ctx)
}

// memory reads the memory model the running Engine started with and max server
// memory as the provider's queries do (contract.QueryMemory; QueryMaxServerMemory
// where sys.dm_os_sys_info has no sql_memory_model_desc, before SQL Server 2016
// SP1: error 207), and says whether the error log's memory manager line agrees.
func (s *Suite) memory(ctx context.Context) {
	s.p.about("read the memory model (sys.dm_os_sys_info) and max server memory (sys.configurations) (reads only)")
	rows, err := s.query(ctx, s.sqlCfg, contract.QueryMemory)
	dmv := true
	var numbered interface{ SQLErrorNumber() int32 }
	if errors.As(err, &numbered) && numbered.SQLErrorNumber() == contract.SQLErrInvalidColumn {
		dmv = false
		rows, err = s.query(ctx, s.sqlCfg, contract.QueryMaxServerMemory)
	}
	if err != nil || len(rows) != 1 {
		s.p.fail("memory model", "%v (%d row(s)): the provider reads Lock Pages in Memory's effect with this query", err, len(rows))
		return
	}
	maxMB := fmt.Sprint(rows[0][len(rows[0])-1]) + " MB"
	if maxMB == fmt.Sprint(contract.DefaultMaxServerMemoryMB)+" MB" {
		maxMB += " (the default: no limit)"
	}
	logModel := "no memory manager line in the error log"
	if s.before != nil && s.before.ErrorLog.MemoryModel != "" {
		logModel = "the error log says " + s.before.ErrorLog.MemoryModel
	}
	if !dmv {
		s.p.pass("memory model", "this build's sys.dm_os_sys_info has no sql_memory_model_desc (error 207, before SQL Server 2016 SP1); %s; max server memory %s", logModel, maxMB)
		return
	}
	model := fmt.Sprint(rows[0][0])
	if s.before != nil && s.before.ErrorLog.MemoryModel != "" && s.before.ErrorLog.MemoryModel != model {
		s.p.fail("memory model", "sys.dm_os_sys_info says %s but %s: the Engine may have restarted since read_instance; run the suite again, and report it with the transcript if it stays", model, logModel)
		return
	}
	s.p.pass("memory model", "sys.dm_os_sys_info says %s; %s; max server memory %s", model, logModel, maxMB)
}

// catalog checks whether catalog views show this login what the DMVs show: the
// provider relies on DMVs only, because without VIEW ANY DEFINITION a catalog view
// such as sys.availability_groups shows no rows, and no error.
func (s *Suite) catalog(ctx context.Context, rep *contract.SQLReport) {
	if !rep.HADREnabled {
		s.p.skip("catalog views", "Always On is off, so sys.availability_groups has no rows to hide: visibility cannot be told here (the provider reads DMVs only)")
		return
	}
	s.p.about("compare sys.dm_hadr_name_id_map (a DMV) with sys.availability_groups (a catalog view) (reads only)")
	dmv, err := s.queryColumn(ctx, s.sqlCfg, "SELECT ag_name FROM sys.dm_hadr_name_id_map")
	if err != nil {
		s.p.fail("catalog views", "%v", err)
		return
	}
	cat, err := s.queryColumn(ctx, s.sqlCfg, "SELECT name FROM sys.availability_groups")
	if err != nil {
		s.p.fail("catalog views", "%v", err)
		return
	}
	if len(cat) < len(dmv) {
		s.p.pass("catalog views", "hidden from this login: the DMV lists %d group(s), sys.availability_groups %d (no VIEW ANY DEFINITION); the provider does not need them", len(dmv), len(cat))
		return
	}
	s.catalogVisible = true
	s.p.pass("catalog views", "visible: sys.availability_groups lists the %d group(s) the DMV lists", len(dmv))
}

func (s *Suite) hadr(r *contract.ReadInstanceResult) {
	if r.Clustered {
		s.p.pass("cluster", "%s is a failover cluster instance: the resource never restarts it (stages restart and seed would be refused)", r.Instance)
	} else {
		s.p.pass("cluster", "not a failover cluster instance")
	}
	h := r.HADR
	if h == nil {
		s.p.skip("hadr", "the host did not report the HADR registry key")
		return
	}
	enabled := "absent"
	if h.Enabled != nil {
		enabled = fmt.Sprint(*h.Enabled)
	}
	owned := "none"
	if len(h.OwnedGroups) > 0 {
		owned = strings.Join(h.OwnedGroups, ", ")
	}
	sqlSays := "SQL Server not asked (no SQL login)"
	if rep := s.sqlRep; rep != nil {
		var local []string
		for _, r := range rep.Replicas {
			if r.Local {
				local = append(local, fmt.Sprintf("%s %s (%s, %s)", r.Group, r.Role, r.Connected, r.Health))
			}
		}
		if len(local) == 0 {
			local = []string{"none"}
		}
		sqlSays = fmt.Sprintf("SQL Server: IsHadrEnabled %s, this instance's replicas: %s", yesNo(rep.HADREnabled), strings.Join(local, "; "))
	}
	s.p.pass("hadr", "registry HADR_Enabled %s; failover cluster node: %s; groups whose primary this node holds: %s; %s", enabled, yesNo(h.ClusterKnown), owned, sqlSays)
}

// kerberosSource says where the SQL Kerberos login's credentials come from.
func kerberosSource(c Config) string {
	switch {
	case c.SQLPassword != "":
		return c.SQLUser + " with " + EnvSQLPass
	case c.SQLKeytab != "":
		return c.SQLUser + " with the keytab " + c.SQLKeytab
	}
	return "the credential cache of KRB5CCNAME"
}

// spnText is the SQL SPN the preflight asks a ticket for.
func spnText(c Config) string {
	if c.SQLSPN != "" {
		return c.SQLSPN
	}
	return "MSSQLSvc/<host>:<port> (" + EnvSQLSPN + " to name another)"
}

// executionPolicy reports Get-ExecutionPolicy -List as read_instance's process saw
// it. A Group Policy scope (MachinePolicy, UserPolicy) overrides -ExecutionPolicy
// Bypass for script files (-File), not for -EncodedCommand: news for the restart's
// guard, not a failure of the preflight.
func (s *Suite) executionPolicy(r *contract.ReadInstanceResult) {
	if r.ExecutionPolicies == nil {
		s.p.pass("execution policy", "not reported by this host")
		return
	}
	rows := make([]string, 0, len(r.ExecutionPolicies))
	gpo := ""
	for _, e := range r.ExecutionPolicies {
		rows = append(rows, e.Scope+"="+e.Policy)
		if (e.Scope == "MachinePolicy" || e.Scope == "UserPolicy") && e.Policy != "Undefined" && gpo == "" {
			gpo = fmt.Sprintf("; Group Policy sets %s (%s): it overrides -ExecutionPolicy Bypass for script files (-File)", e.Policy, e.Scope)
		}
	}
	s.p.pass("execution policy", "Get-ExecutionPolicy -List: %s%s", strings.Join(rows, ", "), gpo)
}
