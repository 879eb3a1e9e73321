package krb_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
)

func writeConf(t testing.TB, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "krb5.conf")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A krb5.conf the Kerberos library cannot read is an error that names the file and
// the line to fix, never a panic (issue 14: a realm block on one line panicked the
// provider with "slice bounds out of range").
func TestMalformedKrb5ConfNamesFileAndLine(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		line       string
	}{
		{"one-line realm block", "[libdefaults]\n  default_realm = EXAMPLE.COM\n\n[realms]\nEXAMPLE.COM = { kdc = a }\n", "line 5"},
		{"one-line realm block after a good one", "# site\n[realms]\nA.EXAMPLE = {\n  kdc = a\n}\nB.EXAMPLE = { kdc = b }\n[domain_realm]\n.b.example = B.EXAMPLE\n", "line 6"},
		{"one-line realm block with CRLF", "[realms]\r\nEXAMPLE.COM = { kdc = a }\r\n", "line 2"},
		{"closing brace without a block", "[realms]\n}\n", "line 2"},
		{"libdefaults line without =", "[libdefaults]\n default_realm EXAMPLE.COM\n", "line 2"},
		{"realm relation without =", "[realms]\nEXAMPLE.COM = {\n kdc\n}\n", "line 4"},
		{"bad boolean", "[libdefaults]\n dns_lookup_kdc = perhaps\n", "line 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeConf(t, tc.text)
			_, err := krb.LoadKrb5Conf(p)
			if err == nil {
				t.Fatalf("LoadKrb5Conf accepted %q", tc.text)
			}
			if !errors.Is(err, krb.ErrConfig) {
				t.Errorf("error %v is not a configuration error", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, p) || !strings.Contains(msg, tc.line) {
				t.Errorf("error %q does not name %s and %s", msg, p, tc.line)
			}
		})
	}
}

// The hint for a one-line block says how to write it.
func TestOneLineRealmBlockHint(t *testing.T) {
	_, err := krb.LoadKrb5Conf(writeConf(t, "[realms]\nEXAMPLE.COM = { kdc = a }\n"))
	if err == nil || !strings.Contains(err.Error(), "on a line of its own") {
		t.Fatalf("error %v gives no hint on how to write the block", err)
	}
}

// A well-formed file still parses, with its realm's KDC.
func TestWellFormedKrb5ConfParses(t *testing.T) {
	conf, err := krb.LoadKrb5Conf(writeConf(t, "[libdefaults]\n default_realm = EXAMPLE.COM\n[realms]\nEXAMPLE.COM = {\n  kdc = dc1.example.com\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if kdcs := krb.RealmKDCs(conf, "EXAMPLE.COM"); len(kdcs) != 1 || kdcs[0] != "dc1.example.com:88" {
		t.Fatalf("KDCs %v", kdcs)
	}
}

// No input makes LoadKrb5Conf panic; a failure is a configuration error naming the
// file. To run it longer, fuzz it:
// go test -run '^$' -fuzz FuzzLoadKrb5Conf ./internal/remote/krb/ (any duration).
func FuzzLoadKrb5Conf(f *testing.F) {
	for _, s := range []string{
		"[realms]\nEXAMPLE.COM = { kdc = a }\n",
		"[realms]\nA = {\n b = {\n c = d }\n}\n",
		"[realms]\n}\n{\n",
		"[libdefaults]\n ticket_lifetime = 1d2h\n clockskew = x\n",
		"[domain_realm]\n.a = B\nc\n",
		"[libdefaults]\n default_realm = A\n[realms]\nA = {\n kdc = k:88\n admin_server = k\n v4_instance_convert = {\n x = y\n }\n}\n",
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text string) {
		p := filepath.Join(dir, "krb5.conf")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := krb.LoadKrb5Conf(p)
		if err != nil && (!errors.Is(err, krb.ErrConfig) || !strings.Contains(err.Error(), p)) {
			t.Fatalf("error %v is not a configuration error naming the file", err)
		}
	})
}
