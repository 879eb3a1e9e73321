package remote

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/go-ntlmssp"
	"github.com/masterzen/winrm"
	"github.com/masterzen/winrm/soap"
)

// transport is a winrm.Transporter that owns its TCP connections, so that NTLM works:
// NTLM authenticates a connection, not a request (docs/design/windows-behaviour.md#ntlm-over-http). masterzen's
// ClientNTLM sends the three legs of the handshake as independent round trips on a
// pooled net/http Transport, so a leg can leave on another connection (a concurrent
// Send and Receive of one command, or a connection returned to the pool a moment too
// late), and the server answers 401. Here a Post holds one connection for its whole
// exchange, handshake legs included, and a connection remembers that it is
// authenticated.
//
// HTTP proxies are not supported: connections go straight to the host (masterzen's
// transports honoured HTTP_PROXY/HTTPS_PROXY; a proxy would also break NTLM's
// connection binding unless it tunnels).
type transport struct {
	auth     string // "ntlm" or "basic"
	user     string
	password string

	// Set by Transport.
	url     *url.URL
	addr    string      // host:port to dial
	tlsConf *tls.Config // nil over plain HTTP
	timeout time.Duration
	dial    func(network, addr string) (net.Conn, error)

	mu   sync.Mutex
	idle []*conn
}

// maxIdleConns bounds the connections a transport keeps for reuse. One operation
// uses two at a time (masterzen sends stdin while it polls for output).
const maxIdleConns = 4

// maxResponseBody bounds a response body; WinRM's MaxEnvelopeSize is far smaller.
const maxResponseBody = 64 << 20

// dialTimeout bounds connecting (and with TLS, the handshake's TCP part), as
// masterzen's default transport does.
const dialTimeout = 30 * time.Second

func newTransport(auth, user, password string) *transport {
	return &transport{auth: auth, user: user, password: password}
}

var _ winrm.Transporter = (*transport)(nil)

// Transport takes the endpoint's address, TLS settings and timeout.
func (t *transport) Transport(ep *winrm.Endpoint) error {
	scheme := "http"
	if ep.HTTPS {
		scheme = "https"
	}
	t.addr = net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
	t.url = &url.URL{Scheme: scheme, Host: t.addr, Path: "/wsman"}
	t.timeout = ep.Timeout
	if t.timeout <= 0 {
		t.timeout = DefaultTimeout + 30*time.Second
	}
	if t.dial == nil {
		t.dial = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).Dial
	}
	if ep.HTTPS {
		name := ep.TLSServerName
		if name == "" {
			name = ep.Host
		}
		t.tlsConf = &tls.Config{
			ServerName:         name,
			InsecureSkipVerify: ep.Insecure, // only when the user set insecure = true
			MinVersion:         tls.VersionTLS12,
		}
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

// Post sends one SOAP message and answers as masterzen's own transports do, since the
// rest of masterzen parses these errors: the body of a 200 SOAP answer; for another
// status with a SOAP body an error "http error N: BODY" (masterzen finds the
// OperationTimeout fault of a Receive long poll in that text); for an answer without
// a SOAP body "http response error: N - invalid content type". Both are
// *httpStatusError.
func (t *transport) Post(_ *winrm.Client, request *soap.SoapMessage) (string, error) {
	body := []byte(request.String())
	c, err := t.get()
	if err != nil {
		return "", t.fail(err)
	}
	resp, err := t.exchange(c, body)
	if err != nil {
		c.close()
		return "", t.fail(err)
	}
	if resp.close {
		c.close()
	} else {
		t.put(c)
	}
	if strings.Contains(resp.header.Get("Content-Type"), "application/soap+xml") {
		if resp.status != http.StatusOK {
			return "", &httpStatusError{Status: resp.status, Body: string(resp.body), SOAP: true}
		}
		return string(resp.body), nil
	}
	return "", &httpStatusError{Status: resp.status}
}

// httpStatusError is an answer other than 200 with a SOAP body. Its text is
// masterzen's, which masterzen itself and older callers match.
type httpStatusError struct {
	Status int
	Body   string // the SOAP body, when SOAP
	SOAP   bool   // the answer had Content-Type application/soap+xml
}

func (e *httpStatusError) Error() string {
	if e.SOAP {
		return fmt.Sprintf("http error %d: %s", e.Status, e.Body)
	}
	return fmt.Sprintf("http response error: %d - invalid content type", e.Status)
}

// transportError is a failure to exchange a message at all (connect, TLS, I/O).
// It is deliberately not a *url.Error: masterzen retries a Receive forever after a
// *url.Error timeout, while a dead server should end the operation.
type transportError struct {
	URL string
	Err error
}

func (e *transportError) Error() string { return "POST " + e.URL + ": " + e.Err.Error() }
func (e *transportError) Unwrap() error { return e.Err }

func (t *transport) fail(err error) error {
	return &transportError{URL: t.url.String(), Err: err}
}

// conn is one connection to the endpoint and what it knows about authentication.
type conn struct {
	nc     net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	authed bool       // NTLM completed on this connection
	idle   chan error // while pooled: the result of the background liveness read
}

func (c *conn) close() { _ = c.nc.Close() }

// get takes a live idle connection, or dials one.
func (t *transport) get() (*conn, error) {
	for {
		t.mu.Lock()
		n := len(t.idle)
		if n == 0 {
			t.mu.Unlock()
			break
		}
		c := t.idle[n-1]
		t.idle = t.idle[:n-1]
		t.mu.Unlock()
		if c.takeBack() {
			return c, nil
		}
		c.close()
	}
	return t.dialConn()
}

// put pools c. While it waits, a goroutine reads from it, so that a connection the
// server closed (or wrote to unasked) is noticed before a request goes out on it, as
// net/http does.
func (t *transport) put(c *conn) {
	t.mu.Lock()
	if len(t.idle) >= maxIdleConns {
		t.mu.Unlock()
		c.close()
		return
	}
	_ = c.nc.SetDeadline(time.Time{})
	c.idle = make(chan error, 1)
	t.idle = append(t.idle, c)
	t.mu.Unlock()
	go func(c *conn) {
		_, err := c.br.Peek(1)
		c.idle <- err
	}(c)
}

// takeBack stops the background read and says whether c is still usable: only if
// the read ended by our deadline, with nothing read.
func (c *conn) takeBack() bool {
	_ = c.nc.SetReadDeadline(time.Unix(1, 0))
	err := <-c.idle
	c.idle = nil
	return errors.Is(err, os.ErrDeadlineExceeded) && c.br.Buffered() == 0
}

func (t *transport) dialConn() (*conn, error) {
	nc, err := t.dial("tcp", t.addr)
	if err != nil {
		return nil, err
	}
	if t.tlsConf != nil {
		tc := tls.Client(nc, t.tlsConf.Clone())
		_ = tc.SetDeadline(time.Now().Add(dialTimeout))
		if err := tc.Handshake(); err != nil {
			_ = nc.Close()
			return nil, err
		}
		nc = tc
	}
	return &conn{nc: nc, br: bufio.NewReader(nc), bw: bufio.NewWriter(nc)}, nil
}

// response is a whole HTTP answer; the body has been read, so the connection is free.
type response struct {
	status int
	header http.Header
	body   []byte
	close  bool // the server will close the connection
}

// exchange sends body on c, authenticating as needed, within one deadline.
func (t *transport) exchange(c *conn, body []byte) (*response, error) {
	if err := c.nc.SetDeadline(time.Now().Add(t.timeout)); err != nil {
		return nil, err
	}
	if t.auth == "basic" {
		return t.roundTrip(c, body, func(r *http.Request) { r.SetBasicAuth(t.user, t.password) })
	}
	if c.authed {
		resp, err := t.roundTrip(c, body, nil)
		if err != nil || resp.status != http.StatusUnauthorized || resp.close {
			return resp, err
		}
		// The server no longer knows this connection: authenticate it again, once.
		c.authed = false
	}
	return t.ntlmHandshake(c, body)
}

// ntlmHandshake authenticates c with NTLM while sending body: NEGOTIATE on the
// first request (HTTP Negotiate lets a client start with its token, RFC 4559 and
// MS-WSMV), the server's CHALLENGE in a 401, then exactly one AUTHENTICATE, all on c.
func (t *transport) ntlmHandshake(c *conn, body []byte) (*response, error) {
	user, domain, domainNeeded := ntlmUser(t.user)
	negotiate, err := ntlmssp.NewNegotiateMessage(domain, "")
	if err != nil {
		return nil, fmt.Errorf("building the NTLM NEGOTIATE message: %w", err)
	}
	resp, err := t.roundTrip(c, body, negotiateHeader(negotiate))
	if err != nil || resp.status != http.StatusUnauthorized {
		return resp, err
	}
	challenge, err := negotiateToken(resp.header.Values("WWW-Authenticate"))
	if err != nil {
		return nil, err
	}
	if challenge == nil {
		// No NTLM challenge: the listener refuses Negotiate for us (for example NTLM
		// disabled). The 401 reports an authentication failure.
		return resp, nil
	}
	if resp.close {
		return nil, errors.New("the server closed the connection in the middle of the NTLM handshake (after its challenge), so it cannot be finished")
	}
	authenticate, err := ntlmssp.ProcessChallenge(challenge, user, t.password, domainNeeded)
	if err != nil {
		return nil, fmt.Errorf("answering the server's NTLM challenge: %w", err)
	}
	resp, err = t.roundTrip(c, body, negotiateHeader(authenticate))
	if err != nil {
		return nil, err
	}
	// Anything but 401 means the server accepted the AUTHENTICATE (a SOAP fault such
	// as a Receive's OperationTimeout still comes on an authenticated connection).
	c.authed = resp.status != http.StatusUnauthorized
	return resp, nil
}

func negotiateHeader(token []byte) func(*http.Request) {
	v := "Negotiate " + base64.StdEncoding.EncodeToString(token)
	return func(r *http.Request) { r.Header.Set("Authorization", v) }
}

// negotiateToken is the token of the server's "WWW-Authenticate: Negotiate TOKEN",
// or nil when it offers Negotiate without one (or not at all).
func negotiateToken(values []string) ([]byte, error) {
	for _, v := range values {
		scheme, token, _ := strings.Cut(strings.TrimSpace(v), " ")
		token = strings.TrimSpace(token)
		if !strings.EqualFold(scheme, "Negotiate") || token == "" {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(token)
		if err != nil {
			return nil, fmt.Errorf("the server's NTLM challenge is not valid base64: %w", err)
		}
		return raw, nil
	}
	return nil, nil
}

// ntlmUser splits the user name as Azure/go-ntlmssp's Negotiator (and so masterzen's
// ClientNTLM) does: DOMAIN\user gives the domain; user@domain is sent whole, with
// the domain left to the server; a bare user name takes the server's domain.
func ntlmUser(login string) (user, domain string, domainNeeded bool) {
	if d, u, ok := strings.Cut(login, `\`); ok {
		return u, d, true
	}
	if strings.Contains(login, "@") {
		return login, "", false
	}
	return login, "", true
}

// roundTrip writes one POST of body on c and reads the whole answer.
func (t *transport) roundTrip(c *conn, body []byte, auth func(*http.Request)) (*response, error) {
	req := &http.Request{
		Method:        http.MethodPost,
		URL:           t.url,
		Host:          t.addr,
		Header:        http.Header{"Content-Type": {"application/soap+xml;charset=UTF-8"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
	}
	if auth != nil {
		auth(req)
	}
	if err := req.Write(c.bw); err != nil {
		return nil, err
	}
	if err := c.bw.Flush(); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer's body: %w", err)
	}
	if len(b) > maxResponseBody {
		return nil, fmt.Errorf("the answer's body is larger than %d MiB", maxResponseBody>>20)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b, close: resp.Close}, nil
}
