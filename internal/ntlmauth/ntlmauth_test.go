package ntlmauth

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/ntlm"
)

const testPassword = "Pa$$w0rd-ü"

func testServer(level string) *ntlm.Server {
	return &ntlm.Server{
		ComputerName: "SQL01",
		TargetNames:  []string{"sql01", "127.0.0.2"},
		CBTHardening: level,
		Lookup: func(domain, user string) (string, bool) {
			if strings.EqualFold(user, "Administrator") && (domain == "" || strings.EqualFold(domain, "SQL01")) {
				return testPassword, true
			}
			return "", false
		},
	}
}

// login runs c against a new session of srv; binding is the server's channel.
func login(t *testing.T, srv *ntlm.Server, c *Client, binding []byte) (*ntlm.Session, error) {
	t.Helper()
	sess := srv.NewSession()
	chal, err := sess.Challenge(c.Negotiate())
	if err != nil {
		t.Fatalf("server refused our NEGOTIATE: %v", err)
	}
	auth, err := c.Authenticate(chal)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	_, err = sess.AuthenticateChannel(auth, binding)
	return sess, err
}

func TestLogonSealsBothWays(t *testing.T) {
	for _, user := range []string{"Administrator", `SQL01\Administrator`} {
		c := &Client{User: user, Password: testPassword, TargetSPN: "HTTP/sql01"}
		sess, err := login(t, testServer("strict"), c, nil)
		if err != nil {
			t.Fatalf("%s: logon refused: %v", user, err)
		}
		for i, msg := range []string{"first envelope", "second, longer envelope"} {
			sig, sealed, err := c.Session().Seal([]byte(msg))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(sealed, []byte(msg)) {
				t.Fatalf("message %d travels in clear text", i)
			}
			plain, err := sess.Unseal(sig, sealed)
			if err != nil || string(plain) != msg {
				t.Fatalf("server Unseal of message %d: %q, %v", i, plain, err)
			}
			ssig, ssealed := sess.Seal([]byte("reply " + msg))
			got, err := c.Session().Unseal(ssig, ssealed)
			if err != nil || string(got) != "reply "+msg {
				t.Fatalf("client Unseal of reply %d: %q, %v", i, got, err)
			}
		}
	}
}

func TestWrongPasswordRefused(t *testing.T) {
	_, err := login(t, testServer("relaxed"), &Client{User: "Administrator", Password: "nope"}, nil)
	if !errors.Is(err, ntlm.ErrAuthFailed) || errors.Is(err, ntlm.ErrRelayRefused) {
		t.Fatalf("wrong password: %v, want ErrAuthFailed only", err)
	}
}

// A logon meant for another host, or bound to another TLS certificate, is refused
// as a relay; the right channel and name pass, at every hardening level that checks.
func TestRelayedLogonRefused(t *testing.T) {
	hostCert := []byte("tls-server-end-point:host")
	attackerCert := []byte("tls-server-end-point:attacker")
	for _, tc := range []struct {
		name    string
		level   string
		spn     string
		client  []byte // the channel the client saw
		server  []byte // the server's own channel
		relayed bool
	}{
		{"right host over HTTP", "relaxed", "HTTP/sql01", nil, nil, false},
		{"right host by IP", "relaxed", "HTTP/127.0.0.2:5985", nil, nil, false},
		{"other host's SPN", "relaxed", "HTTP/attacker", nil, nil, true},
		{"other host's SPN, hardening none", "none", "HTTP/attacker", nil, nil, true},
		{"same certificate", "strict", "HTTP/sql01", hostCert, hostCert, false},
		{"another certificate, relaxed", "relaxed", "HTTP/sql01", attackerCert, hostCert, true},
		{"another certificate, strict", "strict", "HTTP/sql01", attackerCert, hostCert, true},
		{"no bindings from an HTTP client relayed to HTTPS, relaxed", "relaxed", "HTTP/sql01", nil, hostCert, false},
		{"no bindings from an HTTP client relayed to HTTPS, strict", "strict", "HTTP/sql01", nil, hostCert, true},
		{"another certificate, hardening none", "none", "HTTP/sql01", attackerCert, hostCert, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Client{User: "Administrator", Password: testPassword, TargetSPN: tc.spn, ChannelBindings: tc.client}
			_, err := login(t, testServer(tc.level), c, tc.server)
			if tc.relayed != errors.Is(err, ntlm.ErrRelayRefused) {
				t.Fatalf("err = %v; want relay refused: %v", err, tc.relayed)
			}
			if !tc.relayed && err != nil {
				t.Fatalf("logon refused: %v", err)
			}
		})
	}
}

// The MIC covers the NEGOTIATE and CHALLENGE: an AUTHENTICATE replayed into another
// handshake (another server challenge) is refused.
func TestAuthenticateReplayedIntoAnotherHandshake(t *testing.T) {
	srv := testServer("relaxed")
	c := &Client{User: "Administrator", Password: testPassword, TargetSPN: "HTTP/sql01"}
	first := srv.NewSession()
	chal, _ := first.Challenge(c.Negotiate())
	auth, err := c.Authenticate(chal)
	if err != nil {
		t.Fatal(err)
	}
	other := srv.NewSession()
	if _, err := other.Challenge(c.negotiate); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Authenticate(auth); !errors.Is(err, ntlm.ErrAuthFailed) {
		t.Fatalf("replayed AUTHENTICATE: %v, want refused", err)
	}
}

func TestChannelBindingsHashOfNoChannelIsZero(t *testing.T) {
	if got := ChannelBindingsHash(nil); !bytes.Equal(got, make([]byte, 16)) {
		t.Fatalf("no channel: %x", got)
	}
	if bytes.Equal(ChannelBindingsHash([]byte("a")), ChannelBindingsHash([]byte("b"))) {
		t.Fatal("different channels hash the same")
	}
}
