package krb_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/kdc"
)

const (
	spn      = "HTTP/sql01.mssqlifi.test"
	user     = "alice"
	password = "Alice-Secret-1"
)

func startKDC(t *testing.T) *kdc.KDC {
	t.Helper()
	k := kdc.Start(t, kdc.Options{})
	k.AddUser(t, user, password)
	k.AddService(t, spn)
	return k
}

func ticket(t *testing.T, cfg krb.Config) error {
	t.Helper()
	c, err := krb.New(cfg)
	if err != nil {
		return err
	}
	_, tok, err := c.InitSecContext(context.Background(), spn, krb.SPNEGO, nil)
	if err == nil && len(tok) == 0 {
		t.Fatal("InitSecContext returned no token and no error")
	}
	return err
}

// Password, keytab and credential cache logons each get a service ticket; the
// user may be written user@REALM or REALM\user (NetBIOS or DNS form).
func TestLogonSources(t *testing.T) {
	k := startKDC(t)
	for _, login := range []string{user + "@" + k.Realm, `MSSQLIFI\` + user, k.Realm + `\` + user} {
		if err := ticket(t, krb.Config{Username: login, Password: password, Krb5Conf: k.Krb5Conf}); err != nil {
			t.Errorf("password logon as %s: %v", login, err)
		}
	}
	kt := k.UserKeytab(t, user)
	if err := ticket(t, krb.Config{Username: user + "@" + k.Realm, Keytab: kt, Krb5Conf: k.Krb5Conf}); err != nil {
		t.Errorf("keytab logon: %v", err)
	}
	if err := kdc.KinitAvailable(); err != nil {
		t.Skipf("skipping the credential cache case: %v", err)
	}
	t.Setenv("KRB5CCNAME", k.Kinit(t, user, password))
	if err := ticket(t, krb.Config{Krb5Conf: k.Krb5Conf}); err != nil {
		t.Errorf("credential cache logon from KRB5CCNAME: %v", err)
	}
	// The cache's TGT has expired once the clock passes its end time.
	err := ticket(t, krb.Config{Krb5Conf: k.Krb5Conf, Now: func() time.Time { return time.Now().Add(24 * time.Hour) }})
	if !errors.Is(err, krb.ErrExpired) || !strings.Contains(err.Error(), "kinit") {
		t.Errorf("expired credential cache: %v, want ErrExpired telling to run kinit", err)
	}
	// A cache of another user is refused rather than silently used.
	err = ticket(t, krb.Config{Username: "bob@" + k.Realm, Krb5Conf: k.Krb5Conf})
	if !errors.Is(err, krb.ErrConfig) || !strings.Contains(err.Error(), "bob@") {
		t.Errorf("cache of alice used for bob: %v, want ErrConfig naming both", err)
	}
}

// Each failure gets its own kind and a message naming the cause.
func TestLogonErrorsNamed(t *testing.T) {
	k := startKDC(t)
	cfg := func(mod func(*krb.Config)) krb.Config {
		c := krb.Config{Username: user + "@" + k.Realm, Password: password, Krb5Conf: k.Krb5Conf}
		mod(&c)
		return c
	}
	for _, tc := range []struct {
		name string
		cfg  krb.Config
		spn  string
		want error
		text string
	}{
		{"wrong password", cfg(func(c *krb.Config) { c.Password = "wrong" }), spn, krb.ErrWrongPassword, "KDC_ERR_PREAUTH_FAILED"},
		{"unknown user", cfg(func(c *krb.Config) { c.Username = "mallory@" + k.Realm }), spn, krb.ErrUnknownUser, "KDC_ERR_C_PRINCIPAL_UNKNOWN"},
		{"unknown SPN", cfg(func(*krb.Config) {}), "HTTP/10.0.0.7", krb.ErrUnknownSPN, "HTTP/10.0.0.7"},
		{"missing keytab", cfg(func(c *krb.Config) { c.Password, c.Keytab = "", filepath.Join(k.Dir, "missing.keytab") }), spn, krb.ErrConfig, "missing.keytab"},
		{"unreadable krb5.conf", cfg(func(c *krb.Config) { c.Krb5Conf = filepath.Join(k.Dir, "nope.conf") }), spn, krb.ErrConfig, "nope.conf"},
		{"realm without KDC", cfg(func(c *krb.Config) { c.Username, c.Realm = user, "OTHER.TEST" }), spn, krb.ErrConfig, "names no KDC for the realm OTHER.TEST"},
		// A suffix krb5.conf does not know is a UPN suffix, not a realm: the name goes
		// to the default realm's KDC as an enterprise name.
		{"UPN unknown", cfg(func(c *krb.Config) { c.Username = user + "@other.test" }), spn, krb.ErrUnknownUser, "user principal name alice@other.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := krb.New(tc.cfg)
			if err == nil {
				_, _, err = c.InitSecContext(context.Background(), tc.spn, krb.SPNEGO, nil)
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("got %v\nwant %v with %q in the message", err, tc.want, tc.text)
			}
		})
	}

	// The KDC goes away: the logon says it cannot reach it, and where it looked.
	k.Stop(t)
	err := ticket(t, cfg(func(*krb.Config) {}))
	if !errors.Is(err, krb.ErrKDCUnreachable) || !strings.Contains(err.Error(), k.Addr) {
		t.Fatalf("logon with the KDC stopped: %v, want ErrKDCUnreachable naming %s", err, k.Addr)
	}
}

// Seal and Unseal round-trip between an initiator and an acceptor sealer, and
// refuse a changed message, a replay and a reflected message.
func TestSealer(t *testing.T) {
	key := types.EncryptionKey{KeyType: 18, KeyValue: []byte("0123456789abcdef0123456789abcdef")}
	client, err := krb.NewSealer(key, nil, false, 100, 500)
	if err != nil {
		t.Fatal(err)
	}
	server, _ := krb.NewSealer(key, nil, true, 500, 100)
	msg := []byte(strings.Repeat("<s:Envelope/>", 100))
	sig, data, err := client.Seal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != len(msg) || len(sig) != 60 {
		t.Errorf("sealed %d bytes into a %d-byte signature and %d bytes of data; want 60 and %d (AES, MS-WSMV layout)", len(msg), len(sig), len(data), len(msg))
	}
	if strings.Contains(string(data), "Envelope") {
		t.Fatal("the sealed data holds the clear text")
	}
	got, err := server.Unseal(sig, data)
	if err != nil || string(got) != string(msg) {
		t.Fatalf("Unseal = %q, %v", got, err)
	}
	if _, err := server.Unseal(sig, data); !errors.Is(err, krb.ErrWrap) || !strings.Contains(err.Error(), "sequence") {
		t.Errorf("replayed message: %v, want a sequence error", err)
	}
	sig2, data2, _ := client.Seal(msg)
	data2[5] ^= 1
	if _, err := server.Unseal(sig2, data2); !errors.Is(err, krb.ErrWrap) {
		t.Errorf("changed message: %v, want ErrWrap", err)
	}
	rs, rd, _ := server.Seal([]byte("reply"))
	if _, err := server.Unseal(rs, rd); !errors.Is(err, krb.ErrWrap) || !strings.Contains(err.Error(), "reflected") {
		t.Errorf("reflected message: %v, want a reflection error", err)
	}
	if got, err := client.Unseal(rs, rd); err != nil || string(got) != "reply" {
		t.Errorf("client Unseal of the reply = %q, %v", got, err)
	}
	if _, err := krb.NewSealer(types.EncryptionKey{KeyType: 23, KeyValue: make([]byte, 16)}, nil, false, 0, 0); err == nil || !strings.Contains(err.Error(), "AES") {
		t.Errorf("RC4 key: %v, want a refusal that says to enable AES", err)
	}
}
