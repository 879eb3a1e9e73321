package remote

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// forgedSOAP is a WS-Management answer an attacker writes: well formed, and
// claiming success.
const forgedSOAP = `<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:rsp="http://schemas.microsoft.com/wbem/wsman/1/windows/shell">` +
	`<s:Header/><s:Body><rsp:Shell><rsp:ShellId>11111111-2222-3333-4444-555555555555</rsp:ShellId></rsp:Shell></s:Body></s:Envelope>`

// writeForged writes a clear-text 200 SOAP answer on w.
func writeForged(w io.Writer) error {
	resp := &http.Response{StatusCode: http.StatusOK, ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/soap+xml;charset=UTF-8"}},
		ContentLength: int64(len(forgedSOAP)), Body: io.NopCloser(strings.NewReader(forgedSOAP))}
	return resp.Write(w)
}

// fakeHost is a WinRM "host" that knows no credentials: it answers every request,
// the logon's first message included, with a forged clear-text success.
func fakeHost(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/soap+xml;charset=UTF-8")
		_, _ = io.WriteString(w, forgedSOAP)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// attack is what an on-path proxy does with one sealed request and the host's
// answer to it (nil when the request was not forwarded).
type attack int

const (
	// forge: answers every sealed request itself, in clear text; the host sees
	// only the logon.
	forge attack = iota
	// tamper: forwards, and changes one byte of the sealed answer.
	tamper
	// replay: forwards, and answers the second sealed request on a connection
	// with the host's first sealed answer (another sequence number).
	replay
	// unavailable: answers every sealed request with HTTP.sys's 503, as while
	// the WinRM service restarts.
	unavailable
	// transparent: forwards everything unchanged (the tests' control).
	transparent
)

// attacks are the modes that must be refused, by name.
var attacks = []struct {
	name string
	mode attack
}{{"forge", forge}, {"tamper", tamper}, {"replay", replay}}

// onPathProxy sits between the client and the host at upstream: it forwards the
// logon on one upstream connection per client connection (NTLM and Kerberos
// authenticate connections), then attacks the sealed messages.
type onPathProxy struct {
	upstream string
	mode     attack

	mu     sync.Mutex
	sealed int // sealed requests the proxy saw
}

func startOnPathProxy(t *testing.T, upstream string, mode attack) (*onPathProxy, int) {
	t.Helper()
	p := &onPathProxy{upstream: upstream, mode: mode}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.serve(c, done)
			}()
		}
	}()
	t.Cleanup(func() {
		close(done)
		_ = l.Close()
		wg.Wait()
	})
	return p, l.Addr().(*net.TCPAddr).Port
}

func (p *onPathProxy) sealedSeen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sealed
}

func (p *onPathProxy) serve(c net.Conn, done <-chan struct{}) {
	defer c.Close()
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	defer up.Close()
	go func() { <-done; _ = c.Close(); _ = up.Close() }()
	cr, ur := bufio.NewReader(c), bufio.NewReader(up)
	var first []byte // the host's first sealed answer on this connection (replay)
	for {
		req, err := http.ReadRequest(cr)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		isSealed := isEncryptedType(req.Header.Get("Content-Type"))
		if isSealed {
			p.mu.Lock()
			p.sealed++
			p.mu.Unlock()
		}
		if isSealed && p.mode == forge {
			if writeForged(c) != nil {
				return
			}
			continue
		}
		if isSealed && p.mode == unavailable {
			resp := &http.Response{StatusCode: http.StatusServiceUnavailable, ProtoMajor: 1, ProtoMinor: 1,
				Header: http.Header{"Content-Type": {"text/html; charset=us-ascii"}, "Server": {"Microsoft-HTTPAPI/2.0"}},
				Body:   io.NopCloser(strings.NewReader("<h2>Service Unavailable</h2>")), ContentLength: 28}
			if resp.Write(c) != nil {
				return
			}
			continue
		}
		if err := req.Write(up); err != nil {
			return
		}
		resp, err := http.ReadResponse(ur, req)
		if err != nil {
			return
		}
		rb, _ := io.ReadAll(resp.Body)
		if isSealed && isEncryptedType(resp.Header.Get("Content-Type")) {
			switch {
			case p.mode == tamper:
				rb = bytes.Clone(rb)
				i := bytes.LastIndex(rb, []byte("--Encrypted Boundary--")) - 1
				rb[i] ^= 0x20
			case p.mode == replay && first == nil:
				first = rb
			case p.mode == replay:
				rb = first
			}
		}
		resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(rb)), int64(len(rb))
		resp.Header.Set("Content-Length", strconv.Itoa(len(rb)))
		resp.TransferEncoding = nil
		if resp.Write(c) != nil {
			return
		}
	}
}

// grantVia asks host h (through whatever is at port) to grant the right to
// NT SERVICE\MSSQLSERVER.
func grantVia(cfg Config) error {
	h, err := New(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = h.SetRight(ctx, contract.SetRightParams{Right: contract.RightManageVolume, SID: serviceSID, Grant: true})
	return err
}

// serviceSID is NT SERVICE\MSSQLSERVER's SID on every host.
const serviceSID = "S-1-5-80-3880718306-3832830129-1677859214-2598158968-1052248003"

// wantMITM fails unless err is a refused answer naming a possible
// man-in-the-middle and the host, not retried.
func wantMITM(t *testing.T, err error, port int) {
	t.Helper()
	var re *Error
	if !errors.As(err, &re) || !errors.Is(err, ErrUnverifiedAnswer) || Transient(err) {
		t.Fatalf("got %v\nwant an *Error wrapping ErrUnverifiedAnswer, not transient", err)
	}
	where := "127.0.0.1:" + strconv.Itoa(port)
	if !strings.Contains(err.Error(), "man-in-the-middle") || !strings.Contains(err.Error(), where) {
		t.Fatalf("the error does not name a possible man-in-the-middle and %s: %v", where, err)
	}
	if re.Attempts > 1 {
		t.Fatalf("a possible man-in-the-middle was retried (%d attempts): %v", re.Attempts, err)
	}
}

// A host without the user's credentials answers NTLM's first message, and every
// message after it, with a forged clear-text success over HTTP: the operation fails
// naming a possible man-in-the-middle, with NTLM and with negotiate.
func TestFakeHostRefused(t *testing.T) {
	port := fakeHost(t)
	for _, auth := range []string{AuthNTLM, AuthNegotiate} {
		t.Run(auth, func(t *testing.T) {
			err := grantVia(Config{Host: "127.0.0.1", Port: port, Auth: auth, Username: testUser, Password: testPassword, Timeout: 10 * time.Second})
			wantMITM(t, err, port)
		})
	}
}

// An on-path proxy forwards the NTLM logon to the real host and then forges,
// alters or replays the answers: each is refused and the host's right is
// unchanged. A 503 in its place is an ordinary failure, retried as transient.
func TestOnPathProxyNTLM(t *testing.T) {
	s := newSimHost(t, simConfig())
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			p, port := startOnPathProxy(t, "127.0.0.1:"+strconv.Itoa(s.port), a.mode)
			err := grantVia(Config{Host: "127.0.0.1", Port: port, Auth: AuthNTLM, Username: testUser, Password: testPassword, Timeout: 10 * time.Second})
			wantMITM(t, err, port)
			if p.sealedSeen() == 0 {
				t.Fatal("no sealed message went through the proxy")
			}
			s.wantNotGranted(t)
		})
	}
	t.Run("unavailable", func(t *testing.T) {
		_, port := startOnPathProxy(t, "127.0.0.1:"+strconv.Itoa(s.port), unavailable)
		err := grantVia(Config{Host: "127.0.0.1", Port: port, Auth: AuthNTLM, Username: testUser, Password: testPassword, Timeout: 10 * time.Second})
		var re *Error
		if !errors.As(err, &re) || errors.Is(err, ErrUnverifiedAnswer) || re.HTTPStatus != http.StatusServiceUnavailable || !Transient(err) {
			t.Fatalf("got %v\nwant an ordinary transient HTTP 503 failure", err)
		}
		s.wantNotGranted(t)
	})
	t.Run("control", func(t *testing.T) {
		_, port := startOnPathProxy(t, "127.0.0.1:"+strconv.Itoa(s.port), transparent)
		if err := grantVia(Config{Host: "127.0.0.1", Port: port, Auth: AuthNTLM, Username: testUser, Password: testPassword, Timeout: 10 * time.Second}); err != nil {
			t.Fatalf("through a proxy that forwards unchanged: %v", err)
		}
	})
}

// The same on-path proxy in front of a Kerberos logon: the host's AP-REP is
// genuine (forwarded), yet the answers after it must be sealed and verify.
func TestOnPathProxyKerberos(t *testing.T) {
	k, s := krbSim(t)
	krbConfig := func(port int) Config {
		return Config{Host: "127.0.0.1", Port: port, Auth: AuthKerberos, SPN: krbSPN, Username: krbUser + "@" + k.Realm,
			Password: krbPass, Krb5Conf: k.Krb5Conf, Timeout: 10 * time.Second}
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			p, port := startOnPathProxy(t, "127.0.0.1:"+strconv.Itoa(s.port), a.mode)
			err := grantVia(krbConfig(port))
			wantMITM(t, err, port)
			if p.sealedSeen() == 0 {
				t.Fatal("no sealed message went through the proxy")
			}
			s.wantNotGranted(t)
		})
	}
	t.Run("control", func(t *testing.T) {
		_, port := startOnPathProxy(t, "127.0.0.1:"+strconv.Itoa(s.port), transparent)
		if err := grantVia(krbConfig(port)); err != nil {
			t.Fatalf("through a proxy that forwards unchanged: %v", err)
		}
	})
}

// wantNotGranted fails when the simulated host's NT SERVICE\MSSQLSERVER holds the
// right.
func (s *simHost) wantNotGranted(t *testing.T) {
	t.Helper()
	h, err := s.sim.Host(s.sim.Info().Hosts[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	holders, err := h.RightHolders(contract.RightManageVolume)
	if err != nil {
		t.Fatal(err)
	}
	for _, sid := range holders {
		if sid == serviceSID {
			t.Fatalf("the host granted the right through the attacked connection: %v", holders)
		}
	}
}

// Over HTTPS too, NTLM's first message carries no body (the script would reach
// whoever answers before any logon), and a host that accepts it with 200 is refused.
func TestNTLMNegotiateCarriesNoBodyOverHTTPS(t *testing.T) {
	var mu sync.Mutex
	var negotiateBodies []int
	accept := false
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.HasPrefix(r.Header.Get("Authorization"), "Negotiate TlRMTVNTUAAB") {
			mu.Lock()
			negotiateBodies = append(negotiateBodies, len(b))
			ok := accept
			mu.Unlock()
			if ok {
				w.Header().Set("Content-Type", "application/soap+xml;charset=UTF-8")
				_, _ = io.WriteString(w, forgedSOAP)
				return
			}
		}
		w.Header().Set("WWW-Authenticate", "Negotiate")
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	cfg := Config{Host: "127.0.0.1", Port: port, HTTPS: true, Insecure: true, Auth: AuthNTLM, Username: testUser, Password: testPassword, Timeout: 10 * time.Second}

	err := grantVia(cfg)
	var re *Error
	if !errors.As(err, &re) || re.HTTPStatus != http.StatusUnauthorized {
		t.Fatalf("a 401 without a challenge: %v\nwant an authentication failure (HTTP 401)", err)
	}
	mu.Lock()
	bodies := slices.Clone(negotiateBodies)
	accept = true
	mu.Unlock()
	if len(bodies) == 0 || slices.ContainsFunc(bodies, func(n int) bool { return n != 0 }) {
		t.Fatalf("NEGOTIATE bodies over HTTPS: %v bytes; want each empty", bodies)
	}
	wantMITM(t, grantVia(cfg), port)
}
