package addc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/kdc"
)

// Krb5ConfKDCDown writes a copy of the DC's krb5.conf whose only KDC for the realm
// is a loopback port nothing listens on (held for the test, see kdc.DeadAddr), as for a domain whose domain controllers
// do not answer (the shared DC itself cannot be stopped: other tests use it), and
// returns its path and that KDC's address.
func (dc *DC) Krb5ConfKDCDown(t testing.TB) (path, kdcAddr string) {
	t.Helper()
	raw, err := os.ReadFile(dc.Krb5Conf)
	if err != nil {
		t.Fatalf("test AD DC: %v", err)
	}
	if !strings.Contains(string(raw), "kdc = "+dc.Addr) {
		t.Fatalf("test AD DC: %s names no kdc = %s", dc.Krb5Conf, dc.Addr)
	}
	kdcAddr = kdc.DeadAddr(t)
	path = filepath.Join(t.TempDir(), "krb5-kdc-down.conf")
	if err := os.WriteFile(path, []byte(strings.Replace(string(raw), "kdc = "+dc.Addr, "kdc = "+kdcAddr, 1)), 0o600); err != nil {
		t.Fatalf("test AD DC: %v", err)
	}
	return path, kdcAddr
}
