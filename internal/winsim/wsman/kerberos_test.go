package wsman

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/masterzen/winrm"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/addc"
)

// The Kerberos tests of the endpoint run against the Samba AD DC (addc, started
// by TestMain): a user whose UPN is in an alternative suffix, and the host's
// computer account with its HTTP SPN, whose keys the endpoint accepts tickets with.
const (
	krbHost     = "SQLWS"
	krbHostFQDN = "sqlws.contoso.test"
	krbUser     = "wsuser"
	krbUPN      = "ws.user@" + addc.UPNSuffix
	krbPassword = "Ws-User-Secret-1"
)

// krbAccounts creates the accounts once per DC (a test run with -count shares it).
var krbAccounts, staleHost sync.Once

// krbEnv is the DC and an endpoint that accepts Kerberos with the host's keys and
// refuses clear text over HTTP, as a default domain host does; CONTOSO\wsuser may
// log on.
type krbEnv struct {
	*testEnv
	dc *addc.DC
}

func newKrbEnv(t *testing.T) *krbEnv {
	t.Helper()
	dc := addc.Shared(t)
	krbAccounts.Do(func() {
		dc.AddUser(t, krbUser, krbPassword)
		dc.SetUPN(t, krbUser, krbUPN)
		dc.AddComputer(t, krbHost)
	})
	return newKrbEnvOf(t, dc, krbHost, krbHostFQDN)
}

// newKrbEnvOf is newKrbEnv with the keys of the computer account computer under
// the SPN HTTP/fqdn.
func newKrbEnvOf(t *testing.T, dc *addc.DC, computer, fqdn string) *krbEnv {
	t.Helper()
	kt, err := keytab.Load(dc.HostKeytab(t, computer, "HTTP/"+fqdn))
	if err != nil {
		t.Fatalf("loading the host keytab of %s: %v", computer, err)
	}
	env := newEnv(t, false, func(c *Config) {
		c.DomainName = addc.NetBIOS
		c.AllowBasic = false
		c.AllowUnencrypted = false
		c.Kerberos = &KerberosConfig{Keytab: kt, Realm: addc.Realm}
		c.Lookup = func(domain, user string) (string, bool) {
			return krbPassword, strings.EqualFold(user, addc.NetBIOS+`\`+krbUser)
		}
	})
	return &krbEnv{testEnv: env, dc: dc}
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

// masterzen/winrm over our Kerberos client: the host takes CONTOSO\wsuser from
// the ticket's PAC (the logon was by UPN), and every message travels sealed (the
// endpoint refuses clear text over HTTP).
func TestKerberosSealedExchange(t *testing.T) {
	e := newKrbEnv(t)
	c := e.masterzen(t, remote.Config{Auth: remote.AuthKerberos, Username: krbUPN, Password: krbPassword,
		Krb5Conf: e.dc.Krb5Conf, SPN: "HTTP/" + krbHostFQDN})
	if out, _, code := run(t, c, "whoami", ""); out != addc.NetBIOS+`\`+krbUser || code != 0 {
		t.Fatalf("whoami over Kerberos = %q (exit %d), want %s\\%s", out, code, addc.NetBIOS, krbUser)
	}
	stdin := strings.Repeat("sealed stdin line\r\n", 2000)
	if out, _, code := run(t, c, fmt.Sprintf("cat %d", len(stdin)), stdin); out != stdin || code != 0 {
		t.Fatalf("cat over Kerberos returned %d bytes (exit %d), want the %d bytes of stdin back", len(out), code, len(stdin))
	}
}

// A ticket whose authenticator is 10 minutes off gets the host's KRB_AP_ERR_SKEW,
// and the client names the clock skew. (The DC issues the ticket: the
// pre-authentication of an account name carries gokrb5's own clock.)
func TestKerberosClockSkewNamed(t *testing.T) {
	e := newKrbEnv(t)
	kc, err := krb.New(krb.Config{Username: krbUser + "@" + addc.Realm, Password: krbPassword, Krb5Conf: e.dc.Krb5Conf,
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

// A host whose keytab does not hold the SPN's current key (a stale keytab after
// the computer account's password changed, or an impostor) refuses the ticket with
// KRB_AP_ERR_MODIFIED, and the client says so.
func TestKerberosStaleHostKeyRefused(t *testing.T) {
	dc := addc.Shared(t)
	newKrbEnv(t) // the user
	const fqdn = "sqlstale.contoso.test"
	staleHost.Do(func() { dc.AddComputer(t, "SQLSTALE") })
	e := newKrbEnvOf(t, dc, "SQLSTALE", fqdn)
	// The account's password changes at the DC: the host's keytab is now stale.
	dc.Tool(t, "user", "setpassword", "SQLSTALE$", "--random-password")
	kc, err := krb.New(krb.Config{Username: krbUser + "@" + addc.Realm, Password: krbPassword, Krb5Conf: dc.Krb5Conf})
	if err != nil {
		t.Fatal(err)
	}
	err = e.logon(t, kc, "HTTP/"+fqdn)
	if !errors.Is(err, krb.ErrRefused) || !strings.Contains(err.Error(), "KRB_AP_ERR_MODIFIED") {
		t.Fatalf("logon to a host with a stale keytab: %v, want ErrRefused naming KRB_AP_ERR_MODIFIED", err)
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
