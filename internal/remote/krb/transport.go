package krb

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/masterzen/winrm"
	"github.com/masterzen/winrm/soap"
)

// Transport is a winrm.Transporter that logs each connection on with Kerberos
// (HTTP Negotiate, SPNEGO) and, over plain HTTP, seals every message as MS-WSMV
// 2.2.9.1 specifies, so a host with AllowUnencrypted=false accepts it. A
// connection authenticates once with an empty POST (as pywinrm does), checks
// the host's AP-REP (mutual authentication), and keeps its context for every
// later message; each message travels on one connection from request to answer.
// HTTP proxies are not used.
type Transport struct {
	client *Client
	spn    string

	url     *url.URL
	addr    string
	tlsConf *tls.Config
	timeout time.Duration

	mu   sync.Mutex
	idle []*krbConn
}

type krbConn struct {
	nc  net.Conn
	br  *bufio.Reader
	ctx *Context
}

// NewTransport makes a Transport for one host. spn "" means DefaultSPN(host).
func NewTransport(c *Client, spn string) *Transport { return &Transport{client: c, spn: spn} }

var _ winrm.Transporter = (*Transport)(nil)

// StatusError is an answer other than 200. Its text is masterzen's ("http error
// N: BODY" with a SOAP body), which masterzen matches for Receive timeouts.
type StatusError struct {
	Status int
	Body   string
	SOAP   bool
}

func (e *StatusError) Error() string {
	if e.SOAP {
		return fmt.Sprintf("http error %d: %s", e.Status, e.Body)
	}
	return fmt.Sprintf("http response error: %d - invalid content type", e.Status)
}

// Transport takes the endpoint's address, TLS settings and timeout.
func (t *Transport) Transport(ep *winrm.Endpoint) error {
	scheme := "http"
	if ep.HTTPS {
		scheme = "https"
	}
	t.addr = net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
	t.url = &url.URL{Scheme: scheme, Host: t.addr, Path: "/wsman"}
	if t.spn == "" {
		t.spn = DefaultSPN(ep.Host)
	}
	t.timeout = ep.Timeout
	if t.timeout <= 0 {
		t.timeout = 90 * time.Second
	}
	if ep.HTTPS {
		name := ep.TLSServerName
		if name == "" {
			name = ep.Host
		}
		t.tlsConf = &tls.Config{ServerName: name, InsecureSkipVerify: ep.Insecure, MinVersion: tls.VersionTLS12} //nolint:gosec // only when the user set insecure = true
		if len(ep.CACert) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(ep.CACert) {
				return errors.New("ca_cert holds no PEM certificate")
			}
			t.tlsConf.RootCAs = pool
		}
	}
	return nil
}

// SPN is the service principal the transport asks tickets for.
func (t *Transport) SPN() string { return t.spn }

// Post sends one SOAP message on an authenticated connection.
func (t *Transport) Post(_ *winrm.Client, m *soap.SoapMessage) (string, error) {
	msg := []byte(m.String())
	c, reused, err := t.get()
	if err != nil {
		return "", err
	}
	resp, err := t.send(c, msg)
	if err != nil && reused {
		// The host may have closed an idle connection: one new connection.
		c.close()
		if c, _, err = t.get(); err != nil {
			return "", err
		}
		resp, err = t.send(c, msg)
	}
	if err != nil {
		c.close()
		return "", fmt.Errorf("POST %s: %w", t.url, err)
	}
	if resp.close {
		c.close()
	} else {
		t.put(c)
	}
	soapBody := strings.Contains(resp.header.Get("Content-Type"), "application/soap+xml") || len(resp.plain) > 0
	if resp.status == http.StatusOK && soapBody {
		return string(resp.plain), nil
	}
	if resp.status == http.StatusUnauthorized {
		return "", &Error{Kind: KindRefused, Principal: t.client.principal, SPN: t.spn,
			Message: fmt.Sprintf("%s refused a message on a connection %s had authenticated with Kerberos (HTTP 401)", t.addr, t.client.principal),
			Hint:    "The host may require message encryption or no longer know the connection; check its WinRM service configuration (winrm get winrm/config/service)"}
	}
	return "", &StatusError{Status: resp.status, Body: string(resp.plain), SOAP: soapBody}
}

type answer struct {
	status int
	header http.Header
	plain  []byte
	close  bool
}

// send seals msg (over HTTP), posts it and unseals the answer.
func (t *Transport) send(c *krbConn, msg []byte) (*answer, error) {
	if err := c.nc.SetDeadline(time.Now().Add(t.timeout)); err != nil {
		return nil, err
	}
	body, contentType := msg, "application/soap+xml;charset=UTF-8"
	if t.tlsConf == nil {
		sig, data, err := c.ctx.Seal(msg)
		if err != nil {
			return nil, err
		}
		body, contentType = Frame(len(msg), sig, data), EncryptedContentType
	}
	resp, err := roundTrip(c, t.url, t.addr, body, http.Header{"Content-Type": {contentType}})
	if err != nil {
		return nil, err
	}
	a := &answer{status: resp.StatusCode, header: resp.Header, close: resp.Close}
	raw, err := readBody(resp)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "multipart/encrypted") {
		sig, data, length, err := Unframe(raw)
		if err != nil {
			return nil, err
		}
		if a.plain, err = c.ctx.Unseal(sig, data); err != nil {
			return nil, err
		}
		if len(a.plain) != length {
			return nil, fmt.Errorf("%w: %d bytes after unsealing, the answer says %d", ErrWrap, len(a.plain), length)
		}
		return a, nil
	}
	if len(raw) > 0 && t.tlsConf == nil {
		return nil, fmt.Errorf("%w: %s answered HTTP %d in clear text on a sealed connection", ErrWrap, t.addr, resp.StatusCode)
	}
	a.plain = raw
	return a, nil
}

func (t *Transport) get() (*krbConn, bool, error) {
	t.mu.Lock()
	if n := len(t.idle); n > 0 {
		c := t.idle[n-1]
		t.idle = t.idle[:n-1]
		t.mu.Unlock()
		return c, true, nil
	}
	t.mu.Unlock()
	c, err := t.dial()
	return c, false, err
}

func (t *Transport) put(c *krbConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.idle) >= 4 {
		c.close()
		return
	}
	t.idle = append(t.idle, c)
}

func (c *krbConn) close() { _ = c.nc.Close() }

// dial connects and authenticates a connection: an empty POST with the AP-REQ,
// answered 200 with the AP-REP, which must verify.
func (t *Transport) dial() (*krbConn, error) {
	nc, err := (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).Dial("tcp", t.addr)
	if err != nil {
		return nil, fmt.Errorf("POST %s: %w", t.url, err)
	}
	if t.tlsConf != nil {
		tc := tls.Client(nc, t.tlsConf.Clone())
		_ = tc.SetDeadline(time.Now().Add(30 * time.Second))
		if err := tc.Handshake(); err != nil {
			_ = nc.Close()
			return nil, fmt.Errorf("POST %s: %w", t.url, err)
		}
		nc = tc
	}
	c := &krbConn{nc: nc, br: bufio.NewReader(nc)}
	ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
	defer cancel()
	x, token, err := t.client.InitSecContext(ctx, t.spn, SPNEGO)
	if err != nil {
		c.close()
		return nil, err
	}
	_ = nc.SetDeadline(time.Now().Add(t.timeout))
	resp, err := roundTrip(c, t.url, t.addr, nil, http.Header{"Authorization": {"Negotiate " + base64.StdEncoding.EncodeToString(token)}})
	if err != nil {
		c.close()
		return nil, fmt.Errorf("POST %s (Kerberos logon): %w", t.url, err)
	}
	if _, err := readBody(resp); err != nil {
		c.close()
		return nil, err
	}
	reply := negotiateToken(resp.Header.Values("WWW-Authenticate"))
	if reply != nil {
		if err := x.VerifyReply(reply); err != nil {
			c.close()
			return nil, err
		}
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		c.close()
		return nil, &Error{Kind: KindRefused, Principal: t.client.principal, SPN: t.spn,
			Message: fmt.Sprintf("%s refused the Kerberos logon of %s for %s (HTTP 401, offers %s)", t.addr, t.client.principal, t.spn, strings.Join(resp.Header.Values("WWW-Authenticate"), ", ")),
			Hint:    "Check that Kerberos is enabled on the WinRM service (winrm get winrm/config/service/auth), that the user is a local Administrator of the host, and that the SPN is the host's"}
	case resp.StatusCode != http.StatusOK:
		c.close()
		return nil, &StatusError{Status: resp.StatusCode}
	case reply == nil || !x.Established():
		c.close()
		return nil, &Error{Kind: KindMutualAuth, Principal: t.client.principal, SPN: t.spn,
			Message: fmt.Sprintf("%s accepted the Kerberos logon without proving it holds the key of %s (no AP-REP)", t.addr, t.spn),
			Hint:    "Do not trust this host: a genuine Windows host always answers with an AP-REP"}
	}
	if resp.Close {
		c.close()
		return nil, fmt.Errorf("%s closed the connection right after the Kerberos logon, so its context cannot be used", t.addr)
	}
	c.ctx = x
	return c, nil
}

func roundTrip(c *krbConn, u *url.URL, host string, body []byte, h http.Header) (*http.Response, error) {
	req := &http.Request{Method: http.MethodPost, URL: u, Host: host, Header: h,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	if err := req.Write(c.nc); err != nil {
		return nil, err
	}
	return http.ReadResponse(c.br, req)
}

func readBody(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer's body: %w", err)
	}
	if len(b) > 64<<20 {
		return nil, errors.New("the answer's body is larger than 64 MiB")
	}
	return b, nil
}

// negotiateToken is the token of "WWW-Authenticate: Negotiate TOKEN", or nil.
func negotiateToken(values []string) []byte {
	for _, v := range values {
		scheme, tok, _ := strings.Cut(strings.TrimSpace(v), " ")
		if !strings.EqualFold(scheme, "Negotiate") && !strings.EqualFold(scheme, "Kerberos") {
			continue
		}
		if raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(tok)); err == nil && len(raw) > 0 {
			return raw
		}
	}
	return nil
}

// MS-WSMV 2.2.9.1 framing of a sealed message.
const (
	encryptedProtocol = "application/HTTP-SPNEGO-session-encrypted"
	// EncryptedContentType is the Content-Type of a sealed request.
	EncryptedContentType = `multipart/encrypted;protocol="` + encryptedProtocol + `";boundary="Encrypted Boundary"`
)

// Frame puts a sealed message (signature and data) in the multipart/encrypted body.
func Frame(plainLen int, sig, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString("--Encrypted Boundary\r\n\tContent-Type: " + encryptedProtocol + "\r\n")
	b.WriteString("\tOriginalContent: type=application/soap+xml;charset=UTF-8;Length=" + strconv.Itoa(plainLen) + "\r\n")
	b.WriteString("--Encrypted Boundary\r\n\tContent-Type: application/octet-stream\r\n")
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(sig)))
	b.Write(n[:])
	b.Write(sig)
	b.Write(data)
	b.WriteString("--Encrypted Boundary--\r\n")
	return b.Bytes()
}

// Unframe splits a multipart/encrypted body into signature, data and the
// original length.
func Unframe(body []byte) (sig, data []byte, length int, err error) {
	bad := func(why string) ([]byte, []byte, int, error) {
		return nil, nil, 0, fmt.Errorf("%w: the encrypted answer is malformed: %s", ErrWrap, why)
	}
	head, rest, ok := bytes.Cut(body, []byte("\tContent-Type: application/octet-stream\r\n"))
	if !ok {
		return bad("no application/octet-stream part")
	}
	i := bytes.Index(head, []byte("Length="))
	if i < 0 {
		return bad("no OriginalContent Length")
	}
	j := i + len("Length=")
	k := j
	for k < len(head) && head[k] >= '0' && head[k] <= '9' {
		k++
	}
	if length, err = strconv.Atoi(string(head[j:k])); err != nil {
		return bad("bad OriginalContent Length")
	}
	rest, ok = bytes.CutSuffix(rest, []byte("--Encrypted Boundary--\r\n"))
	if !ok {
		return bad("no closing boundary (multi-part answers are not supported)")
	}
	if len(rest) < 4 {
		return bad("no signature length")
	}
	n := int(binary.LittleEndian.Uint32(rest[:4]))
	if n > len(rest)-4 {
		return bad("signature longer than the payload")
	}
	return rest[4 : 4+n], rest[4+n:], length, nil
}
