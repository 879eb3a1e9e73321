package addc

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The domain is provisioned once and copied for each test process. Provisioning
// (samba-tool domain provision) takes 10 s on an idle machine and minutes when
// several test packages provision at once beside other tests; a copy of the
// provisioned files takes well under a second. The provisioned domain is kept in
// the user's cache directory (MSSQLIFI_ADDC_CACHE overrides it), under a name that
// changes with Samba's version and with this file's provisioning arguments, and is
// provisioned again when older than templateMaxAge. Test processes that start at
// the same time (make test's packages) take a lock on it: one provisions, the
// others wait and copy.
//
// Only etc/smb.conf names the directory the domain was provisioned in (the ldb
// files name their partitions relative to it); the copy rewrites it.

// templateVersion changes when the provisioning below changes in a way the
// arguments' text does not show.
const templateVersion = "2"

// templateMaxAge: accounts made at provisioning (Administrator, the DC's own) have
// passwords that expire after 42 days, Samba's default; a week keeps far from it.
const templateMaxAge = 7 * 24 * time.Hour

// lockBudget bounds the wait for another process's provisioning.
const lockBudget = 5 * time.Minute

// provisionArgs are samba-tool domain provision's arguments for a domain in dir.
// Loopback only, the KDC alone (samba-tool works on the ldb files directly, so no
// LDAP, RPC or DNS service is needed); the KDC's and kpasswd's ports are set when a
// copy starts. Private run-time directories too: another DC (a test of another
// package, or the machine's own) may run at the same time.
func provisionArgs(dir string) []string {
	return []string{"domain", "provision", "--realm=" + Realm, "--domain=" + NetBIOS,
		"--server-role=dc", "--dns-backend=NONE", "--adminpass=" + AdminPassword,
		"--targetdir=" + dir, "--host-name=dc1", "--host-ip=127.0.0.1",
		"--option=interfaces = 127.0.0.1", "--option=bind interfaces only = yes",
		"--option=server services = kdc", "--option=krb5 port = 88",
		"--option=kpasswd port = 464",
		"--option=log file = " + filepath.Join(dir, "log.%m"),
		"--option=panic action = ",
		"--option=pid directory = " + dir, "--option=ncalrpc dir = " + filepath.Join(dir, "ncalrpc"),
		"--option=winbindd socket directory = " + filepath.Join(dir, "winbindd"),
	}
}

// cacheDir is where the provisioned domain is kept.
func cacheDir() string {
	if d := os.Getenv("MSSQLIFI_ADDC_CACHE"); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "mssqlifi")
}

// templateKey names the provisioned domain: Samba's version, the arguments and
// templateVersion.
func templateKey() (string, error) {
	samba, err := lookPath("samba")
	if err != nil {
		return "", err
	}
	ver, err := exec.Command(samba, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", samba, err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n", templateVersion, ver, strings.Join(provisionArgs("DIR"), "\n"))
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// copyTemplate copies a provisioned domain into dst, provisioning it first when
// there is none (or an old one), all under the template's lock.
func copyTemplate(dst string) (provisioned bool, err error) {
	root := cacheDir()
	if err := os.MkdirAll(root, 0o700); err != nil {
		return false, err
	}
	key, err := templateKey()
	if err != nil {
		return false, err
	}
	base := filepath.Join(root, "addc-"+key)
	unlock, err := lockFile(base+".lock", lockBudget)
	if err != nil {
		return false, fmt.Errorf("waiting for the provisioned domain %s: %w", base, err)
	}
	defer unlock()
	ready := filepath.Join(base, "ready")
	if st, err := os.Stat(ready); err != nil || time.Since(st.ModTime()) > templateMaxAge {
		if err := provisionTemplate(base); err != nil {
			return false, err
		}
		provisioned = true
	}
	origin, err := os.ReadFile(ready)
	if err != nil {
		return false, err
	}
	if err := copyTree(filepath.Join(base, "domain"), dst); err != nil {
		return false, fmt.Errorf("copying the provisioned domain %s: %w", base, err)
	}
	return provisioned, relocate(filepath.Join(dst, "etc", "smb.conf"), string(origin), dst)
}

// provisionTemplate provisions the domain into base/domain and writes base/ready,
// which holds the directory the domain was provisioned in.
func provisionTemplate(base string) error {
	if err := os.RemoveAll(base); err != nil {
		return err
	}
	dir := filepath.Join(base, "domain")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmpl := &DC{Dir: dir, SMBConf: filepath.Join(dir, "etc", "smb.conf"), Krb5Conf: filepath.Join(dir, "krb5.conf")}
	if _, err := tmpl.tool(provisionArgs(dir)...); err != nil {
		return err
	}
	if err := tmpl.addUPNSuffix(UPNSuffix); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(base, "ready"), []byte(dir), 0o600)
}

// copyTree copies the directories and regular files under src to dst (which
// exists); a provisioned domain that never ran holds nothing else.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, info.Mode().Perm()|0o700)
		case info.Mode().IsRegular():
			return copyFile(path, to, info.Mode().Perm())
		default:
			return fmt.Errorf("%s is neither a directory nor a regular file", path)
		}
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// relocate rewrites the directory the domain was provisioned in to the copy's, in
// its smb.conf.
func relocate(smbConf, from, to string) error {
	b, err := os.ReadFile(smbConf)
	if err != nil {
		return err
	}
	if !strings.Contains(string(b), from) {
		return fmt.Errorf("%s does not name %s, where the domain was provisioned", smbConf, from)
	}
	return os.WriteFile(smbConf, []byte(strings.ReplaceAll(string(b), from, to)), 0o600)
}

var portLine = regexp.MustCompile(`(?m)^(\s*(krb5|kpasswd) port = )\d+$`)

// setPorts writes the KDC's and kpasswd's ports into smb.conf.
func setPorts(smbConf string, kdcPort, kpasswdPort int) error {
	b, err := os.ReadFile(smbConf)
	if err != nil {
		return err
	}
	n := 0
	out := portLine.ReplaceAllStringFunc(string(b), func(line string) string {
		m := portLine.FindStringSubmatch(line)
		n++
		if m[2] == "krb5" {
			return m[1] + strconv.Itoa(kdcPort)
		}
		return m[1] + strconv.Itoa(kpasswdPort)
	})
	if n != 2 {
		return fmt.Errorf("%s: expected a krb5 port and a kpasswd port line, found %d", smbConf, n)
	}
	return os.WriteFile(smbConf, []byte(out), 0o600)
}
