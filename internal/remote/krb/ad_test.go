package krb_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jcmturner/gokrb5/v8/iana/errorcode"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/addc"
)

func TestMain(m *testing.M) { os.Exit(addc.Main(m)) }

// adSPN is the SPN of the simulated host's computer account in the AD domain.
const adSPN = "HTTP/sql01.contoso.test"

// adAccounts creates, once per DC, a user whose UPN is in an alternative suffix and
// whose name part differs from its account name (k.user@corp.example for kuser),
// and the host's computer account with its HTTP SPN.
func adAccounts(t *testing.T) *addc.DC {
	t.Helper()
	dc := addc.Shared(t)
	adOnce.Do(func() {
		dc.AddUser(t, "kuser", adPassword)
		dc.SetUPN(t, "kuser", "k.user@"+addc.UPNSuffix)
		dc.AddComputer(t, "SQL01")
	})
	return dc
}

const adPassword = "K-User-Secret-1"

var adOnce, encAccounts sync.Once

func adTicket(t *testing.T, cfg krb.Config) (*krb.Client, error) {
	t.Helper()
	c, err := krb.New(cfg)
	if err != nil {
		return nil, err
	}
	_, tok, err := c.InitSecContext(context.Background(), adSPN, krb.SPNEGO, nil)
	if err == nil && len(tok) == 0 {
		t.Fatal("InitSecContext returned no token and no error")
	}
	return c, err
}

// Every name form Active Directory takes logs on with a password, a keytab and a
// credential cache: the account name in the realm (in any case), DOMAIN\user, and a
// UPN whose suffix is no realm, sent as an enterprise name to the default realm or
// the realm setting (the KDC canonicalizes it to the account).
func TestADNameForms(t *testing.T) {
	dc := adAccounts(t)
	names := []string{"kuser@" + addc.Realm, "kuser@" + addc.DNSDomain, addc.NetBIOS + `\kuser`, "k.user@" + addc.UPNSuffix, "K.User@CORP.EXAMPLE"}
	for _, name := range names {
		if _, err := adTicket(t, krb.Config{Username: name, Password: adPassword, Krb5Conf: dc.Krb5Conf}); err != nil {
			t.Errorf("password logon as %s: %v", name, err)
		}
	}
	// The keytab of the account, exported under its account name, serves every form;
	// exported under its UPN, the UPN.
	upnKT, accountKT := dc.Keytab(t, "k.user@"+addc.UPNSuffix), dc.Keytab(t, "kuser@"+addc.Realm)
	for _, name := range names {
		if _, err := adTicket(t, krb.Config{Username: name, Keytab: accountKT, Krb5Conf: dc.Krb5Conf}); err != nil {
			t.Errorf("keytab logon as %s: %v", name, err)
		}
	}
	for _, name := range names[3:] {
		if _, err := adTicket(t, krb.Config{Username: name, Keytab: upnKT, Krb5Conf: dc.Krb5Conf}); err != nil {
			t.Errorf("keytab logon as %s with the UPN's keytab: %v", name, err)
		}
	}
	_, err := adTicket(t, krb.Config{Username: "kuser@" + addc.Realm, Keytab: upnKT, Krb5Conf: dc.Krb5Conf})
	if !errors.Is(err, krb.ErrConfig) || !strings.Contains(err.Error(), "holds no keys of kuser@"+addc.Realm) {
		t.Errorf("keytab of the UPN used for the account name: %v, want ErrConfig naming what the keytab holds", err)
	}
	// kinit -E, as a UPN needs, and kinit of the account name.
	for _, tc := range []struct {
		kinit      string
		enterprise bool
		user       string
	}{{"k.user@" + addc.UPNSuffix, true, "k.user@" + addc.UPNSuffix}, {"kuser", false, "kuser@" + addc.Realm}} {
		cc := dc.Kinit(t, tc.kinit, adPassword, tc.enterprise)
		for _, user := range []string{"", tc.user} {
			if _, err := adTicket(t, krb.Config{Username: user, CCache: cc, Krb5Conf: dc.Krb5Conf}); err != nil {
				t.Errorf("credential cache of kinit %s, user %q: %v", tc.kinit, user, err)
			}
		}
	}
}

// Without a default realm, the realm setting says where a UPN goes; with neither,
// the error says what a UPN suffix is and is not, instead of asking for a KDC of
// the suffix.
func TestADUPNRealm(t *testing.T) {
	dc := adAccounts(t)
	raw, err := os.ReadFile(dc.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	noDefault := filepath.Join(t.TempDir(), "krb5.conf")
	if err := os.WriteFile(noDefault, []byte(strings.Replace(string(raw), "default_realm = "+addc.Realm, "", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	upn := "k.user@" + addc.UPNSuffix
	c, err := adTicket(t, krb.Config{Username: upn, Password: adPassword, Krb5Conf: noDefault, Realm: strings.ToLower(addc.Realm)})
	if err != nil {
		t.Fatalf("UPN with the realm setting: %v", err)
	}
	if c.Principal() != upn {
		t.Errorf("Principal() = %q, want the UPN as written", c.Principal())
	}
	_, err = adTicket(t, krb.Config{Username: upn, Password: adPassword, Krb5Conf: noDefault})
	if !errors.Is(err, krb.ErrConfig) || !strings.Contains(err.Error(), "UPN suffix is not a realm") || strings.Contains(err.Error(), "kdc =") {
		t.Errorf("UPN without a realm: %v\nwant ErrConfig saying a UPN suffix is not a realm, not asking for a kdc line", err)
	}
	// A UPN no account has: the KDC's answer, named as a UPN.
	_, err = adTicket(t, krb.Config{Username: "nobody@" + addc.UPNSuffix, Password: adPassword, Krb5Conf: dc.Krb5Conf})
	if !errors.Is(err, krb.ErrUnknownUser) || !strings.Contains(err.Error(), "user principal name nobody@"+addc.UPNSuffix) {
		t.Errorf("unknown UPN: %v, want ErrUnknownUser naming the UPN", err)
	}
	// A wrong password for a UPN is a wrong password, not an unknown user.
	_, err = adTicket(t, krb.Config{Username: upn, Password: "wrong", Krb5Conf: dc.Krb5Conf})
	if !errors.Is(err, krb.ErrWrongPassword) {
		t.Errorf("UPN with a wrong password: %v, want ErrWrongPassword", err)
	}
}

// An AES-only user logs on, also with a krb5.conf that does not permit RC4; a host
// whose account has RC4 keys only gets a ticket this provider cannot use, which
// InitSecContext refuses with the documented message before the host sees a token.
func TestADEncryptionTypes(t *testing.T) {
	dc := adAccounts(t)
	encAccounts.Do(func() {
		dc.AddUser(t, "aesuser", adPassword)
		dc.Set(t, "aesuser", "msDS-SupportedEncryptionTypes", addc.EncAES)
		dc.AddComputer(t, "SQLRC4")
		dc.Set(t, "SQLRC4$", "msDS-SupportedEncryptionTypes", addc.EncRC4)
	})
	raw, err := os.ReadFile(dc.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	noRC4 := filepath.Join(t.TempDir(), "krb5.conf")
	hardened := strings.Replace(string(raw), "[libdefaults]\n", "[libdefaults]\n\tpermitted_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96\n"+
		"\tdefault_tkt_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96\n\tdefault_tgs_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96\n", 1)
	if err := os.WriteFile(noRC4, []byte(hardened), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, conf := range []string{dc.Krb5Conf, noRC4} {
		if _, err := adTicket(t, krb.Config{Username: "aesuser@" + addc.Realm, Password: adPassword, Krb5Conf: conf}); err != nil {
			t.Errorf("AES-only user with %s: %v", filepath.Base(filepath.Dir(conf)), err)
		}
	}

	c, err := krb.New(krb.Config{Username: "kuser@" + addc.Realm, Password: adPassword, Krb5Conf: dc.Krb5Conf})
	if err != nil {
		t.Fatal(err)
	}
	_, tok, err := c.InitSecContext(context.Background(), "HTTP/sqlrc4.contoso.test", krb.SPNEGO, nil)
	if !errors.Is(err, krb.ErrEncType) || tok != nil || !strings.Contains(err.Error(), "RC4") || !strings.Contains(err.Error(), "msDS-SupportedEncryptionTypes") {
		t.Errorf("RC4-only host: token %d bytes, %v\nwant no token and ErrEncType saying RC4 and how to enable AES", len(tok), err)
	}
}

// A UPN sent to the realm of another forest's DC, which refers the client to the
// realm that holds the account (KDC_ERR_WRONG_REALM with that realm, RFC 6806 7):
// the logon follows the referral to the AD DC. The other forest's DC is a stub that
// answers only the referral.
func TestADClientReferralFollowed(t *testing.T) {
	dc := adAccounts(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	var referred atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			var hdr [4]byte
			if _, err := io.ReadFull(c, hdr[:]); err == nil {
				if _, err := io.ReadFull(c, make([]byte, binary.BigEndian.Uint32(hdr[:]))); err == nil {
					ke := messages.NewKRBError(types.PrincipalName{NameType: 2, NameString: []string{"krbtgt", "FOREST2.TEST"}}, "FOREST2.TEST", errorcode.KDC_ERR_WRONG_REALM, "")
					ke.CRealm = addc.Realm
					if b, err := ke.Marshal(); err == nil {
						_, _ = c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...))
						referred.Add(1)
					}
				}
			}
			_ = c.Close()
		}
	}()
	raw, err := os.ReadFile(dc.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "krb5.conf")
	two := strings.Replace(string(raw), "[realms]\n", "[realms]\n\tFOREST2.TEST = {\n\t\tkdc = "+l.Addr().String()+"\n\t}\n", 1)
	if err := os.WriteFile(conf, []byte(two), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := adTicket(t, krb.Config{Username: "k.user@" + addc.UPNSuffix, Password: adPassword, Krb5Conf: conf, Realm: "FOREST2.TEST"}); err != nil {
		t.Fatalf("UPN sent to FOREST2.TEST, referred to %s: %v", addc.Realm, err)
	}
	if referred.Load() == 0 {
		t.Fatal("the other forest's KDC was never asked")
	}
}
