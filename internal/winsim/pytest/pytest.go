// Package pytest helps tests run Python clients we did not write (Debian's
// python3-winrm, its ntlm_auth, python3-tds) against the simulator: it finds a python3
// that can import them and writes the OpenSSL configuration their NTLM needs.
//
// Only tests import this package.
package pytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// PythonWith returns a python3 that can import modules (a comma-separated list, as
// in an import statement), or skips the test naming the Debian package that provides
// them. Debian's packages install for /usr/bin/python3, which another python3 earlier
// on PATH may hide, so that one is tried first.
func PythonWith(t testing.TB, modules, debianPackage string) string {
	t.Helper()
	candidates := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil && p != candidates[0] {
		candidates = append(candidates, p)
	}
	for _, p := range candidates {
		if exec.Command(p, "-c", "import "+modules).Run() == nil {
			return p
		}
	}
	t.Skipf("no python3 (tried %v) can import %s: install the Debian package %s (apt-get install %s)", candidates, modules, debianPackage, debianPackage)
	return ""
}

// legacyOpenSSLConf activates OpenSSL 3's legacy provider, which holds MD4: the NTLM of
// pywinrm (ntlm_auth) needs it (design/windows-behaviour.md#ntlm-message-sealing).
// The provider module is found in the MODULESDIR of the libcrypto Python loads.
const legacyOpenSSLConf = `openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
[provider_sect]
default = default_sect
legacy = legacy_sect
[default_sect]
activate = 1
[legacy_sect]
activate = 1
`

// LegacyOpenSSLEnv writes an OpenSSL configuration enabling the legacy provider into
// the test's temporary directory and returns the environment entry that selects it
// ("OPENSSL_CONF=..."), to append to a Python client's environment.
func LegacyOpenSSLEnv(t testing.TB) string {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "openssl-legacy.cnf")
	if err := os.WriteFile(conf, []byte(legacyOpenSSLConf), 0o600); err != nil {
		t.Fatalf("writing the OpenSSL legacy-provider configuration %s: %v", conf, err)
	}
	return "OPENSSL_CONF=" + conf
}
