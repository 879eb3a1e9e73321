package hostsuite

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/hostsuite/transcript"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// Options are the command's settings that are not the host's.
type Options struct {
	Out io.Writer
	// ProviderDir holds the terraform-provider-mssqlifi binary terraform uses
	// (dev_overrides), as make build leaves it in bin/.
	ProviderDir string
	// Terraform is the terraform (or OpenTofu) binary; "": terraform on PATH.
	Terraform string
	// Recorder, when not nil, receives every operation's raw answer, the error
	// shapes met and every SQL result (MSSQLIFI_ACC_RECORD; NewRecorder).
	Recorder *transcript.Recorder
	// StepTimeout bounds each terraform run and each wait; 0: 30 minutes.
	StepTimeout time.Duration
}

// Report is what a run found.
type Report struct {
	Header  string
	Results []Result
	Seed    *Measurement
}

// OK reports whether no check failed.
func (r Report) OK() bool {
	_, f, _ := count(r.Results)
	return f == 0
}

// Suite is one run of the stages against one host.
type Suite struct {
	cfg Config
	opt Options
	p   printer
	rep Report

	host   contract.Host // operations, recorded when a Recorder is set
	logon  remote.Logon
	sqlCfg *sqlcheck.Config    // nil: no SQL login given
	sqlRep *contract.SQLReport // the preflight's SQL check; nil without a SQL login
	// catalogVisible: the catalog views showed the groups the DMVs list.
	catalogVisible bool
	// before is the instance as the preflight found it; the stages that change the
	// right leave it as it was there.
	before     *contract.ReadInstanceResult
	serviceSID string
	sqlPort    int
	tf         *terraform
}

// Run runs the allowed stages (or, with cfg.DryRun, prints them) and the results table.
func Run(ctx context.Context, cfg Config, opt Options) Report {
	if opt.Out == nil {
		opt.Out = os.Stdout
	}
	if opt.StepTimeout <= 0 {
		opt.StepTimeout = 30 * time.Minute
	}
	s := &Suite{cfg: cfg, opt: opt}
	s.p = printer{w: opt.Out, res: &s.rep.Results}
	s.rep.Header = s.header()
	s.p.line("%s", s.rep.Header)
	if cfg.DryRun {
		s.p.line("consent: %s", cfg.consent())
	}
	defer func() {
		if s.tf != nil {
			s.tf.close()
		}
	}()
	stages := []struct {
		name string
		run  func(context.Context)
		plan func() []string
	}{
		{StagePreflight, s.preflight, s.planPreflight},
		{StageRead, s.read, s.planRead},
		{StageChange, s.change, s.planChange},
		{StageRestart, s.restart, s.planRestart},
		{StageSeed, s.seedStage, s.planSeed},
		{StageCluster, s.cluster, s.planCluster},
	}
	earlierPassed := true
	for i, st := range stages {
		s.p.stage = st.name
		s.p.line("")
		s.p.line("== stage %d: %s ==", i+1, st.name)
		why := s.notRunning(st.name, earlierPassed)
		if st.name == StageCluster {
			why = s.clusterNotRunning()
		}
		if cfg.DryRun {
			s.dryRun(why, st.plan())
			continue
		}
		if why != "" {
			s.p.skip("stage", "%s", why)
			earlierPassed = false
			continue
		}
		n := len(s.rep.Results)
		st.run(ctx)
		for _, r := range s.rep.Results[n:] {
			if r.Status == Fail {
				earlierPassed = false
			}
		}
	}
	s.p.line("")
	WriteTable(opt.Out, s.rep.Results, s.rep.Seed)
	return s.rep
}

// notRunning says why a stage does not run ("" when it runs).
func (s *Suite) notRunning(stage string, earlierPassed bool) string {
	switch {
	case !s.cfg.Allowed[stage]:
		return fmt.Sprintf("not allowed: %s does not name %s (it is %q)", EnvStages, stage, s.allowedList())
	case !earlierPassed && !s.cfg.DryRun:
		return "an earlier stage did not pass, or did not run"
	case (stage == StageRestart || stage == StageSeed) && !s.cfg.disposable():
		return fmt.Sprintf("it restarts SQL Server: set %s=%s to name the host and instance disposable (a second, explicit consent); now: %s", EnvDisposable, s.cfg.consentTarget(), s.cfg.consent())
	case stage == StageSeed && s.cfg.SeedUser == "":
		return fmt.Sprintf("no login that may CREATE DATABASE: set %s and %s (a login in dbcreator)", EnvSeedUser, EnvSeedPass)
	}
	return ""
}

func (s *Suite) allowedList() string {
	var out []string
	for _, st := range Stages {
		if s.cfg.Allowed[st] {
			out = append(out, st)
		}
	}
	return strings.Join(out, ",")
}

func (s *Suite) dryRun(why string, plan []string) {
	if why != "" {
		s.p.line("would skip: %s", why)
	} else {
		s.p.line("would run, if every earlier stage passes:")
	}
	for _, l := range plan {
		s.p.line("  would: %s", l)
	}
	s.p.skip("stage", "dry run: nothing contacted, nothing changed")
}

func (s *Suite) header() string {
	scheme := "HTTP (messages sealed by the logon)"
	if s.cfg.HTTPS {
		scheme = "HTTPS"
	}
	port := s.cfg.Port
	if port == 0 {
		port = remote.DefaultHTTPPort
		if s.cfg.HTTPS {
			port = remote.DefaultHTTPSPort
		}
	}
	mode := ""
	if s.cfg.DryRun {
		mode = " (dry run: nothing is contacted, nothing changes)"
	}
	return fmt.Sprintf("hostsuite: host %s, instance %s, WinRM %s port %d, auth %s, stages allowed: %s%s",
		s.cfg.Host, s.cfg.Instance, scheme, port, s.cfg.Auth, s.allowedList(), mode)
}

// remoteConfig is the WinRM configuration of the suite's own operations.
func (s *Suite) remoteConfig() (remote.Config, error) {
	c := remote.Config{
		Host: s.cfg.Host, Port: s.cfg.Port, HTTPS: s.cfg.HTTPS, Insecure: s.cfg.Insecure,
		Auth: s.cfg.Auth, Username: s.cfg.WinRMUser, Password: s.cfg.WinRMPassword,
		UserAgent: contract.UserAgent("hostsuite"),
	}
	pem, err := readPEM(EnvCACert, s.cfg.CACertPath)
	c.CACert = pem
	return c, err
}

// readPEM reads the CA certificate file a variable names ("": none).
func readPEM(env, path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", env, err)
	}
	return pem, nil
}

// newHost connects the tested host for the suite's own operations (recorded when asked).
func (s *Suite) newHost() (contract.Host, error) { return s.newHostAt(s.cfg.Host) }

// newHostAt connects a host at address with the tested host's WinRM settings (the
// cluster stage's nodes).
func (s *Suite) newHostAt(address string) (contract.Host, error) {
	rc, err := s.remoteConfig()
	if err != nil {
		return nil, err
	}
	rc.Host = address
	if rec := s.opt.Recorder; rec != nil {
		rc.Answer = func(op contract.Operation, params any, exitCode int, stdout, stderr []byte) {
			rec.Operation(s.p.stage, string(op), params, exitCode, stdout, stderr)
		}
	}
	h, err := remote.New(rc)
	if err != nil {
		return nil, err
	}
	if s.opt.Recorder != nil {
		return &recordingHost{h: h, rec: s.opt.Recorder, stage: func() string { return s.p.stage }}, nil
	}
	return h, nil
}

func (s *Suite) sqlConfig(user, pass string) (*sqlcheck.Config, error) {
	if user == "" {
		return nil, nil
	}
	c := &sqlcheck.Config{Username: user, Password: pass, Encrypt: s.cfg.SQLEncrypt,
		TrustServerCertificate: s.cfg.SQLTrustServerCert, AppName: contract.UserAgent("hostsuite")}
	if sqlcheck.WindowsLogon(user) {
		c.Auth = sqlcheck.AuthNTLM
	}
	return s.withSQLTLS(c)
}

// checkSQLConfig is the SQL check's login (MSSQLIFI_SQL_USERNAME, or with
// MSSQLIFI_ACC_SQL_AUTH=kerberos a Kerberos login, from the credential cache when
// no user is set); nil when none is configured.
func (s *Suite) checkSQLConfig() (*sqlcheck.Config, error) {
	if !s.cfg.sqlKerberos() {
		c, err := s.sqlConfig(s.cfg.SQLUser, s.cfg.SQLPassword)
		if c != nil && s.cfg.SQLAuth != "" {
			c.Auth = s.cfg.SQLAuth
		}
		return c, err
	}
	c := &sqlcheck.Config{Auth: sqlcheck.AuthKerberos, Username: s.cfg.SQLUser, Password: s.cfg.SQLPassword, Keytab: s.cfg.SQLKeytab,
		SPN: s.cfg.SQLSPN, Encrypt: s.cfg.SQLEncrypt, TrustServerCertificate: s.cfg.SQLTrustServerCert, AppName: contract.UserAgent("hostsuite")}
	return s.withSQLTLS(c)
}

// withSQLTLS adds the SQL CA certificate to c.
func (s *Suite) withSQLTLS(c *sqlcheck.Config) (*sqlcheck.Config, error) {
	pem, err := readPEM(EnvSQLCACert, s.cfg.SQLCACertPath)
	if err != nil {
		return nil, err
	}
	c.CACert = pem
	return c, nil
}

func (s *Suite) sqlTarget() sqlcheck.Target {
	return sqlcheck.Target{Host: s.cfg.Host, Port: s.sqlPort, Instance: s.cfg.Instance}
}

// read reads the instance through read_instance.
func (s *Suite) readInstance(ctx context.Context) (*contract.ReadInstanceResult, error) {
	return s.host.ReadInstance(ctx, contract.ReadInstanceParams{Instance: s.cfg.Instance, Right: contract.RightManageVolume})
}

// holds reports whether the service SID directly holds the right.
func holds(r *contract.ReadInstanceResult, sid string) bool { return holdsSID(r.RightHolders, sid) }

// holdsSID reports whether sid is one of the holders.
func holdsSID(holders []contract.Principal, sid string) bool {
	for _, p := range holders {
		if strings.EqualFold(p.SID, sid) {
			return true
		}
	}
	return false
}

func (s *Suite) initialHolds() bool { return s.before != nil && holds(s.before, s.serviceSID) }

func serviceSIDOf(r *contract.ReadInstanceResult) string { return winsid.ServiceSID(r.ServiceName) }

// yesNo spells a bool for details.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
