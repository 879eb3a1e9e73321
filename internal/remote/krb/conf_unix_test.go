//go:build unix

package krb_test

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/localfile"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
)

// What krb5.conf, the keytab and the credential cache name is read as
// localfile.Read reads it: /dev/zero or a FIFO without a writer fails at once
// with an error naming the file and what it is (issue 36: /dev/zero took the
// provider to 18.9 GiB, a FIFO hung the plan), at the part to fix.
func TestSpecialFilesRefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	conf := writeConf(t, "[libdefaults]\n default_realm = EXAMPLE.COM\n[realms]\nEXAMPLE.COM = {\n kdc = 127.0.0.1\n}\n")
	for _, path := range []string{"/dev/zero", fifo} {
		for _, tc := range []struct {
			part krb.Part
			cfg  krb.Config
		}{
			{krb.PartKrb5Conf, krb.Config{Username: "alice@EXAMPLE.COM", Password: "x", Krb5Conf: path}},
			{krb.PartKeytab, krb.Config{Username: "alice@EXAMPLE.COM", Keytab: path, Krb5Conf: conf}},
			{krb.PartCCache, krb.Config{CCache: path, Krb5Conf: conf}},
		} {
			start := time.Now()
			_, err := krb.New(tc.cfg)
			var ke *krb.Error
			if !errors.As(err, &ke) || ke.Part != tc.part || !errors.Is(err, localfile.ErrNotRegular) || !strings.Contains(err.Error(), path+" is a") {
				t.Errorf("New with %v %s: %v; want the part's error naming the file and what it is", tc.part, path, err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("New with %v %s took %s", tc.part, path, d)
			}
		}
	}
}
