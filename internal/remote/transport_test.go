package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/masterzen/winrm"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/certs"
)

// wire records what each connection accepted by a test host sent, to count
// connections and NTLM messages.
type wire struct {
	mu    sync.Mutex
	conns []*bytes.Buffer
}

func (w *wire) listener(l net.Listener) net.Listener { return &wireListener{Listener: l, w: w} }

type wireListener struct {
	net.Listener
	w *wire
}

func (l *wireListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	buf := new(bytes.Buffer)
	l.w.mu.Lock()
	l.w.conns = append(l.w.conns, buf)
	l.w.mu.Unlock()
	return &wireConn{Conn: c, w: l.w, buf: buf}, nil
}

type wireConn struct {
	net.Conn
	w   *wire
	buf *bytes.Buffer
}

func (c *wireConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.w.mu.Lock()
	c.buf.Write(p[:n])
	c.w.mu.Unlock()
	return n, err
}

// Base64 of "NTLMSSP\x00" and the message type byte.
const (
	wireNegotiate    = "Authorization: Negotiate TlRMTVNTUAAB"
	wireAuthenticate = "Authorization: Negotiate TlRMTVNTUAAD"
)

// count is, per connection, how often s was sent on it.
func (w *wire) count(s string) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := make([]int, len(w.conns))
	for i, b := range w.conns {
		n[i] = strings.Count(b.String(), s)
	}
	return n
}

func (w *wire) dialed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.conns)
}

func sum(ns []int) int {
	t := 0
	for _, n := range ns {
		t += n
	}
	return t
}

// echoInstance answers read_instance with the instance it was asked about, so crossed
// answers show.
func echoInstance(t testing.TB) opHandler {
	return func(op contract.Operation, params json.RawMessage) answer {
		var p contract.ReadInstanceParams
		if err := json.Unmarshal(params, &p); err != nil {
			return answer{stderr: err.Error(), code: 1}
		}
		return answer{stdout: p.Instance}
	}
}

// oneClient is one masterzen client on our transport, without remote's client pool.
// oneClientWith is a masterzen client over HTTP with the transport tr.
func oneClientWith(t testing.TB, port int, tr *transport) *winrm.Client {
	t.Helper()
	ep := &winrm.Endpoint{Host: "127.0.0.1", Port: port, Timeout: 30 * time.Second}
	params := winrm.NewParameters("PT20S", "en-US", 153600)
	params.TransportDecorator = func() winrm.Transporter { return tr }
	c, err := winrm.NewClientWithParameters(ep, testUser, testPassword, params)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func oneClient(t testing.TB, port int, auth string, https bool, caPEM []byte) *winrm.Client {
	t.Helper()
	ep := &winrm.Endpoint{Host: "127.0.0.1", Port: port, HTTPS: https, CACert: caPEM, TLSServerName: "sql01.example.test", Timeout: 30 * time.Second}
	params := winrm.NewParameters("PT20S", "en-US", 153600)
	params.TransportDecorator = func() winrm.Transporter {
		tr := newTransport(auth, testUser, testPassword)
		tr.allowUnencrypted = auth == AuthBasic && !https // the fixture accepts clear text
		return tr
	}
	c, err := winrm.NewClientWithParameters(ep, testUser, testPassword, params)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// readInstanceOn runs read_instance for instance through c and returns what it printed.
func readInstanceOn(ctx context.Context, c *winrm.Client, instance string) (string, error) {
	stdin, err := contract.EncodeInput(contract.OpReadInstance, contract.ReadInstanceParams{Instance: instance, Right: contract.RightManageVolume})
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	code, err := c.RunWithContextWithInput(ctx, contract.CommandLine(), &stdout, &stderr, bytes.NewReader(stdin))
	if err != nil {
		return "", err
	}
	if code != 0 {
		return "", fmt.Errorf("exit code %d: %s", code, stderr.String())
	}
	return stdout.String(), nil
}

// Many operations at once on ONE masterzen client over NTLM: masterzen sends each
// command's stdin while it polls its output, so handshakes run side by side. Every
// operation must succeed with its own answer. (masterzen's ClientNTLM fails this: its
// handshake legs leave on whichever pooled connection is free.)
func TestTransportConcurrentNTLMOnOneClient(t *testing.T) {
	w := &wire{}
	h := newTestHostWith(t, hostOptions{listener: w.listener}, echoInstance(t))
	c := oneClient(t, h.port, "ntlm", false, nil)
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	got := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			got[i], errs[i] = readInstanceOn(ctx, c, "INST"+strconv.Itoa(i))
		}()
	}
	wg.Wait()
	for i := range n {
		if want := "INST" + strconv.Itoa(i); errs[i] != nil || got[i] != want {
			t.Errorf("operation %d = %q, %v; want %q", i, got[i], errs[i], want)
		}
	}
	// Every connection authenticated exactly once, with its own handshake.
	neg, auth := w.count(wireNegotiate), w.count(wireAuthenticate)
	for i := range neg {
		if neg[i] != 1 || auth[i] != 1 {
			t.Errorf("connection %d carried %d NEGOTIATE and %d AUTHENTICATE; want 1 and 1", i, neg[i], auth[i])
		}
	}
}

// Sequential operations reuse the authenticated connections: one handshake per
// connection, and at most two connections (stdin and output polling overlap).
func TestTransportHandshakeOncePerConnection(t *testing.T) {
	w := &wire{}
	h := newTestHostWith(t, hostOptions{listener: w.listener}, echoInstance(t))
	c := oneClient(t, h.port, "ntlm", false, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 20 {
		if got, err := readInstanceOn(ctx, c, "MSSQLSERVER"); err != nil || got != "MSSQLSERVER" {
			t.Fatalf("operation %d = %q, %v", i, got, err)
		}
	}
	neg := w.count(wireNegotiate)
	if d := w.dialed(); d > 2 || d == 0 {
		t.Fatalf("20 sequential operations dialed %d connections; want 1 or 2", d)
	}
	if sum(neg) != w.dialed() || sum(w.count(wireAuthenticate)) != w.dialed() {
		t.Fatalf("NEGOTIATE per connection %v, AUTHENTICATE %v; want one each per connection", neg, w.count(wireAuthenticate))
	}
	t.Logf("20 operations: %d connections, NEGOTIATE per connection %v", w.dialed(), neg)
}

// A wrong password fails as "authentication failed" after exactly one AUTHENTICATE:
// no retry that could lock the account.
func TestTransportWrongPasswordTriesOnce(t *testing.T) {
	w := &wire{}
	var mu sync.Mutex
	var failures int
	logf := func(format string, args ...any) {
		if strings.Contains(fmt.Sprintf(format, args...), "NTLM authentication failed") {
			mu.Lock()
			failures++
			mu.Unlock()
		}
	}
	h := newTestHostWith(t, hostOptions{listener: w.listener, logf: logf}, echoInstance(t))
	cfg := h.config("ntlm")
	cfg.Password = "wrong"
	host, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = host.ReadInstance(context.Background(), contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
	if e := asError(t, err); e.Kind != KindAuth || !strings.Contains(err.Error(), "authentication failed for Administrator") {
		t.Fatalf("error = %v (kind %d)", err, e.Kind)
	}
	mu.Lock()
	defer mu.Unlock()
	if a := sum(w.count(wireAuthenticate)); a != 1 || failures != 1 || w.dialed() != 1 {
		t.Fatalf("%d AUTHENTICATE messages on %d connections, %d failed logons; want exactly 1, 1, 1", a, w.dialed(), failures)
	}
}

// Over HTTPS the handshake and the reuse work the same; the CA is checked.
func TestTransportHTTPS(t *testing.T) {
	w := &wire{}
	h := newTestHostWith(t, hostOptions{tls: true, listener: w.listener}, echoInstance(t))
	c := oneClient(t, h.port, "ntlm", true, h.caPEM)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 5 {
		if got, err := readInstanceOn(ctx, c, "MSSQLSERVER"); err != nil || got != "MSSQLSERVER" {
			t.Fatalf("operation %d over HTTPS = %q, %v", i, got, err)
		}
	}
	if d := w.dialed(); d > 2 {
		t.Fatalf("5 sequential operations over HTTPS dialed %d connections; want at most 2", d)
	}

	otherCA, _ := certs.ForLoopback(t, "sql01.example.test")
	cfg := h.config("ntlm")
	cfg.HTTPS, cfg.CACert, cfg.TLSServerName = true, otherCA, "sql01.example.test"
	host, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = host.ReadInstance(ctx, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
	if e := asError(t, err); e.Kind != KindTLS || !strings.Contains(err.Error(), "could not be verified") {
		t.Fatalf("with another CA: error = %v (kind %d)", err, e.Kind)
	}
}

// closeAfterAnswer makes the server close each connection after every answer but an
// NTLM 401 and the answer to an empty logon POST (closing after those would make the
// handshake, or encryption with its result, impossible, on Windows too).
func closeAfterAnswer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(closingWriter{w}, r)
	})
}

type closingWriter struct{ http.ResponseWriter }

func (w closingWriter) WriteHeader(code int) {
	if code != http.StatusUnauthorized {
		w.Header().Set("Connection", "close")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w closingWriter) Write(p []byte) (int, error) { return w.ResponseWriter.Write(p) }

// A server that says Connection: close: the next request dials anew and succeeds.
func TestTransportServerClosesConnection(t *testing.T) {
	for _, auth := range []string{"ntlm", "basic"} {
		t.Run(auth, func(t *testing.T) {
			w := &wire{}
			h := newTestHostWith(t, hostOptions{listener: w.listener, handler: closeAfterAnswer, allowUnencrypted: auth == AuthBasic}, echoInstance(t))
			c := oneClient(t, h.port, auth, false, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for i := range 3 {
				if got, err := readInstanceOn(ctx, c, "MSSQLSERVER"); err != nil || got != "MSSQLSERVER" {
					t.Fatalf("operation %d = %q, %v", i, got, err)
				}
			}
			// Each connection carried exactly one answered request: a create, a
			// command, the stdin, at least one receive and a delete per operation.
			if d := w.dialed(); d < 3*5 {
				t.Fatalf("3 operations dialed %d connections; want one per request (at least 15)", d)
			}
		})
	}
}

// dropAuthOnce answers 401 Negotiate to the first request that relies on its
// connection being authenticated, as a server that forgot the connection would.
func dropAuthOnce(dropped *atomic.Bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "" && dropped.CompareAndSwap(false, true) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("WWW-Authenticate", "Negotiate")
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// An authenticated connection that gets a 401 authenticates again, on itself.
func TestTransportReauthenticatesOnce(t *testing.T) {
	w := &wire{}
	var dropped atomic.Bool
	h := newTestHostWith(t, hostOptions{listener: w.listener, handler: dropAuthOnce(&dropped)}, echoInstance(t))
	c := oneClient(t, h.port, "ntlm", false, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 3 {
		if got, err := readInstanceOn(ctx, c, "MSSQLSERVER"); err != nil || got != "MSSQLSERVER" {
			t.Fatalf("operation %d = %q, %v", i, got, err)
		}
	}
	if !dropped.Load() {
		t.Fatal("no request relied on an authenticated connection")
	}
	neg := w.count(wireNegotiate)
	if sum(neg) != w.dialed()+1 {
		t.Fatalf("NEGOTIATE per connection %v on %d connections; want one more than connections (one re-authentication)", neg, w.dialed())
	}
}

// The NTLM logon names the host as the host knows itself: an IPv4-mapped IPv6
// address by its IPv4 address, every other spelling as given.
func TestDefaultSPN(t *testing.T) {
	for in, want := range map[string]string{
		"sql01.contoso.com": "HTTP/sql01.contoso.com",
		"192.0.2.10":        "HTTP/192.0.2.10",
		"::ffff:192.0.2.10": "HTTP/192.0.2.10",
		"2001:db8::10":      "HTTP/2001:db8::10",
	} {
		if got := DefaultSPN(in); got != want {
			t.Errorf("DefaultSPN(%q) = %q, want %q", in, got, want)
		}
	}
}
