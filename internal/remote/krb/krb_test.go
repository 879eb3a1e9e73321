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
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/addc"
)

// The credential cache beyond the name forms of TestADNameForms: one whose
// ticket-granting ticket has expired, and one of another user, which is refused
// rather than silently used.
func TestLogonSources(t *testing.T) {
	dc := adAccounts(t)
	t.Setenv("KRB5CCNAME", dc.Kinit(t, "kuser", adPassword, false))
	if _, err := adTicket(t, krb.Config{Krb5Conf: dc.Krb5Conf}); err != nil {
		t.Errorf("credential cache logon from KRB5CCNAME: %v", err)
	}
	// The cache's TGT has expired once the clock passes its end time.
	_, err := adTicket(t, krb.Config{Krb5Conf: dc.Krb5Conf, Now: func() time.Time { return time.Now().Add(24 * time.Hour) }})
	if !errors.Is(err, krb.ErrExpired) || !strings.Contains(err.Error(), "kinit") {
		t.Errorf("expired credential cache: %v, want ErrExpired telling to run kinit", err)
	}
	_, err = adTicket(t, krb.Config{Username: "bob@" + addc.Realm, Krb5Conf: dc.Krb5Conf})
	if !errors.Is(err, krb.ErrConfig) || !strings.Contains(err.Error(), "bob@") || !strings.Contains(err.Error(), "kuser@") {
		t.Errorf("cache of kuser used for bob: %v, want ErrConfig naming both", err)
	}
}

// Each failure gets its own kind and a message naming the cause, as the DC answers
// it: a wrong password, an unknown user or UPN, an SPN no account has, a clock 10
// minutes ahead of the DC's (KRB_AP_ERR_SKEW to the pre-authentication of a UPN,
// whose timestamp this package writes), what is wrong in the configuration, and a
// KDC that does not answer (a krb5.conf naming a port nothing listens on: the
// shared DC itself stays up for the other tests).
func TestLogonErrorsNamed(t *testing.T) {
	dc := adAccounts(t)
	dir := t.TempDir()
	down, dead := dc.Krb5ConfKDCDown(t)
	cfg := func(mod func(*krb.Config)) krb.Config {
		c := krb.Config{Username: "kuser@" + addc.Realm, Password: adPassword, Krb5Conf: dc.Krb5Conf}
		mod(&c)
		return c
	}
	ahead := func() time.Time { return time.Now().Add(10 * time.Minute) }
	for _, tc := range []struct {
		name string
		cfg  krb.Config
		spn  string
		want error
		text string
		not  string // a cause the message must not suggest
	}{
		{"wrong password", cfg(func(c *krb.Config) { c.Password = "wrong" }), adSPN, krb.ErrWrongPassword, "KDC_ERR_PREAUTH_FAILED", ""},
		{"unknown user", cfg(func(c *krb.Config) { c.Username = "mallory@" + addc.Realm }), adSPN, krb.ErrUnknownUser, "KDC_ERR_C_PRINCIPAL_UNKNOWN", ""},
		{"unknown SPN", cfg(func(*krb.Config) {}), "HTTP/10.0.0.7", krb.ErrUnknownSPN, "HTTP/10.0.0.7", ""},
		{"clock skew", cfg(func(c *krb.Config) { c.Username, c.Now = "k.user@"+addc.UPNSuffix, ahead }), adSPN, krb.ErrClockSkew, "clock", "password"},
		{"missing keytab", cfg(func(c *krb.Config) { c.Password, c.Keytab = "", filepath.Join(dir, "missing.keytab") }), adSPN, krb.ErrConfig, "missing.keytab", ""},
		{"unreadable krb5.conf", cfg(func(c *krb.Config) { c.Krb5Conf = filepath.Join(dir, "nope.conf") }), adSPN, krb.ErrConfig, "nope.conf", ""},
		{"realm without KDC", cfg(func(c *krb.Config) { c.Username, c.Realm = "kuser", "OTHER.TEST" }), adSPN, krb.ErrConfig, "names no KDC for the realm OTHER.TEST", ""},
		// A suffix krb5.conf does not know is a UPN suffix, not a realm: the name goes
		// to the default realm's KDC as an enterprise name, which no account has.
		{"UPN unknown", cfg(func(c *krb.Config) { c.Username = "kuser@other.test" }), adSPN, krb.ErrUnknownUser, "user principal name kuser@other.test", ""},
		{"KDC down", cfg(func(c *krb.Config) { c.Krb5Conf = down }), adSPN, krb.ErrKDCUnreachable, dead, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := krb.New(tc.cfg)
			if err == nil {
				_, _, err = c.InitSecContext(context.Background(), tc.spn, krb.SPNEGO, nil)
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) || tc.not != "" && strings.Contains(err.Error(), tc.not) {
				t.Fatalf("got %v\nwant %v with %q in the message (and not %q)", err, tc.want, tc.text, tc.not)
			}
		})
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
