// Package hostsuite is the staged real-host suite (issue 17): it proves the
// provider's PowerShell, LSA calls, restart guard and SQL checks on a Windows host
// with SQL Server, in stages the user allows one by one:
//
//  1. preflight: read-only checks of everything the provider needs, each with what
//     to do when it is missing;
//  2. read: the data source and a plan for the resource, with the real terraform CLI;
//  3. change: grant and revoke with restart = "never", checked through the LSA and
//     the plan;
//  4. restart: grant with restart = "if_needed" on an instance named disposable,
//     with WinRM cut while the restart runs; then destroy;
//  5. seed: CREATE DATABASE timed with IFI off, then on;
//  6. cluster (optional): a node of a failover cluster instance, read, and with
//     MSSQLIFI_ACC_FCI_CHANGE granted on every possible owner with restart =
//     "never" and put back (cluster.go); never a failover nor a cluster restart.
//
// Each stage runs only when allowed (MSSQLIFI_ACC_STAGES) and every earlier stage
// passed, and prints "about to: ..." before each action. The command
// internal/hostsuite/cmd/hostsuite runs it; `make testacc-host` points it at a real
// host and `make testacc-host-sim` at the simulator, with the same variables.
// Nothing here imports internal/winsim: the suite runs against Windows as well.
package hostsuite

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// The suite's environment variables (docs: README "Development", /work spec of issue 17).
const (
	EnvHost        = "MSSQLIFI_ACC_HOST"
	EnvInstance    = "MSSQLIFI_ACC_INSTANCE"
	EnvAuth        = "MSSQLIFI_ACC_AUTH"
	EnvHTTPS       = "MSSQLIFI_ACC_HTTPS"
	EnvPort        = "MSSQLIFI_ACC_PORT"
	EnvInsecure    = "MSSQLIFI_ACC_INSECURE"
	EnvCACert      = "MSSQLIFI_ACC_CA_CERT"
	EnvSQLPort     = "MSSQLIFI_ACC_SQL_PORT"
	EnvSQLEncrypt  = "MSSQLIFI_ACC_SQL_ENCRYPT"
	EnvSQLCACert   = "MSSQLIFI_ACC_SQL_CA_CERT"
	EnvSQLTrust    = "MSSQLIFI_ACC_SQL_TRUST_SERVER_CERT"
	EnvStages      = "MSSQLIFI_ACC_STAGES"
	EnvDisposable  = "MSSQLIFI_ACC_DISPOSABLE_INSTANCE"
	EnvLocal       = "MSSQLIFI_ACC_LOCAL"
	EnvSimControl  = "MSSQLIFI_ACC_SIM_CONTROL"
	EnvSeedMB      = "MSSQLIFI_ACC_SEED_MB"
	EnvSeedUser    = "MSSQLIFI_ACC_SEED_SQL_USERNAME"
	EnvSeedPass    = "MSSQLIFI_ACC_SEED_SQL_PASSWORD"
	EnvDryRun      = "MSSQLIFI_ACC_DRY_RUN"
	EnvRecord      = "MSSQLIFI_ACC_RECORD"
	EnvFCINode     = "MSSQLIFI_ACC_FCI_NODE"
	EnvFCIInstance = "MSSQLIFI_ACC_FCI_INSTANCE"
	EnvFCISQLHost  = "MSSQLIFI_ACC_FCI_SQL_HOST"
	EnvFCINodes    = "MSSQLIFI_ACC_FCI_NODES"
	EnvFCIChange   = "MSSQLIFI_ACC_FCI_CHANGE"
	EnvWinRMUser   = "MSSQLIFI_WINRM_USERNAME"
	EnvWinRMPass   = "MSSQLIFI_WINRM_PASSWORD"
	EnvSQLUser     = "MSSQLIFI_SQL_USERNAME"
	EnvSQLPass     = "MSSQLIFI_SQL_PASSWORD"
	DefaultStages  = "preflight,read"
	// DefaultSeedMB is the seed's data file by default: the article's size
	// (articleSeedMB), so that a run with the defaults measures the figure the
	// article did and its ratio compares with the article's (output.go). It needs
	// that much free disk space for a moment.
	DefaultSeedMB  = articleSeedMB
	seedLogSizeMB  = 8
	seedDatabase   = "mssqlifi_hostsuite_seed"
	defaultAuthEnv = "negotiate"
)

// The SQL login's kind (sql, ntlm, kerberos; default from the user name, as the
// provider's sql.auth), and for kerberos the keytab and the SPN (default
// MSSQLSvc/<host>:<port>); krb5.conf is KRB5_CONFIG's, else /etc/krb5.conf.
const (
	EnvSQLAuth   = "MSSQLIFI_ACC_SQL_AUTH"
	EnvSQLKeytab = "MSSQLIFI_ACC_SQL_KEYTAB"
	EnvSQLSPN    = "MSSQLIFI_ACC_SQL_SPN"
)

// Stage names, in order.
const (
	StagePreflight = "preflight"
	StageRead      = "read"
	StageChange    = "change"
	StageRestart   = "restart"
	StageSeed      = "seed"
	// StageCluster is optional: a node of a failover cluster instance
	// (MSSQLIFI_ACC_FCI_NODE); it runs after the other allowed stages passed.
	StageCluster = "cluster"
)

// Stages lists the stages in the order they run.
var Stages = []string{StagePreflight, StageRead, StageChange, StageRestart, StageSeed, StageCluster}

// Config is the suite's settings, from the environment.
type Config struct {
	Host       string
	Instance   string
	Auth       string
	HTTPS      bool
	Port       int // 0: WinRM's default for the scheme
	Insecure   bool
	CACertPath string

	WinRMUser, WinRMPassword string
	SQLUser, SQLPassword     string
	SQLPort                  int // 0: the port the host reports
	SQLEncrypt               string
	SQLCACertPath            string
	SQLTrustServerCert       bool
	// SQLAuth is the login kind ("": from the user name); with "kerberos" the
	// login uses SQLPassword, else SQLKeytab, else the credential cache
	// (KRB5CCNAME), for SQLSPN ("": MSSQLSvc/<host>:<port>).
	SQLAuth, SQLKeytab, SQLSPN string

	Allowed    map[string]bool
	Disposable string
	Local      bool
	SimControl string
	SeedMB     int
	SeedUser   string
	SeedPass   string
	DryRun     bool
	RecordDir  string

	// The cluster stage's failover cluster instance: a node WinRM reaches (with the
	// settings above), the instance, where SQL Server answers (the virtual name;
	// "": as the cluster reports it), the nodes' addresses by node name, and the
	// consent to grant on every possible owner.
	FCINode     string
	FCIInstance string
	FCISQLHost  string
	FCINodes    map[string]string
	FCIChange   bool
}

// LoadConfig reads the suite's variables through getenv (os.Getenv in the command).
// The error lists every problem at once, each naming its variable.
func LoadConfig(getenv func(string) string) (Config, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	boolVar := func(name string, def bool) bool {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return def
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad("%s=%q: use true or false", name, v)
			return def
		}
		return b
	}
	intVar := func(name string, def, lo, hi int) int {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			bad("%s=%q: use a whole number from %d to %d", name, v, lo, hi)
			return def
		}
		return n
	}
	c := Config{
		Host:               strings.TrimSpace(getenv(EnvHost)),
		Instance:           strings.TrimSpace(getenv(EnvInstance)),
		Auth:               strings.ToLower(strings.TrimSpace(getenv(EnvAuth))),
		HTTPS:              boolVar(EnvHTTPS, false),
		Port:               intVar(EnvPort, 0, 1, 65535),
		Insecure:           boolVar(EnvInsecure, false),
		CACertPath:         getenv(EnvCACert),
		WinRMUser:          getenv(EnvWinRMUser),
		WinRMPassword:      getenv(EnvWinRMPass),
		SQLUser:            getenv(EnvSQLUser),
		SQLPassword:        getenv(EnvSQLPass),
		SQLPort:            intVar(EnvSQLPort, 0, 1, 65535),
		SQLEncrypt:         strings.ToLower(strings.TrimSpace(getenv(EnvSQLEncrypt))),
		SQLCACertPath:      getenv(EnvSQLCACert),
		SQLTrustServerCert: boolVar(EnvSQLTrust, false),
		SQLAuth:            strings.ToLower(strings.TrimSpace(getenv(EnvSQLAuth))),
		SQLKeytab:          getenv(EnvSQLKeytab),
		SQLSPN:             strings.TrimSpace(getenv(EnvSQLSPN)),
		Disposable:         strings.TrimSpace(getenv(EnvDisposable)),
		Local:              boolVar(EnvLocal, false),
		SimControl:         strings.TrimRight(strings.TrimSpace(getenv(EnvSimControl)), "/"),
		SeedMB:             intVar(EnvSeedMB, DefaultSeedMB, 1, 1<<20),
		SeedUser:           getenv(EnvSeedUser),
		SeedPass:           getenv(EnvSeedPass),
		DryRun:             boolVar(EnvDryRun, false),
		RecordDir:          getenv(EnvRecord),
		FCINode:            strings.TrimSpace(getenv(EnvFCINode)),
		FCIInstance:        strings.TrimSpace(getenv(EnvFCIInstance)),
		FCISQLHost:         strings.TrimSpace(getenv(EnvFCISQLHost)),
		FCIChange:          boolVar(EnvFCIChange, false),
	}
	if c.FCIInstance == "" {
		c.FCIInstance = contract.DefaultInstance
	} else if err := contract.ValidateInstanceName(c.FCIInstance); err != nil {
		bad("%s: %v", EnvFCIInstance, err)
	}
	c.FCINodes = map[string]string{}
	for _, pair := range strings.Split(getenv(EnvFCINodes), ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		name, addr, ok := strings.Cut(pair, "=")
		name, addr = strings.TrimSpace(name), strings.TrimSpace(addr)
		if !ok || name == "" || addr == "" {
			bad("%s has %q: write NODE=address pairs separated by commas (SQL03=10.0.0.13,SQL04=sql04.contoso.com)", EnvFCINodes, pair)
			continue
		}
		c.FCINodes[name] = addr
	}
	if c.Host == "" {
		bad("%s is not set: name the Windows host to test (DNS name or IP address)", EnvHost)
	}
	if c.Instance == "" {
		c.Instance = contract.DefaultInstance
	} else if err := contract.ValidateInstanceName(c.Instance); err != nil {
		bad("%s: %v", EnvInstance, err)
	}
	switch c.Auth {
	case "":
		c.Auth = defaultAuthEnv
	case "negotiate", "ntlm", "kerberos":
	default:
		bad("%s=%q: use negotiate, ntlm or kerberos", EnvAuth, c.Auth)
	}
	switch c.SQLEncrypt {
	case "", "strict", "true", "disable":
	default:
		bad("%s=%q: use strict, true or disable", EnvSQLEncrypt, c.SQLEncrypt)
	}
	if !c.DryRun && (c.WinRMUser == "" || c.WinRMPassword == "") {
		bad("%s and %s must both be set: the WinRM account (a local administrator of the host)", EnvWinRMUser, EnvWinRMPass)
	}
	switch c.SQLAuth {
	case "kerberos":
		if c.SQLUser == "" && (c.SQLPassword != "" || c.SQLKeytab != "") {
			bad("%s=kerberos with %s or %s needs %s: the Windows account (DOMAIN\\user or user@REALM) they belong to; with neither, the login uses the credential cache (kinit)", EnvSQLAuth, EnvSQLPass, EnvSQLKeytab, EnvSQLUser)
		}
	case "", "sql", "ntlm":
		if (c.SQLUser == "") != (c.SQLPassword == "") {
			bad("set both %s and %s (a login with VIEW SERVER STATE), or neither", EnvSQLUser, EnvSQLPass)
		}
		if c.SQLKeytab != "" || c.SQLSPN != "" {
			bad("%s and %s are used only with %s=kerberos", EnvSQLKeytab, EnvSQLSPN, EnvSQLAuth)
		}
	default:
		bad("%s=%q: use sql, ntlm or kerberos", EnvSQLAuth, c.SQLAuth)
	}
	if (c.SeedUser == "") != (c.SeedPass == "") {
		bad("set both %s and %s (a login in dbcreator), or neither", EnvSeedUser, EnvSeedPass)
	}
	stages := getenv(EnvStages)
	if strings.TrimSpace(stages) == "" {
		stages = DefaultStages
	}
	c.Allowed = map[string]bool{}
	for _, s := range strings.Split(stages, ",") {
		s = strings.ToLower(strings.TrimSpace(s))
		if s == "" {
			continue
		}
		if !knownStage(s) {
			bad("%s names %q: the stages are %s", EnvStages, s, strings.Join(Stages, ","))
			continue
		}
		c.Allowed[s] = true
	}
	if c.Disposable != "" && !strings.Contains(c.Disposable, "/") {
		bad("%s=%q names an instance only: name the host and the instance, %s (a consent left from another host's run must not allow restarts here)",
			EnvDisposable, c.Disposable, c.consentTarget())
	}
	for _, path := range []struct{ env, p string }{{EnvCACert, c.CACertPath}, {EnvSQLCACert, c.SQLCACertPath}, {EnvSQLKeytab, c.SQLKeytab}} {
		if path.p == "" || c.DryRun {
			continue
		}
		if _, err := os.Stat(path.p); err != nil {
			bad("%s=%q cannot be read: %v", path.env, path.p, err)
		}
	}
	return c, errors.Join(errs...)
}

func knownStage(s string) bool {
	for _, k := range Stages {
		if k == s {
			return true
		}
	}
	return false
}

// disposable reports whether the user named the tested host and instance disposable:
// EnvDisposable is HOST/INSTANCE and names both (case-insensitive), so a value left
// from another lab run does not consent to restarts on whatever host is tested now.
func (c Config) disposable() bool {
	host, instance, ok := strings.Cut(c.Disposable, "/")
	return ok && strings.EqualFold(strings.TrimSpace(host), c.Host) && strings.EqualFold(strings.TrimSpace(instance), c.Instance)
}

// consentTarget is the HOST/INSTANCE value EnvDisposable must have for this run.
func (c Config) consentTarget() string { return c.Host + "/" + c.Instance }

// consent says what EnvDisposable allows on this run, for the dry run and the skips.
func (c Config) consent() string {
	switch {
	case c.Disposable == "":
		return fmt.Sprintf("%s is not set: the restart and seed stages do not run (set it to %s to allow them)", EnvDisposable, c.consentTarget())
	case c.disposable():
		return fmt.Sprintf("%s=%s names this host and instance: the restart and seed stages may run (each still needs %s to name it)", EnvDisposable, c.Disposable, EnvStages)
	}
	return fmt.Sprintf("%s=%s does not name this host and instance (%s): the restart and seed stages do not run", EnvDisposable, c.Disposable, c.consentTarget())
}

// sqlKerberos: the SQL login logs on with Kerberos.
func (c Config) sqlKerberos() bool { return c.SQLAuth == "kerberos" }
