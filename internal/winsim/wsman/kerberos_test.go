package wsman

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/masterzen/winrm"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/kdc"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/pytest"
)

const (
	krbHostFQDN = "sql01.mssqlifi.test"
	krbDomain   = "MSSQLIFI"
	krbUser     = "alice"
	krbPassword = "Alice-Secret-1"
)

// krbEnv is a KDC with alice and the host's HTTP service principal, and an
// endpoint that accepts Kerberos with the host's keytab and refuses clear text
// over HTTP, as a default domain host does.
type krbEnv struct {
	*testEnv
	kdc *kdc.KDC
}

func newKrbEnv(t *testing.T) *krbEnv {
	t.Helper()
	k := kdc.Start(t, kdc.Options{})
	k.AddUser(t, krbUser, krbPassword)
	ktPath := k.AddService(t, "HTTP/"+krbHostFQDN)
	kt, err := keytab.Load(ktPath)
	if err != nil {
		t.Fatalf("loading the host keytab %s: %v", ktPath, err)
	}
	env := newEnv(t, false, func(c *Config) {
		c.DomainName = krbDomain
		c.AllowBasic = false
		c.AllowUnencrypted = false
		c.Kerberos = &KerberosConfig{Keytab: kt, Realm: k.Realm}
		c.Lookup = func(domain, user string) (string, bool) {
			d, u, _ := strings.Cut(user, `\`)
			if strings.EqualFold(u, krbUser) && strings.EqualFold(d, krbDomain) {
				return krbPassword, true
			}
			return "", false
		}
	})
	return &krbEnv{testEnv: env, kdc: k}
}

// masterzen is a masterzen/winrm client on the provider's transport with cfg's
// Kerberos logon (host and port are the endpoint's).
func (e *krbEnv) masterzen(t *testing.T, cfg remote.Config) *winrm.Client {
	t.Helper()
	cfg.Host, cfg.Port = e.host, e.port
	tr, err := remote.NewTransporter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	params := winrm.NewParameters("PT60S", "en-US", 153600)
	params.TransportDecorator = func() winrm.Transporter { return tr }
	return e.client(t, "", "", params)
}

// logon sends kc's AP-REQ for spn on an empty POST, as the provider's transport
// does, and checks the host's answer with the context: nil for a verified AP-REP,
// else the error that names the cause.
func (e *krbEnv) logon(t *testing.T, kc *krb.Client, spn string) error {
	t.Helper()
	x, token, err := kc.InitSecContext(context.Background(), spn, krb.SPNEGO, nil)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, e.endpoint(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Negotiate "+base64.StdEncoding.EncodeToString(token))
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", e.endpoint(), err)
	}
	resp.Body.Close()
	for _, v := range resp.Header.Values("WWW-Authenticate") {
		if tok, ok := strings.CutPrefix(v, "Negotiate "); ok {
			raw, err := base64.StdEncoding.DecodeString(tok)
			if err != nil {
				t.Fatalf("the host's Negotiate token is not base64: %v", err)
			}
			return x.VerifyReply(raw)
		}
	}
	return fmt.Errorf("HTTP %d without a Negotiate token", resp.StatusCode)
}

// masterzen/winrm over our Kerberos client: the host maps alice@REALM to the
// domain user MSSQLIFI\alice, and every message travels sealed (the endpoint
// refuses clear text over HTTP).
func TestKerberosSealedExchange(t *testing.T) {
	e := newKrbEnv(t)
	c := e.masterzen(t, remote.Config{Auth: remote.AuthKerberos, Username: krbUser + "@" + e.kdc.Realm, Password: krbPassword,
		Krb5Conf: e.kdc.Krb5Conf, SPN: "HTTP/" + krbHostFQDN})
	if out, _, code := run(t, c, "whoami", ""); out != krbDomain+`\`+krbUser || code != 0 {
		t.Fatalf("whoami over Kerberos = %q (exit %d), want %s\\%s", out, code, krbDomain, krbUser)
	}
	stdin := strings.Repeat("sealed stdin line\r\n", 2000)
	if out, _, code := run(t, c, fmt.Sprintf("cat %d", len(stdin)), stdin); out != stdin || code != 0 {
		t.Fatalf("cat over Kerberos returned %d bytes (exit %d), want the %d bytes of stdin back", len(out), code, len(stdin))
	}
}

// A ticket whose authenticator is 10 minutes off gets the host's KRB_AP_ERR_SKEW,
// and the client names the clock skew.
func TestKerberosClockSkewNamed(t *testing.T) {
	e := newKrbEnv(t)
	kc, err := krb.New(krb.Config{Username: krbUser + "@" + e.kdc.Realm, Password: krbPassword, Krb5Conf: e.kdc.Krb5Conf,
		Now: func() time.Time { return time.Now().Add(10 * time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	err = e.logon(t, kc, "HTTP/"+krbHostFQDN)
	if !errors.Is(err, krb.ErrClockSkew) {
		t.Fatalf("logon with a 10-minute skew: %v, want ErrClockSkew", err)
	}
	if !strings.Contains(err.Error(), "clock") || !strings.Contains(err.Error(), "NTP") {
		t.Errorf("the error does not name the clock and the fix: %v", err)
	}
}

// A host whose keytab does not hold the SPN's current key (a stale keytab, or an
// impostor) refuses the ticket with KRB_AP_ERR_MODIFIED, and the client says so.
func TestKerberosStaleHostKeyRefused(t *testing.T) {
	e := newKrbEnv(t)
	// Re-key the SPN at the KDC: the host's keytab is now stale.
	e.kdc.Kadmin(t, "cpw -randkey HTTP/"+krbHostFQDN)
	kc, err := krb.New(krb.Config{Username: krbUser + "@" + e.kdc.Realm, Password: krbPassword, Krb5Conf: e.kdc.Krb5Conf})
	if err != nil {
		t.Fatal(err)
	}
	err = e.logon(t, kc, "HTTP/"+krbHostFQDN)
	if !errors.Is(err, krb.ErrRefused) || !strings.Contains(err.Error(), "KRB_AP_ERR_MODIFIED") {
		t.Fatalf("logon to a host with a stale keytab: %v, want ErrRefused naming KRB_AP_ERR_MODIFIED", err)
	}
}

// pywinrm with Kerberos (Debian's python3-requests-kerberos, MIT GSSAPI) after
// kinit into a temporary credential cache, over HTTP with message encryption.
func TestPywinrmKerberosSealed(t *testing.T) {
	python := pytest.PythonWith(t, "winrm, requests_kerberos", "python3-requests-kerberos")
	e := newKrbEnv(t)
	if _, err := exec.LookPath("kinit"); err != nil {
		t.Skip("skipping: kinit not installed: apt-get install krb5-user")
	}
	ccache := "FILE:" + filepath.Join(t.TempDir(), "cc")
	env := append(e.kdc.Env(), "KRB5CCNAME="+ccache, "NO_PROXY=*", "no_proxy=*")
	kinit := exec.Command("kinit", krbUser+"@"+e.kdc.Realm)
	kinit.Env = env
	kinit.Stdin = strings.NewReader(krbPassword + "\n")
	if out, err := kinit.CombinedOutput(); err != nil {
		t.Fatalf("kinit: %v\n%s", err, out)
	}
	args := fmt.Sprintf(`{"endpoint": %q, "user": %q, "host": %q}`, e.endpoint(), krbUser+"@"+e.kdc.Realm, krbHostFQDN)
	cmd := exec.Command(python, "-c", pywinrmKerberos, args)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pywinrm: %v\n%s", err, out)
	}
	got := strings.TrimSpace(string(out))
	want := fmt.Sprintf(`{"stdout": "%s\\%s", "code": 0, "encrypted": true}`, krbDomain, krbUser)
	if got != want {
		t.Fatalf("pywinrm with Kerberos printed\n%s\nwant\n%s", got, want)
	}
}

// pywinrmKerberos is the pywinrm client of the Kerberos tests: it runs whoami over
// HTTP with message encryption, with the credential cache of KRB5CCNAME, and prints
// what it saw as JSON.
const pywinrmKerberos = `
import base64, json, sys, kerberos, winrm

# Debian 12's pykerberos (1.1.14) lacks the WinRM helpers pywinrm's Kerberos
# encryption calls (added in pykerberos 1.2): build them on its gss_wrap_iov and
# gss_unwrap_iov bindings. MIT GSSAPI still does all the cryptography; the shim
# only adapts the calling convention to the one pykerberos 1.2 has.
if not hasattr(kerberos, "authGSSWinRMEncryptMessage"):
    # Its IOV calls speak MS-WSMV's payload: a 4-byte little-endian header length,
    # the header, the data.
    def _encrypt(ctx, message):
        kerberos.authGSSClientWrapIov(ctx, base64.b64encode(message).decode(), 1)
        token = base64.b64decode(kerberos.authGSSClientResponse(ctx))
        header_len = int.from_bytes(token[:4], "little")
        return token[4 + header_len:], token[4:4 + header_len]
    def _decrypt(ctx, data, header):
        payload = len(header).to_bytes(4, "little") + header + data
        kerberos.authGSSClientUnwrapIov(ctx, base64.b64encode(payload).decode())
        return base64.b64decode(kerberos.authGSSClientResponse(ctx))
    kerberos.authGSSWinRMEncryptMessage = _encrypt
    kerberos.authGSSWinRMDecryptMessage = _decrypt

a = json.loads(sys.argv[1])
p = winrm.Protocol(endpoint=a["endpoint"], transport="kerberos", username=a["user"],
    message_encryption="auto", kerberos_hostname_override=a["host"],
    operation_timeout_sec=20, read_timeout_sec=30)
try:
    shell = p.open_shell()
    cid = p.run_command(shell, "whoami", [])
    out, err, code = p.get_command_output(shell, cid)
    p.cleanup_command(shell, cid)
    p.close_shell(shell)
    print(json.dumps({"stdout": out.decode(), "code": code, "encrypted": p.transport.encryption is not None}))
except Exception as ex:
    print(json.dumps({"error": "%s: %s" % (type(ex).__name__, ex)}))
`
