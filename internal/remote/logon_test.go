package remote

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/addc"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

func logonOf(t *testing.T, h Host) Logon {
	t.Helper()
	lr, ok := h.(LogonReporter)
	if !ok {
		t.Fatalf("%T does not report its logon", h)
	}
	return lr.Logon()
}

// negotiate with a KDC that does not answer: the operation works over NTLM, and
// the host reports the fallback and its cause; with AllowNTLMFallback false the
// operation fails with the Kerberos cause and says why it did not fall back.
func TestNegotiateFallbackReported(t *testing.T) {
	k, s := krbSim(t)
	k.Stop(t)
	cfg := Config{Host: "127.0.0.1", Port: s.port, Auth: AuthNegotiate, Username: addc.NetBIOS + `\` + krbUser, Password: krbPass,
		Krb5Conf: k.Krb5Conf, Timeout: 20 * time.Second}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if lg := logonOf(t, h); lg.Mechanism != AuthKerberos || lg.Fallback {
		t.Fatalf("before any operation: %+v, want Kerberos", lg)
	}
	if err := readMSSQLSERVER(h); err != nil {
		t.Fatalf("read_instance with the KDC silent: %v", err)
	}
	if lg := logonOf(t, h); lg.Mechanism != AuthNTLM || !lg.Fallback || !strings.HasPrefix(lg.Why, "the KDC did not answer") {
		t.Fatalf("after the fallback: %+v, want NTLM, a fallback, because the KDC did not answer", lg)
	}

	no := false
	cfg.AllowNTLMFallback = &no
	h, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = readMSSQLSERVER(h)
	if !errors.Is(err, krb.ErrKDCUnreachable) || !strings.Contains(err.Error(), "did not fall back to NTLM") {
		t.Fatalf("with AllowNTLMFallback false: %v\nwant the unreachable KDC, and no fallback", err)
	}
}

// negotiate with a bare user name uses NTLM from the start: the host says so and
// why (no realm); with AllowNTLMFallback false New refuses the configuration.
func TestNegotiateNoRealmReported(t *testing.T) {
	s := newSimHost(t, simConfig())
	t.Setenv("KRB5_CONFIG", t.TempDir()+"/none.conf")
	cfg := Config{Host: "127.0.0.1", Port: s.port, Auth: AuthNegotiate, Username: testUser, Password: testPassword, Timeout: 20 * time.Second}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := readMSSQLSERVER(h); err != nil {
		t.Fatal(err)
	}
	if lg := logonOf(t, h); lg.Mechanism != AuthNTLM || !lg.Fallback || !strings.HasPrefix(lg.Why, "no realm: ") {
		t.Fatalf("negotiate with %q: %+v, want NTLM because there is no realm", testUser, lg)
	}
	no := false
	cfg.AllowNTLMFallback = &no
	_, err = New(cfg)
	var re *Error
	if !errors.As(err, &re) || !errors.Is(err, ErrNTLMFallback) || re.Setting != SettingAllowNTLMFallback || !strings.Contains(err.Error(), "no realm") {
		t.Fatalf("New with AllowNTLMFallback false and no realm: %v\nwant ErrNTLMFallback naming the cause and the setting", err)
	}
	if lg := logonOf(t, s.remote(t, testUser)); lg.Mechanism != AuthNTLM || lg.Fallback {
		t.Fatalf("auth ntlm: %+v, want NTLM chosen, not a fallback", lg)
	}
}

// The user-name forms the provider's advice for a failed logon names, on a
// domain-joined host (CONTOSO) whose local Administrator and domain Administrator
// have different passwords: DOMAIN\user, a bare user and user@domain.fqdn log on
// to the domain account; COMPUTER\user to the local one. The recommended
// configuration (negotiate over HTTP, no realm: NTLM, every message sealed).
func TestUserNameFormsOnADomainHost(t *testing.T) {
	const localPass, domainPass = "Local-Adm1n-Pass!", "Domain-Adm1n-Pass!"
	cfg := simConfig()
	cfg.Domain = "CONTOSO"
	cfg.WinRM.Users = []host.UserConfig{{Name: "Administrator", Password: localPass}, {Name: `CONTOSO\Administrator`, Password: domainPass}}
	s := newSimHost(t, cfg)
	t.Setenv("KRB5_CONFIG", t.TempDir()+"/none.conf")
	for _, tc := range []struct{ user, account, password, other string }{
		{`CONTOSO\Administrator`, "the domain account", domainPass, localPass},
		{"Administrator", "the domain account", domainPass, localPass},
		{"Administrator@contoso.com", "the domain account", domainPass, localPass},
		{`SQL01\Administrator`, "the local account", localPass, domainPass},
	} {
		t.Run(tc.user, func(t *testing.T) {
			logon := func(password string) error {
				h, err := New(Config{Host: "127.0.0.1", Port: s.port, Auth: AuthNegotiate, Username: tc.user, Password: password, Timeout: 20 * time.Second})
				if err != nil {
					return err
				}
				return readMSSQLSERVER(h)
			}
			if err := logon(tc.password); err != nil {
				t.Errorf("%s with the password of %s: %v", tc.user, tc.account, err)
			}
			var re *Error
			if err := logon(tc.other); !errors.As(err, &re) || re.Kind != KindAuth {
				t.Errorf("%s with the other account's password: %v; want an authentication failure (it names %s)", tc.user, err, tc.account)
			}
		})
	}
}
