package wsman

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/addc"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/pytest"
)

func TestMain(m *testing.M) { os.Exit(addc.Main(m)) }

// pyAccounts creates the accounts of TestPywinrmKerberosAD once per DC (a test
// run with -count shares it).
var pyAccounts sync.Once

// The control that the AD domain itself works: pywinrm with requests-kerberos (MIT
// GSSAPI) after kinit -E of a UPN in an alternative suffix, against an endpoint
// with the host's keys from the Samba AD DC, logs on as the account the ticket's
// PAC names.
func TestPywinrmKerberosAD(t *testing.T) {
	python := pytest.PythonWith(t, "winrm, requests_kerberos", "python3-requests-kerberos")
	dc := addc.Shared(t)
	const fqdn = "sqlpy.contoso.test"
	pyAccounts.Do(func() {
		dc.AddUser(t, "pyuser", "Py-User-Secret-1")
		dc.SetUPN(t, "pyuser", "py.user@"+addc.UPNSuffix)
		dc.AddComputer(t, "SQLPY")
	})
	kt, err := keytab.Load(dc.HostKeytab(t, "SQLPY", "HTTP/"+fqdn))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, false, func(c *Config) {
		c.DomainName = addc.NetBIOS
		c.AllowBasic = false
		c.AllowUnencrypted = false
		c.Kerberos = &KerberosConfig{Keytab: kt, Realm: addc.Realm}
		c.Lookup = func(domain, user string) (string, bool) {
			return "Py-User-Secret-1", strings.EqualFold(user, addc.NetBIOS+`\pyuser`)
		}
	})
	cc := dc.Kinit(t, "py.user@"+addc.UPNSuffix, "Py-User-Secret-1", true)
	var env []string
	for _, v := range os.Environ() {
		if !strings.HasPrefix(v, "KRB5") {
			env = append(env, v)
		}
	}
	env = append(env, "KRB5_CONFIG="+dc.Krb5Conf, "KRB5CCNAME="+cc, "NO_PROXY=*", "no_proxy=*")
	// MIT's name of the enterprise principal kinit -E stored: the UPN's @ escaped.
	args := fmt.Sprintf(`{"endpoint": %q, "user": %q, "host": %q}`, e.endpoint(), `py.user\@`+addc.UPNSuffix+"@"+addc.Realm, fqdn)
	cmd := exec.Command(python, "-c", pywinrmKerberos, args)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pywinrm: %v\n%s", err, out)
	}
	got := strings.TrimSpace(string(out))
	want := fmt.Sprintf(`{"stdout": "%s\\pyuser", "code": 0, "encrypted": true}`, addc.NetBIOS)
	if got != want {
		t.Fatalf("pywinrm with Kerberos printed\n%s\nwant\n%s", got, want)
	}
}
