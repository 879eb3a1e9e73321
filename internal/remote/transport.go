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
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/masterzen/winrm"
	"github.com/masterzen/winrm/soap"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ntlmauth"
)

// transport is a winrm.Transporter that owns its TCP connections, so that NTLM works:
// NTLM authenticates a connection, not a request (design/windows-behaviour.md#ntlm-over-http). masterzen's
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
	auth     string // "negotiate", "kerberos", "ntlm" or "basic"
	user     string
	password string
	// spn is the service principal name the NTLM logon names (MsvAvTargetName), so
	// that a host it was not meant for refuses it: "HTTP/<host>" unless overridden.
	spn string
	// allowUnencrypted lets Basic send its password and the bodies in clear text over
	// plain HTTP; without it the transport refuses before sending anything.
	allowUnencrypted bool
	// encrypt: NTLM or Kerberos over plain HTTP seals every body (MS-WSMV 2.2.9.1),
	// as a host with AllowUnencrypted=false (Windows' default) demands. Set by
	// Transport.
	encrypt bool
	// userAgent is the User-Agent header of every request ("": Go's default).
	userAgent string
	// krb, when set, logs connections on with Kerberos (kerberos.go); it is the
	// host's, shared by all its transports. nil: NTLM (or Basic).
	krb *krbLogon

	// Set by Transport.
	url     *url.URL
	addr    string      // host:port to dial
	tlsConf *tls.Config // nil over plain HTTP
	timeout time.Duration
	dial    func(network, addr string) (net.Conn, error)
	// sessions, when set, lets TLS resume sessions across the host's transports.
	sessions tls.ClientSessionCache

	// idleTimeout: a pooled connection unused this long is closed (0: idleTimeout).
	idleTimeout time.Duration
	// idleClosed, when set, is called after the pool closed a connection that had
	// been idle too long or that the server closed (tests).
	idleClosed func()

	mu   sync.Mutex
	idle []*conn
}

// maxIdleConns bounds the connections a transport keeps for reuse. Our exchange
// (exchange.go) uses one per operation; masterzen's Run used two at a time.
const maxIdleConns = 4

// idleTimeout is how long a pooled connection waits for the next operation before it
// is closed. The operations of one apply follow each other within milliseconds and
// reuse the connection; a refresh makes one operation per host, and a pooled TLS
// connection with its reader goroutine costs about 30 KB, so keeping every host's
// for the life of the provider made a 100-host plan about 3 MB larger (issue 9).
// A later operation connects anew and resumes the TLS session (one NTLM handshake
// more).
const idleTimeout = 2 * time.Second

// maxResponseBody bounds a response body; WinRM's MaxEnvelopeSize is far smaller.
const maxResponseBody = 64 << 20

// dialTimeout bounds connecting (and with TLS, the handshake's TCP part), as
// masterzen's default transport does.
const dialTimeout = 30 * time.Second

func newTransport(auth, user, password string) *transport {
	return &transport{auth: auth, user: user, password: password}
}

// newSecureTransport is the transport for cfg with its authentication auth.
func newSecureTransport(cfg Config, auth string) *transport {
	t := newTransport(auth, cfg.Username, cfg.Password)
	t.userAgent = cfg.UserAgent
	if t.userAgent == "" {
		t.userAgent = contract.UserAgent("")
	}
	t.spn = cfg.SPN
	if t.spn == "" {
		t.spn = DefaultSPN(cfg.Host)
	}
	t.allowUnencrypted = cfg.AllowUnencrypted
	return t
}

// DefaultSPN is the service principal name of a host's WinRM service as Windows
// clients name it: HTTP/<host as given>, but for an IPv4-mapped IPv6 address
// (::ffff:192.0.2.10), which names the host by its IPv4 address: the host knows
// itself by that address, not by its IPv6 spelling, and would refuse an NTLM logon
// naming the other (SPN target validation).
func DefaultSPN(host string) string {
	if a, err := netip.ParseAddr(host); err == nil && a.Is4In6() {
		return "HTTP/" + a.Unmap().String()
	}
	return "HTTP/" + host
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
	t.encrypt = !ep.HTTPS && t.auth != "basic"
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
			ClientSessionCache: t.sessions,
		}
		if len(ep.CACert) > 0 {
			pool := caPool(ep.CACert)
			if pool == nil {
				return ErrCACert
			}
			t.tlsConf.RootCAs = pool
		}
	}
	return nil
}

// caPools holds the parsed CA certificates by their PEM text: every host (and every
// session of a host) of a provider configuration has the same ca_cert, parsed once.
// A few configurations at most live in one process; the map starts over beyond that.
var caPools struct {
	sync.Mutex
	m map[string]*x509.CertPool
}

const maxCAPools = 8

// caPool is the pool of the certificates in pemCerts, or nil when it holds none.
// Pools are shared, and never changed after they are made.
func caPool(pemCerts []byte) *x509.CertPool {
	caPools.Lock()
	defer caPools.Unlock()
	if p, ok := caPools.m[string(pemCerts)]; ok {
		return p
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCerts) {
		return nil
	}
	if caPools.m == nil || len(caPools.m) >= maxCAPools {
		caPools.m = map[string]*x509.CertPool{}
	}
	caPools.m[string(pemCerts)] = pool
	return pool
}

// Post sends one SOAP message and answers as masterzen's own transports do, since the
// rest of masterzen parses these errors: the body of a 200 SOAP answer; for another
// status with a SOAP body an error "http error N: BODY" (masterzen finds the
// OperationTimeout fault of a Receive long poll in that text); for an answer without
// a SOAP body "http response error: N - invalid content type". Both are
// *httpStatusError.
func (t *transport) Post(_ *winrm.Client, request *soap.SoapMessage) (string, error) {
	body := []byte(request.String())
	if err := t.mayPost(); err != nil {
		return "", err
	}
	c, err := t.get()
	if err != nil {
		return "", t.fail(err)
	}
	resp, err := t.exchange(c, body)
	if err != nil {
		c.close()
		return "", t.fail(err)
	}
	answer, err := t.answer(resp)
	if resp.close || errors.Is(err, ErrUnverifiedAnswer) {
		c.close() // a connection that an unverified answer came on is not used again
	} else {
		t.put(c)
	}
	return answer, err
}

// mayPost refuses what must never be sent: the password in clear text, unless the
// user said so.
func (t *transport) mayPost() error {
	if t.auth == AuthBasic && t.tlsConf == nil && !t.allowUnencrypted {
		return t.fail(errBasicOverHTTP)
	}
	return nil
}

// answer is the SOAP body of a response, or the error it stands for. On a sealing
// connection only a sealed answer that verified (send) is a result: a 2xx answer in
// clear text could come from anyone on the path, and an unsealed non-2xx answer is a
// failure whose body is not read (HTTP.sys's 503 or 404 while WinRM restarts, a 401,
// Windows' empty 500 for a clear-text body).
func (t *transport) answer(resp *response) (string, error) {
	if t.encrypt && !resp.sealed {
		if resp.status >= 200 && resp.status < 300 {
			return "", t.unverified(fmt.Sprintf("an answer in clear text (HTTP %d, %s) on a connection whose every answer must be sealed", resp.status, contentTypeOf(resp)))
		}
		if resp.status == http.StatusInternalServerError && len(resp.body) == 0 {
			// Windows' answer to a clear-text body when AllowUnencrypted is false.
			return "", &encryptionRequiredError{Status: resp.status}
		}
		return "", &httpStatusError{Status: resp.status}
	}
	if strings.Contains(resp.header.Get("Content-Type"), "application/soap+xml") {
		if resp.status != http.StatusOK {
			return "", &httpStatusError{Status: resp.status, Body: string(resp.body), SOAP: true}
		}
		return string(resp.body), nil
	}
	if t.tlsConf == nil && !resp.sealed && resp.status == http.StatusInternalServerError && len(resp.body) == 0 {
		// Windows' answer to a clear-text body when AllowUnencrypted is false.
		return "", &encryptionRequiredError{Status: resp.status}
	}
	return "", &httpStatusError{Status: resp.status}
}

// contentTypeOf is the answer's Content-Type for messages, "no Content-Type" when absent.
func contentTypeOf(resp *response) string {
	if ct := resp.header.Get("Content-Type"); ct != "" {
		return "Content-Type " + ct
	}
	return "no Content-Type"
}

// ErrUnverifiedAnswer is wrapped by every answer that does not prove it came from the
// authenticated host: on a connection that seals (NTLM or Kerberos over HTTP) a 2xx
// answer in clear text, a sealed answer that does not unseal and verify, or one sealed
// with another sequence number; and an answer other than a 401 challenge (or a plain
// HTTP error) to the logon's first message. Something between this machine and the
// host may be answering in its place: such a failure is never transient, and nothing
// the answer says is used.
var ErrUnverifiedAnswer = errors.New("possible man-in-the-middle: the answer does not come from the authenticated host")

// unverifiedError is an ErrUnverifiedAnswer about one answer of one address.
type unverifiedError struct {
	Addr string
	What string
	Err  error // the verification's own failure, if any
}

func (e *unverifiedError) Error() string {
	msg := fmt.Sprintf("possible man-in-the-middle: %s sent %s", e.Addr, e.What)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *unverifiedError) Is(target error) bool { return target == ErrUnverifiedAnswer }
func (e *unverifiedError) Unwrap() error        { return e.Err }

func (t *transport) unverified(what string) error {
	return &unverifiedError{Addr: t.addr, What: what}
}

// errBasicOverHTTP: Basic over plain HTTP without allow_unencrypted.
var errBasicOverHTTP = errors.New("basic authentication over plain HTTP would send the password in clear text; the request was not sent")

// encryptionRequiredError is a host's refusal of a clear-text body over HTTP: HTTP 500
// with no SOAP fault, as Windows answers with AllowUnencrypted=false.
type encryptionRequiredError struct{ Status int }

func (e *encryptionRequiredError) Error() string {
	return fmt.Sprintf("http response error: %d - the host refused a message sent in clear text", e.Status)
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
	authed bool       // NTLM or Kerberos completed on this connection
	idle   chan error // while pooled: the result of the background liveness read
	// binding is the TLS channel's "tls-server-end-point" data (RFC 5929), nil over HTTP.
	binding []byte
	// seal protects the bodies of an authenticated connection over HTTP: this
	// connection's own NTLM session or Kerberos context.
	seal sealer
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

// put pools c for idleTimeout. While it waits, a goroutine reads from it, so that a
// connection the server closed (or wrote to unasked) is noticed before a request goes
// out on it, as net/http does; when that read ends (the idle time is over, or the
// server closed or wrote) and c is still in the pool, c is closed and dropped.
func (t *transport) put(c *conn) {
	t.mu.Lock()
	if len(t.idle) >= maxIdleConns {
		t.mu.Unlock()
		c.close()
		return
	}
	timeout := t.idleTimeout
	if timeout <= 0 {
		timeout = idleTimeout
	}
	_ = c.nc.SetDeadline(time.Time{})
	_ = c.nc.SetReadDeadline(time.Now().Add(timeout))
	result := make(chan error, 1)
	c.idle = result
	t.idle = append(t.idle, c)
	t.mu.Unlock()
	go func() {
		_, err := c.br.Peek(1)
		// Whether c is still pooled is decided before the result is sent: once
		// takeBack has it, c may be in use, or pooled again, by then.
		t.mu.Lock()
		i := slices.Index(t.idle, c)
		if i >= 0 {
			t.idle = slices.Delete(t.idle, i, i+1)
		}
		t.mu.Unlock()
		result <- err
		if i >= 0 {
			// Nobody took c back: it expired, or the server ended it.
			c.close()
			if t.idleClosed != nil {
				t.idleClosed()
			}
		}
	}()
}

// takeBack stops the background read and says whether c is still usable: only if
// the read ended by a deadline (ours, or the idle time's just before c was taken),
// with nothing read.
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
		c := &conn{nc: nc, br: bufio.NewReader(nc), bw: bufio.NewWriter(nc)}
		if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
			c.binding = ntlmauth.TLSServerEndPoint(certs[0])
		}
		return c, nil
	}
	return &conn{nc: nc, br: bufio.NewReader(nc), bw: bufio.NewWriter(nc)}, nil
}

// response is a whole HTTP answer; the body has been read, so the connection is free.
type response struct {
	status int
	header http.Header
	body   []byte
	close  bool // the server will close the connection
	sealed bool // the body was encrypted (and is now the plain SOAP envelope)
}

// exchange sends body on c, authenticating as needed, within one deadline. Over
// plain HTTP with NTLM or Kerberos the body is sealed, and the answer unsealed.
func (t *transport) exchange(c *conn, body []byte) (*response, error) {
	if err := c.nc.SetDeadline(time.Now().Add(t.timeout)); err != nil {
		return nil, err
	}
	if t.auth == "basic" {
		return t.roundTrip(c, body, "", func(r *http.Request) { r.SetBasicAuth(t.user, t.password) })
	}
	// At most one re-authentication: a server that forgot the connection answers 401
	// to a request that relied on it.
	for attempt := 0; ; attempt++ {
		if !c.authed {
			resp, carried, err := t.handshake(c, body)
			if err != nil || !c.authed || carried {
				return resp, err
			}
		}
		resp, err := t.send(c, body)
		if err != nil || resp.status != http.StatusUnauthorized || resp.close || attempt > 0 {
			return resp, err
		}
		c.authed, c.seal = false, nil
	}
}

// handshake authenticates c: with Kerberos when the host's logon says so (falling
// back to NTLM on this same connection when "negotiate" cannot get a ticket; nothing
// was sent then), else NTLM. carried: the handshake's last leg carried body, and
// resp is its answer (NTLM without encryption).
func (t *transport) handshake(c *conn, body []byte) (resp *response, carried bool, err error) {
	if t.krb.use() {
		err := t.krbHandshake(c)
		if err == nil || !t.krb.fallBack(err) {
			return nil, false, err
		}
	}
	resp, err = t.ntlmHandshake(c, body)
	return resp, !t.encrypt, err
}

// send posts body on an authenticated connection, sealed when encrypting. A sealed
// answer must unseal and verify with c's context (its signature and sequence number);
// an unsealed one is left for answer to judge, unread.
func (t *transport) send(c *conn, body []byte) (*response, error) {
	if !t.encrypt {
		return t.roundTrip(c, body, "", nil)
	}
	framed, err := wrapBody(c.seal, body)
	if err != nil {
		return nil, fmt.Errorf("encrypting the WinRM message: %w", err)
	}
	resp, err := t.roundTrip(c, framed, encryptedContentType(c.seal.Protocol()), nil)
	if err != nil || !isEncryptedType(resp.header.Get("Content-Type")) {
		return resp, err
	}
	plain, err := unwrapBody(c.seal, resp.body)
	if err != nil {
		return nil, &unverifiedError{Addr: t.addr, What: fmt.Sprintf("a sealed answer (HTTP %d) that does not verify with this connection's session", resp.status), Err: err}
	}
	resp.body, resp.sealed = plain, true
	resp.header.Set("Content-Type", soapContentType)
	return resp, nil
}

// ntlmHandshake authenticates c with NTLM: NEGOTIATE on an empty request (HTTP
// Negotiate lets a client start with its token, RFC 4559 and MS-WSMV), the server's
// CHALLENGE in a 401, then exactly one AUTHENTICATE, all on c. Over HTTPS the
// AUTHENTICATE carries body and its answer is body's; over HTTP it carries an empty
// body too (nothing leaves in clear text, as pywinrm does) and the caller sends body
// sealed. NEGOTIATE never carries body: no host may answer a message before the logon.
func (t *transport) ntlmHandshake(c *conn, body []byte) (*response, error) {
	client := &ntlmauth.Client{User: t.user, Password: t.password, TargetSPN: t.spn, ChannelBindings: c.binding}
	legBody := body
	if t.encrypt {
		legBody = nil
	}
	resp, err := t.roundTrip(c, nil, "", negotiateHeader(client.Negotiate()))
	if err != nil {
		return nil, err
	}
	if resp.status >= 200 && resp.status < 300 {
		// A host that accepts a logon's first message has checked nothing.
		return nil, t.unverified(fmt.Sprintf("HTTP %d to the first message of the NTLM logon, which only a 401 with a challenge answers", resp.status))
	}
	if resp.status != http.StatusUnauthorized {
		return resp, nil // an HTTP error (503 while WinRM restarts): a failure, not a result
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
	authenticate, err := client.Authenticate(challenge)
	if err != nil {
		return nil, fmt.Errorf("answering the server's NTLM challenge: %w", err)
	}
	resp, err = t.roundTrip(c, legBody, "", negotiateHeader(authenticate))
	if err != nil {
		return nil, err
	}
	// Anything but 401 means the server accepted the AUTHENTICATE (a SOAP fault such
	// as a Receive's OperationTimeout still comes on an authenticated connection).
	c.authed = resp.status != http.StatusUnauthorized
	if !c.authed || !t.encrypt {
		return resp, nil
	}
	if !client.Session().Sealing() {
		return nil, errors.New("the host did not grant NTLM sealing, so WinRM messages over HTTP cannot be encrypted")
	}
	c.seal = ntlmSealer{client.Session()}
	if resp.close {
		return nil, errors.New("the server closed the connection right after the NTLM logon, before the encrypted message could be sent")
	}
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

// roundTrip writes one POST of body on c and reads the whole answer.
func (t *transport) roundTrip(c *conn, body []byte, contentType string, auth func(*http.Request)) (*response, error) {
	if contentType == "" {
		contentType = soapContentType
	}
	req := &http.Request{
		Method:        http.MethodPost,
		URL:           t.url,
		Host:          t.addr,
		Header:        http.Header{"Content-Type": {contentType}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
	}
	if len(body) == 0 {
		req.Body = nil // Content-Length: 0, not a chunked empty body
	}
	if t.userAgent != "" {
		req.Header.Set("User-Agent", t.userAgent)
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
