package remote

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/kdc"
)

const (
	krbSPN  = "HTTP/sql01.mssqlifi.test"
	krbUser = "dba"
	krbPass = "Dba-Secret-1"
)

// krbSim is a KDC and a domain host that accepts Kerberos with its keytab; the
// host is reached at 127.0.0.1, so the SPN must be given (as for a host reached
// by IP address).
func krbSim(t *testing.T) (*kdc.KDC, *simHost) {
	t.Helper()
	k := kdc.Start(t, kdc.Options{})
	k.AddUser(t, krbUser, krbPass)
	kt := k.AddService(t, krbSPN)
	no := false
	s := newSimHost(t, host.HostConfig{
		Name: "sql01", Address: "127.0.0.1", Domain: "MSSQLIFI",
		WinRM: host.WinRMConfig{Basic: &no, Kerberos: &host.KerberosConfig{Realm: k.Realm, Keytab: kt},
			Users: []host.UserConfig{{Name: `MSSQLIFI\` + krbUser, Password: krbPass}}},
		Instances: []host.InstanceConfig{{Name: "MSSQLSERVER"}},
	})
	return k, s
}

func readMSSQLSERVER(h Host) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := h.ReadInstance(ctx, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
	if err == nil && !r.Found {
		return errors.New("instance not found")
	}
	return err
}

// auth = "kerberos" with a password, a keytab and a credential cache each runs
// read_instance on a domain host.
func TestKerberosAuthSources(t *testing.T) {
	k, s := krbSim(t)
	base := Config{Host: "127.0.0.1", Port: s.port, Auth: "kerberos", SPN: krbSPN, Krb5Conf: k.Krb5Conf, Timeout: 20 * time.Second}
	withPassword := base
	withPassword.Username, withPassword.Password = krbUser+"@"+k.Realm, krbPass
	withKeytab := base
	withKeytab.Username, withKeytab.Keytab = `MSSQLIFI\`+krbUser, k.UserKeytab(t, krbUser)
	cases := map[string]Config{"password": withPassword, "keytab": withKeytab}
	if _, err := exec.LookPath("kinit"); err == nil {
		cc := filepath.Join(t.TempDir(), "cc")
		kinit := exec.Command("kinit", krbUser+"@"+k.Realm)
		kinit.Env = append(k.Env(), "KRB5CCNAME=FILE:"+cc)
		kinit.Stdin = strings.NewReader(krbPass + "\n")
		if out, err := kinit.CombinedOutput(); err != nil {
			t.Fatalf("kinit: %v\n%s", err, out)
		}
		t.Setenv("KRB5CCNAME", "FILE:"+cc)
		cases["ccache"] = base
	} else {
		t.Log("kinit not installed (krb5-user): the credential cache case is not run")
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			h, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := readMSSQLSERVER(h); err != nil {
				t.Fatalf("read_instance over Kerberos (%s): %v", name, err)
			}
		})
	}
}

// Without spn, a host reached by IP address gets HTTP/127.0.0.1, which no
// account has: the error names the unknown SPN and the spn argument.
func TestKerberosUnknownSPNNamed(t *testing.T) {
	k, s := krbSim(t)
	h, err := New(Config{Host: "127.0.0.1", Port: s.port, Auth: "kerberos", Username: krbUser + "@" + k.Realm, Password: krbPass, Krb5Conf: k.Krb5Conf, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = readMSSQLSERVER(h)
	var re *Error
	if !errors.As(err, &re) || re.Kind != KindAuth || !errors.Is(err, krb.ErrUnknownSPN) ||
		!strings.Contains(err.Error(), "HTTP/127.0.0.1") || re.Setting != SettingSPN {
		t.Fatalf("read_instance with the default SPN of an IP address: %v\nwant a KindAuth error naming HTTP/127.0.0.1, setting SPN", err)
	}
}

// The KDC is down: the error says the KDC cannot be reached (KindUnreachable),
// not that the password is wrong.
func TestKerberosKDCUnreachableNamed(t *testing.T) {
	k, s := krbSim(t)
	h, err := New(Config{Host: "127.0.0.1", Port: s.port, Auth: "kerberos", SPN: krbSPN, Username: krbUser + "@" + k.Realm, Password: krbPass, Krb5Conf: k.Krb5Conf, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	k.Stop(t)
	err = readMSSQLSERVER(h)
	var re *Error
	if !errors.As(err, &re) || re.Kind != KindUnreachable || !strings.Contains(err.Error(), k.Addr) || strings.Contains(err.Error(), "password") {
		t.Fatalf("read_instance with the KDC stopped: %v\nwant KindUnreachable naming %s", err, k.Addr)
	}
}
