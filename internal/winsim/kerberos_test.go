package winsim_test

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/masterzen/winrm"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/kdc"
)

// A host configured with "winrm.kerberos" (realm and the keytab of its HTTP
// service principal) accepts a domain user's Kerberos logon with sealed messages
// and refuses clear text; read_instance runs as the domain user.
func TestKerberosHostFromConfig(t *testing.T) {
	k := kdc.Start(t, kdc.Options{})
	k.AddUser(t, "dba", "Dba-Secret-1")
	keytab := k.AddService(t, "HTTP/sql01.mssqlifi.test")
	raw := fmt.Sprintf(`{"hosts": [{"name": "sql01", "address": "127.0.0.31", "domain": "MSSQLIFI",
		"winrm": {"basic": false, "kerberos": {"realm": %q, "keytab": %q},
			"users": [{"name": "MSSQLIFI\\dba", "password": "Dba-Secret-1"}]},
		"instances": [{"name": "MSSQLSERVER"}]}]}`, k.Realm, keytab)
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

	tr, err := remote.NewTransporter(remote.Config{Host: host, Port: p, Auth: remote.AuthKerberos, Username: "dba@" + k.Realm,
		Password: "Dba-Secret-1", Krb5Conf: k.Krb5Conf, SPN: "HTTP/sql01.mssqlifi.test"})
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
		if strings.EqualFold(e.User, `MSSQLIFI\dba`) && e.Operation == string(contract.OpReadInstance) {
			found = true
		}
	}
	if !found {
		t.Errorf("the host's audit log has no read_instance by MSSQLIFI\\dba: %+v", h.Audit())
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
