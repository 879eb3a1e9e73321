package winsim_test

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/masterzen/winrm"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/addc"
)

func TestMain(m *testing.M) { os.Exit(addc.Main(m)) }

// The Kerberos tests of the simulator run against the Samba AD DC (addc): a domain
// user, the host's computer account with its HTTP and SQL Server SPNs, and another
// host's computer account with its SQL Server SPN.
const (
	simUser     = "simdba"
	simPass     = "Sim-Dba-Secret-1"
	simHost     = "SQLSIM"
	simSPN      = "HTTP/sqlsim.contoso.test"
	simSQLSPN   = "MSSQLSvc/sqlsim.contoso.test:1433"
	otherSQLSPN = "MSSQLSvc/sqlsim2.contoso.test:1433"
)

var simAccounts sync.Once

// simDC is the process's DC with the accounts of these tests, created once.
func simDC(t *testing.T) *addc.DC {
	t.Helper()
	dc := addc.Shared(t)
	simAccounts.Do(func() {
		dc.AddUser(t, simUser, simPass)
		dc.AddComputer(t, simHost)
		dc.AddSPN(t, simHost+"$", simSQLSPN)
		dc.AddComputer(t, "SQLSIM2")
		dc.AddSPN(t, "SQLSIM2$", otherSQLSPN)
	})
	return dc
}

// A host configured with "winrm.kerberos" (realm and the keytab of its HTTP
// service principal) accepts a domain user's Kerberos logon with sealed messages
// and refuses clear text; read_instance runs as the domain user.
func TestKerberosHostFromConfig(t *testing.T) {
	dc := simDC(t)
	keytab := dc.HostKeytab(t, simHost, simSPN)
	raw := fmt.Sprintf(`{"hosts": [{"name": "sql01", "address": "127.0.0.31", "domain": %q,
		"winrm": {"basic": false, "kerberos": {"realm": %q, "keytab": %q},
			"users": [{"name": %q, "password": %q}]},
		"instances": [{"name": "MSSQLSERVER"}]}]}`, addc.NetBIOS, dc.Realm, keytab, addc.NetBIOS+`\`+simUser, simPass)
	cfg, err := winsim.ParseConfig([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	sim, err := winsim.Start(cfg, winsim.Options{CertDir: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	host, port, _ := net.SplitHostPort(sim.Info().Hosts[0].WinRM)
	p, _ := strconv.Atoi(port)

	tr, err := remote.NewTransporter(remote.Config{Host: host, Port: p, Auth: remote.AuthKerberos, Username: simUser + "@" + dc.Realm,
		Password: simPass, Krb5Conf: dc.Krb5Conf, SPN: simSPN})
	if err != nil {
		t.Fatal(err)
	}
	params := winrm.NewParameters("PT60S", "en-US", 153600)
	params.TransportDecorator = func() winrm.Transporter { return tr }
	c, err := winrm.NewClientWithParameters(winrm.NewEndpoint(host, p, false, false, nil, nil, nil, 60*time.Second), "", "", params)
	if err != nil {
		t.Fatal(err)
	}
	r := readInstance(t, c)
	if !r.Found {
		t.Fatalf("read_instance over Kerberos: instance not found: %+v", r)
	}
	audit := sim.Info().Hosts[0].Name
	h, _ := sim.Host(audit)
	found := false
	for _, e := range h.Audit() {
		if strings.EqualFold(e.User, addc.NetBIOS+`\`+simUser) && e.Operation == string(contract.OpReadInstance) {
			found = true
		}
	}
	if !found {
		t.Errorf("the host's audit log has no read_instance by %s\\%s: %+v", addc.NetBIOS, simUser, h.Audit())
	}
}

// A "kerberos" block without the host's domain is refused at start, naming the fix.
func TestKerberosConfigNeedsDomain(t *testing.T) {
	cfg, err := winsim.ParseConfig([]byte(`{"hosts": [{"name": "sql01", "address": "127.0.0.32",
		"winrm": {"kerberos": {"realm": "MSSQLIFI.TEST", "keytab": "host.keytab"}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = winsim.Start(cfg, winsim.Options{CertDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `no "domain"`) {
		t.Fatalf("Start with Kerberos and no domain: %v, want an error asking for the domain", err)
	}
}
