// Package mitm is the attacker of the tests of message protection: a fake WinRM
// host that knows no credentials, and an on-path proxy that forwards the logon to
// the real host and then forges, alters or replays the answers. Both listen on
// loopback; only tests use them.
package mitm

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// ForgedSOAP is a WS-Management answer an attacker writes: well formed, and
// claiming success (a shell created).
const ForgedSOAP = `<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:rsp="http://schemas.microsoft.com/wbem/wsman/1/windows/shell">` +
	`<s:Header/><s:Body><rsp:Shell><rsp:ShellId>11111111-2222-3333-4444-555555555555</rsp:ShellId></rsp:Shell></s:Body></s:Envelope>`

// writeForged writes a clear-text 200 SOAP answer on w.
func writeForged(w io.Writer) error {
	resp := &http.Response{StatusCode: http.StatusOK, ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/soap+xml;charset=UTF-8"}},
		ContentLength: int64(len(ForgedSOAP)), Body: io.NopCloser(strings.NewReader(ForgedSOAP))}
	return resp.Write(w)
}

// FakeHost is a WinRM "host" at addr ("127.0.0.1:0" for any port) that knows no
// credentials: it answers every request, the logon's first message included,
// with a forged clear-text success. It returns the address it listens on.
func FakeHost(t testing.TB, addr string) string {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/soap+xml;charset=UTF-8")
		_, _ = io.WriteString(w, ForgedSOAP)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

// Attack is what the on-path proxy does with the sealed messages.
type Attack int

const (
	// Forge answers every sealed request itself, in clear text; the host sees
	// only the logon.
	Forge Attack = iota
	// Tamper forwards, and changes one byte of every sealed answer.
	Tamper
	// Replay forwards, and answers every sealed request after the first on a
	// connection with the host's first sealed answer (another sequence number).
	Replay
	// Unavailable answers every sealed request with HTTP.sys's 503, as while the
	// WinRM service restarts.
	Unavailable
	// Transparent forwards everything unchanged (the tests' control).
	Transparent
)

// Proxy sits between the client and the host: it forwards the logon on one
// upstream connection per client connection (NTLM and Kerberos authenticate
// connections), then attacks the sealed messages.
type Proxy struct {
	upstream string
	mode     Attack

	mu     sync.Mutex
	sealed int
}

// StartProxy starts a proxy at addr ("127.0.0.1:0" for any port) in front of the
// WinRM HTTP listener at upstream; it returns the proxy and its address.
func StartProxy(t testing.TB, addr, upstream string, mode Attack) (*Proxy, string) {
	t.Helper()
	p := &Proxy{upstream: upstream, mode: mode}
	l, err := net.Listen("tcp", addr)
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
	return p, l.Addr().String()
}

// Sealed is how many sealed requests the proxy saw.
func (p *Proxy) Sealed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sealed
}

func isSealed(contentType string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(contentType)), "multipart/encrypted")
}

func (p *Proxy) serve(c net.Conn, done <-chan struct{}) {
	defer c.Close()
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	defer up.Close()
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-done:
			_ = c.Close()
			_ = up.Close()
		case <-finished:
		}
	}()
	cr, ur := bufio.NewReader(c), bufio.NewReader(up)
	var first []byte // the host's first sealed answer on this connection (Replay)
	for {
		req, err := http.ReadRequest(cr)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		sealed := isSealed(req.Header.Get("Content-Type"))
		if sealed {
			p.mu.Lock()
			p.sealed++
			p.mu.Unlock()
		}
		switch {
		case sealed && p.mode == Forge:
			if writeForged(c) != nil {
				return
			}
			continue
		case sealed && p.mode == Unavailable:
			const page = "<h2>Service Unavailable</h2>"
			resp := &http.Response{StatusCode: http.StatusServiceUnavailable, ProtoMajor: 1, ProtoMinor: 1,
				Header: http.Header{"Content-Type": {"text/html; charset=us-ascii"}, "Server": {"Microsoft-HTTPAPI/2.0"}},
				Body:   io.NopCloser(strings.NewReader(page)), ContentLength: int64(len(page))}
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
		if sealed && isSealed(resp.Header.Get("Content-Type")) {
			switch {
			case p.mode == Tamper:
				rb = bytes.Clone(rb)
				if i := bytes.LastIndex(rb, []byte("--Encrypted Boundary--")) - 1; i > 0 {
					rb[i] ^= 0x20
				}
			case p.mode == Replay && first == nil:
				first = rb
			case p.mode == Replay:
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
