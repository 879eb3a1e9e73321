package wsman

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/addc"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/pytest"
)

func TestMain(m *testing.M) { os.Exit(addc.Main(m)) }

// The control that the AD domain itself works: pywinrm with requests-kerberos (MIT
// GSSAPI) after kinit -E of a UPN in an alternative suffix, against an endpoint
// with the host's keys from the Samba AD DC, logs on as the account the ticket's
// PAC names, over HTTP with message encryption.
func TestPywinrmKerberosAD(t *testing.T) {
	python := pytest.PythonWith(t, "winrm, requests_kerberos", "python3-requests-kerberos")
	e := newKrbEnv(t)
	dc := e.dc
	cc := dc.Kinit(t, krbUPN, krbPassword, true)
	var env []string
	for _, v := range os.Environ() {
		if !strings.HasPrefix(v, "KRB5") {
			env = append(env, v)
		}
	}
	env = append(env, "KRB5_CONFIG="+dc.Krb5Conf, "KRB5CCNAME="+cc, "NO_PROXY=*", "no_proxy=*")
	// MIT's name of the enterprise principal kinit -E stored: the UPN's @ escaped.
	args := fmt.Sprintf(`{"endpoint": %q, "user": %q, "host": %q}`, e.endpoint(), strings.Replace(krbUPN, "@", `\@`, 1)+"@"+addc.Realm, krbHostFQDN)
	cmd := exec.Command(python, "-c", pywinrmKerberos, args)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pywinrm: %v\n%s", err, out)
	}
	got := strings.TrimSpace(string(out))
	want := fmt.Sprintf(`{"stdout": "%s\\%s", "code": 0, "encrypted": true}`, addc.NetBIOS, krbUser)
	if got != want {
		t.Fatalf("pywinrm with Kerberos printed\n%s\nwant\n%s", got, want)
	}
}
