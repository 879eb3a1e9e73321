package remote

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// Over plain HTTP with NTLM, nothing of an operation travels in clear text: every
// body after the empty logon POSTs is multipart/encrypted, and neither the SOAP
// envelope nor the instance name is visible on the wire.
func TestNTLMOverHTTPEncryptsEveryBody(t *testing.T) {
	for _, auth := range []string{AuthNegotiate, AuthNTLM} {
		t.Run(auth, func(t *testing.T) {
			w := &wire{}
			h := newTestHostWith(t, hostOptions{listener: w.listener}, echoInstance(t))
			c := oneClient(t, h.port, auth, false, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if got, err := readInstanceOn(ctx, c, "SECRETINSTANCE"); err != nil || got != "SECRETINSTANCE" {
				t.Fatalf("read_instance = %q, %v", got, err)
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			sealed := 0
			for _, b := range w.conns {
				text := b.String()
				if strings.Contains(text, "Envelope") || strings.Contains(text, "SECRETINSTANCE") {
					t.Fatalf("clear text on the wire:\n%.400s", text)
				}
				sealed += strings.Count(text, `Content-Type: multipart/encrypted;protocol="application/HTTP-SPNEGO-session-encrypted"`)
			}
			// Create, Command, Send, Receive, Signal, Delete at least.
			if sealed < 5 {
				t.Fatalf("%d encrypted requests; want every WS-Management request encrypted (at least 5)", sealed)
			}
		})
	}
}

// A host with AllowUnencrypted=false (Windows' default) refuses Basic over HTTP:
// the error says the host requires encrypted messages, not "check the password".
func TestBasicOverHTTPAgainstDefaultHost(t *testing.T) {
	h := newTestHostWith(t, hostOptions{}, echoInstance(t))
	cfg := h.config(AuthBasic) // with allow_unencrypted: the user insisted
	host, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = host.ReadInstance(context.Background(), contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
	e := asError(t, err)
	if e.Kind != KindAuth || !strings.Contains(err.Error(), "requires encrypted WinRM messages") || e.Auth != AuthBasic || e.HTTPS {
		t.Fatalf("Basic over HTTP to a default host: %v (kind %d)", err, e.Kind)
	}
	// The same host with the default auth works, encrypted.
	if got, err := readInstanceOn(context.Background(), oneClient(t, h.port, AuthNegotiate, false, nil), "MSSQLSERVER"); err != nil || got != "MSSQLSERVER" {
		t.Fatalf("negotiate to a default host: %q, %v", got, err)
	}
}

// Basic over plain HTTP without allow_unencrypted never sends the password.
func TestBasicOverHTTPSendsNothing(t *testing.T) {
	w := &wire{}
	h := newTestHostWith(t, hostOptions{listener: w.listener}, echoInstance(t))
	cfg := h.config(AuthBasic)
	cfg.AllowUnencrypted = false
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "clear text") {
		t.Fatalf("New with Basic over HTTP: %v, want a refusal naming clear text", err)
	}
	// Even a transport built around New's check refuses before dialing.
	tr := newTransport(AuthBasic, testUser, testPassword)
	c := oneClientWith(t, h.port, tr)
	if _, err := readInstanceOn(context.Background(), c, "MSSQLSERVER"); err == nil || !strings.Contains(err.Error(), "clear text") {
		t.Fatalf("transport with Basic over HTTP: %v", err)
	}
	if d := w.dialed(); d != 0 {
		t.Fatalf("%d connections made; the password must not leave", d)
	}
	// The fixture's cleanup needs its listener served once (Close races a Serve
	// that never accepted): the default auth reaches it.
	if _, err := readInstanceOn(context.Background(), oneClient(t, h.port, AuthNegotiate, false, nil), "MSSQLSERVER"); err != nil {
		t.Fatalf("negotiate: %v", err)
	}
}
