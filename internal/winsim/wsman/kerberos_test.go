package wsman

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/masterzen/winrm"
	"github.com/masterzen/winrm/soap"

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

func newKrbEnv(t *testing.T, tweak func(*Config)) *krbEnv {
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
		c.RequireEncryption = true
		c.Kerberos = &KerberosConfig{Keytab: kt, Realm: k.Realm}
		c.Lookup = func(domain, user string) (string, bool) {
			d, u, _ := strings.Cut(user, `\`)
			if strings.EqualFold(u, krbUser) && strings.EqualFold(d, krbDomain) {
				return krbPassword, true
			}
			return "", false
		}
		if tweak != nil {
			tweak(c)
		}
	})
	return &krbEnv{testEnv: env, kdc: k}
}

// krbTransport is the smallest winrm.Transporter that speaks Kerberos with
// message encryption over HTTP: each connection authenticates once with an empty
// POST (as pywinrm does), verifies the AP-REP, then seals every message. It is
// the seam internal/remote's transport wires: krb.Client.InitSecContext,
// Context.VerifyReply, Context.Seal and Unseal in MS-WSMV framing.
type krbTransport struct {
	kc   *krb.Client
	spn  string
	addr string
	url  *url.URL

	mu   sync.Mutex
	idle []*krbTestConn
}

type krbTestConn struct {
	nc  net.Conn
	br  *bufio.Reader
	ctx *krb.Context
}

func (t *krbTransport) Transport(ep *winrm.Endpoint) error {
	t.addr = net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
	t.url = &url.URL{Scheme: "http", Host: t.addr, Path: "/wsman"}
	return nil
}

func (t *krbTransport) Post(_ *winrm.Client, m *soap.SoapMessage) (string, error) {
	c, err := t.conn()
	if err != nil {
		return "", err
	}
	sig, data, err := c.ctx.Seal([]byte(m.String()))
	if err != nil {
		return "", err
	}
	body := frame(len(m.String()), sig, data)
	resp, err := t.roundTrip(c, body, nil)
	if err != nil {
		_ = c.nc.Close()
		return "", err
	}
	plain, err := unframe(c.ctx, resp.body)
	if err != nil {
		_ = c.nc.Close()
		return "", fmt.Errorf("HTTP %d, unsealing the answer: %w", resp.status, err)
	}
	t.mu.Lock()
	t.idle = append(t.idle, c)
	t.mu.Unlock()
	if resp.status != http.StatusOK {
		return "", fmt.Errorf("http error %d: %s", resp.status, plain)
	}
	return string(plain), nil
}

func (t *krbTransport) conn() (*krbTestConn, error) {
	t.mu.Lock()
	if n := len(t.idle); n > 0 {
		c := t.idle[n-1]
		t.idle = t.idle[:n-1]
		t.mu.Unlock()
		return c, nil
	}
	t.mu.Unlock()
	nc, err := net.Dial("tcp", t.addr)
	if err != nil {
		return nil, err
	}
	c := &krbTestConn{nc: nc, br: bufio.NewReader(nc)}
	x, token, err := t.kc.InitSecContext(context.Background(), t.spn, krb.SPNEGO)
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	resp, err := t.roundTrip(c, nil, http.Header{"Authorization": {"Negotiate " + base64.StdEncoding.EncodeToString(token)}})
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	reply := negotiateReply(resp.header)
	if reply != nil {
		if err := x.VerifyReply(reply); err != nil {
			_ = nc.Close()
			return nil, err
		}
	}
	if resp.status != http.StatusOK {
		_ = nc.Close()
		return nil, fmt.Errorf("kerberos logon answered HTTP %d", resp.status)
	}
	if reply == nil {
		_ = nc.Close()
		return nil, errors.New("the host accepted the logon without an AP-REP (no mutual authentication)")
	}
	c.ctx = x
	return c, nil
}

type krbResp struct {
	status int
	header http.Header
	body   []byte
}

func (t *krbTransport) roundTrip(c *krbTestConn, body []byte, h http.Header) (*krbResp, error) {
	req := &http.Request{Method: http.MethodPost, URL: t.url, Host: t.addr, Header: http.Header{},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	for k, v := range h {
		req.Header[k] = v
	}
	if len(body) > 0 {
		req.Header.Set("Content-Type", `multipart/encrypted;protocol="application/HTTP-SPNEGO-session-encrypted";boundary="Encrypted Boundary"`)
	}
	if err := req.Write(c.nc); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &krbResp{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

func negotiateReply(h http.Header) []byte {
	for _, v := range h.Values("WWW-Authenticate") {
		scheme, tok, _ := strings.Cut(v, " ")
		if strings.EqualFold(scheme, "Negotiate") && tok != "" {
			raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(tok))
			if err == nil {
				return raw
			}
		}
	}
	return nil
}

// frame and unframe are the client's half of the MS-WSMV framing, written
// independently of the server's.
func frame(plainLen int, sig, data []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "--Encrypted Boundary\r\n\tContent-Type: application/HTTP-SPNEGO-session-encrypted\r\n\tOriginalContent: type=application/soap+xml;charset=UTF-8;Length=%d\r\n--Encrypted Boundary\r\n\tContent-Type: application/octet-stream\r\n", plainLen)
	_ = binary.Write(&b, binary.LittleEndian, uint32(len(sig)))
	b.Write(sig)
	b.Write(data)
	b.WriteString("--Encrypted Boundary--\r\n")
	return b.Bytes()
}

func unframe(x *krb.Context, body []byte) ([]byte, error) {
	marker := []byte("\tContent-Type: application/octet-stream\r\n")
	i := bytes.Index(body, marker)
	if i < 0 {
		return nil, fmt.Errorf("not an encrypted answer: %.200q", body)
	}
	payload := bytes.TrimSuffix(body[i+len(marker):], []byte("--Encrypted Boundary--\r\n"))
	n := int(binary.LittleEndian.Uint32(payload[:4]))
	return x.Unseal(payload[4:4+n], payload[4+n:])
}

func (e *krbEnv) masterzen(t *testing.T, kc *krb.Client, spn string) *winrm.Client {
	t.Helper()
	params := winrm.NewParameters("PT60S", "en-US", 153600)
	params.TransportDecorator = func() winrm.Transporter { return &krbTransport{kc: kc, spn: spn} }
	return e.client(t, "", "", params)
}

// masterzen/winrm over our Kerberos client: the host maps alice@REALM to the
// domain user MSSQLIFI\alice, and every message travels sealed (the endpoint
// refuses clear text over HTTP).
func TestKerberosSealedExchange(t *testing.T) {
	e := newKrbEnv(t, nil)
	kc, err := krb.New(krb.Config{Username: krbUser + "@" + e.kdc.Realm, Password: krbPassword, Krb5Conf: e.kdc.Krb5Conf})
	if err != nil {
		t.Fatal(err)
	}
	c := e.masterzen(t, kc, "HTTP/"+krbHostFQDN)
	if out, _, code := run(t, c, "whoami", ""); out != krbDomain+`\`+krbUser || code != 0 {
		t.Fatalf("whoami over Kerberos = %q (exit %d), want %s\\%s", out, code, krbDomain, krbUser)
	}
	stdin := strings.Repeat("sealed stdin line\r\n", 2000)
	if out, _, code := run(t, c, "cat", stdin); out != stdin || code != 0 {
		t.Fatalf("cat over Kerberos returned %d bytes (exit %d), want the %d bytes of stdin back", len(out), code, len(stdin))
	}
}

// A ticket whose authenticator is 10 minutes off gets the host's KRB_AP_ERR_SKEW,
// and the client names the clock skew.
func TestKerberosClockSkewNamed(t *testing.T) {
	e := newKrbEnv(t, nil)
	kc, err := krb.New(krb.Config{Username: krbUser + "@" + e.kdc.Realm, Password: krbPassword, Krb5Conf: e.kdc.Krb5Conf,
		Now: func() time.Time { return time.Now().Add(10 * time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	tr := &krbTransport{kc: kc, spn: "HTTP/" + krbHostFQDN}
	if err := tr.Transport(&winrm.Endpoint{Host: e.host, Port: e.port}); err != nil {
		t.Fatal(err)
	}
	_, err = tr.conn()
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
	e := newKrbEnv(t, nil)
	// Re-key the SPN at the KDC: the host's keytab is now stale.
	e.kdc.Kadmin(t, "cpw -randkey HTTP/"+krbHostFQDN)
	kc, err := krb.New(krb.Config{Username: krbUser + "@" + e.kdc.Realm, Password: krbPassword, Krb5Conf: e.kdc.Krb5Conf})
	if err != nil {
		t.Fatal(err)
	}
	tr := &krbTransport{kc: kc, spn: "HTTP/" + krbHostFQDN}
	_ = tr.Transport(&winrm.Endpoint{Host: e.host, Port: e.port})
	_, err = tr.conn()
	if !errors.Is(err, krb.ErrRefused) || !strings.Contains(err.Error(), "KRB_AP_ERR_MODIFIED") {
		t.Fatalf("logon to a host with a stale keytab: %v, want ErrRefused naming KRB_AP_ERR_MODIFIED", err)
	}
}

// pywinrm with Kerberos (Debian's python3-requests-kerberos, MIT GSSAPI) after
// kinit into a temporary credential cache, over HTTP with message encryption.
func TestPywinrmKerberosSealed(t *testing.T) {
	python := pytest.PythonWith(t, "winrm, requests_kerberos", "python3-requests-kerberos")
	e := newKrbEnv(t, nil)
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
	script := `
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
	args := fmt.Sprintf(`{"endpoint": %q, "user": %q, "host": %q}`, e.endpoint(), krbUser+"@"+e.kdc.Realm, krbHostFQDN)
	cmd := exec.Command(python, "-c", script, args)
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
