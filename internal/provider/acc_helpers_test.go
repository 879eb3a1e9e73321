package provider

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/addc"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// TestMain prepares the environment terraform-plugin-testing runs terraform in: a
// CLI configuration that exists (a TF_CLI_CONFIG_FILE naming a missing file breaks
// some terraform builds) and the local terraform binary (no download).
func TestMain(m *testing.M) {
	if os.Getenv("TF_ACC") != "" {
		dir, err := os.MkdirTemp("", "mssqlifi-acc-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "creating a temporary directory:", err)
			os.Exit(1)
		}
		cli := filepath.Join(dir, "terraform.rc")
		if err := os.WriteFile(cli, nil, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "writing an empty terraform CLI configuration:", err)
			os.Exit(1)
		}
		os.Setenv("TF_CLI_CONFIG_FILE", cli)
		if os.Getenv("TF_ACC_TERRAFORM_PATH") == "" {
			if _, err := os.Stat("/usr/local/bin/terraform"); err == nil {
				os.Setenv("TF_ACC_TERRAFORM_PATH", "/usr/local/bin/terraform")
			}
		}
		// The CLI tests' provider binary builds while the tests that run one after
		// another (before the parallel ones) run: the first CLI test then finds it
		// built (buildCLIProvider runs once; the others wait for it). Its error is
		// each CLI test's, from newCLI.
		go func() { _, _ = buildCLIProvider() }()
		code := addc.Main(m) // stops the AD DC the tests may have started
		removeCLIBuild()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(addc.Main(m))
}

// Credentials of the simulated hosts (loopback-only test fixtures).
const (
	accUser     = "Administrator"
	accPassword = "Acc-Adm1n-Pass!"
	accSQLUser  = "mssqlifi"
	accSQLPass  = "Acc-Sql1-Pass!"
	accDomSID   = "S-1-5-21-1004336348-1177238915-682003330"
	accSvcAcct  = `CONTOSO\sqlsvc`
	accSvcSID   = accDomSID + "-1105"
)

var protoV6Factories = map[string]func() (tfprotov6.ProviderServer, error){
	"mssqlifi": providerserver.NewProtocol6WithError(New("test")()),
}

// nextAddr hands every test its own loopback address, so hosts look like separate
// machines and tests can run in parallel.
var nextAddr atomic.Int32

// accEnv is one test's simulator with one host.
type accEnv struct {
	t         *testing.T
	sim       *winsim.Sim
	name      string
	addr      string
	httpsPort int
	httpPort  int
}

// accAuth is the WinRM authentication the tests use: ntlm (the provider's default)
// unless MSSQLIFI_ACC_AUTH says otherwise.
func accAuth() string {
	if a := os.Getenv("MSSQLIFI_ACC_AUTH"); a != "" {
		return a
	}
	return "ntlm"
}

// defaultHostConfig is a workgroup-style domain member with a default instance run
// by its virtual account, Windows' default holder of the right (Administrators),
// and a SQL login for verification.
func defaultHostConfig(name, addr string) host.HostConfig {
	return host.HostConfig{
		Name:    name,
		Address: addr,
		WinRM: host.WinRMConfig{
			Users: []host.UserConfig{{Name: accUser, Password: accPassword}},
		},
		Accounts: map[string]string{accSvcAcct: accSvcSID},
		Instances: []host.InstanceConfig{{
			Name:   "MSSQLSERVER",
			Logins: []host.LoginConfig{{Name: accSQLUser, Password: accSQLPass}},
		}},
	}
}

// startSim starts a simulator with one host, built from defaultHostConfig and mod.
func startSim(t *testing.T, mod func(*host.HostConfig)) *accEnv {
	t.Helper()
	n := nextAddr.Add(1)
	name := fmt.Sprintf("sql%02d", n)
	addr := fmt.Sprintf("127.0.0.%d", 10+n)
	hc := defaultHostConfig(name, addr)
	if mod != nil {
		mod(&hc)
	}
	sim, err := winsim.Start(&winsim.Config{Hosts: []host.HostConfig{hc}}, winsim.Options{CertDir: t.TempDir()})
	if err != nil {
		t.Fatalf("starting the simulator: %v", err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	e := &accEnv{t: t, sim: sim, name: name, addr: addr}
	for _, hi := range sim.Info().Hosts {
		if hi.Name == name {
			e.httpsPort = port(t, hi.WinRMHTTPS)
			e.httpPort = port(t, hi.WinRM)
		}
	}
	if e.httpsPort == 0 {
		t.Fatalf("the simulator reports no WinRM HTTPS listener for %s: %+v", name, sim.Info())
	}
	return e
}

func port(t *testing.T, hostport string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatalf("listener address %q: %v", hostport, err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// providerConfig is the provider block: WinRM over HTTPS with the simulator's CA,
// and SQL verification when withSQL.
func (e *accEnv) providerConfig(withSQL bool) string {
	return e.providerConfigWith(accPassword, withSQL)
}

// requiredProviders names the provider by its full source address: OpenTofu reads an
// unqualified "hashicorp/mssqlifi" as registry.opentofu.org/..., which is not the
// provider the test framework reattaches (an import-only first step then tries to
// download it).
const requiredProviders = `
terraform {
  required_providers {
    mssqlifi = {
      source = "registry.terraform.io/hashicorp/mssqlifi"
    }
  }
}
`

// sqlBlock is the provider's sql block for the test login, TLS verified against the
// simulator's CA.
func (e *accEnv) sqlBlock() string {
	return fmt.Sprintf(`
  sql {
    username = %q
    password = %q
    encrypt  = "true"
    ca_cert  = <<-EOT
%s
EOT
  }
`, accSQLUser, accSQLPass, strings.TrimSpace(string(e.sim.CACertPEM())))
}

func (e *accEnv) providerConfigWith(password string, withSQL bool) string {
	s := requiredProviders + fmt.Sprintf(`
provider "mssqlifi" {
  winrm {
    username = %q
    password = %q
    auth     = %q
    https    = true
    port     = %d
    ca_cert  = <<-EOT
%s
EOT
  }
`, accUser, password, accAuth(), e.httpsPort, strings.TrimSpace(string(e.sim.CACertPEM())))
	if withSQL {
		s += e.sqlBlock()
	}
	return s + "}\n"
}

func (e *accEnv) host() *host.Host {
	e.t.Helper()
	h, err := e.sim.Host(e.name)
	if err != nil {
		e.t.Fatalf("simulator host %s: %v", e.name, err)
	}
	return h
}

func (e *accEnv) instance(name string) host.InstanceSnapshot {
	e.t.Helper()
	for _, in := range e.host().Snapshot().Instances {
		if strings.EqualFold(in.Name, name) {
			return in
		}
	}
	e.t.Fatalf("simulator host %s has no instance %s", e.name, name)
	return host.InstanceSnapshot{}
}

// holds reports whether sid directly holds the right on the simulated host.
func (e *accEnv) holds(sid string) bool { return e.holdsRight(contract.RightManageVolume, sid) }

// holdsRight reports whether sid directly holds right on the simulated host.
func (e *accEnv) holdsRight(right, sid string) bool {
	for _, p := range e.host().Snapshot().Rights[right] {
		if strings.EqualFold(p.SID, sid) {
			return true
		}
	}
	return false
}

// engineStart is the process start time of the default instance's Engine (zero when stopped).
func (e *accEnv) engineStart() time.Time {
	for _, s := range e.host().Snapshot().Services {
		if strings.EqualFold(s.Name, "MSSQLSERVER") && s.ProcessStartTime != nil {
			return *s.ProcessStartTime
		}
	}
	return time.Time{}
}

// stops is how often the named service was stopped since the simulator started.
func (e *accEnv) stops(service string) int {
	for _, s := range e.host().Snapshot().Services {
		if strings.EqualFold(s.Name, service) {
			return s.Stops
		}
	}
	return 0
}

// operations lists the operations the host ran over WinRM, oldest first.
func (e *accEnv) operations() []string {
	var ops []string
	for _, a := range e.host().Audit() {
		ops = append(ops, a.Operation)
	}
	return ops
}

// check adapts a func to a TestCheckFunc.
func check(f func() error) func(*terraform.State) error {
	return func(*terraform.State) error { return f() }
}

// freePort returns a TCP port on addr that nothing listens on.
func freePort(t *testing.T, addr string) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	p := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return p
}

// wantStateOfHostAndPlanInPlace is two of the fault matrix's five checks, after an
// apply in w against e: the state's privilege_granted is what the host holds for
// sid, and the next plan runs and is empty or an update in place. It returns the
// state's attributes and the plan, and false when the plan itself failed.
func wantStateOfHostAndPlanInPlace(t *testing.T, w *cliWork, e *accEnv, sid, who string) (map[string]any, *tfRun, bool) {
	t.Helper()
	a := w.attrs()
	if granted, _ := a["privilege_granted"].(bool); granted != e.holds(sid) {
		t.Errorf("%sstate privilege_granted %v, the host holds the grant: %v", who, a["privilege_granted"], e.holds(sid))
	}
	p := w.plan()
	if p.Exit == 1 {
		t.Errorf("%sthe next plan failed:\n%s", who, p.describe())
		return a, p, false
	}
	for _, c := range p.Changes {
		if c.Action != "update" {
			t.Errorf("%sthe next plan has %s %s; want nothing or an update in place:\n%s", who, c.Action, c.Addr, p.describe())
		}
	}
	return a, p, true
}
