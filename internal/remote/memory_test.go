package remote

import (
	"context"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// A connection left idle after an operation is closed once its idle time is over,
// so a provider that refreshed many hosts does not keep one open connection per host
// (issue 9). The next operation to the host connects anew and resumes the TLS
// session.
func TestIdleConnectionClosedAfterIdleTimeout(t *testing.T) {
	sim := startSim(t)
	h := simHTTPSHost(t, sim)
	wh := winrmOf(t, h)
	if len(wh.idle) != 1 {
		t.Fatalf("a new host has %d idle sessions, want 1", len(wh.idle))
	}
	tr := wh.idle[0].t
	tr.idleTimeout = 50 * time.Millisecond
	closed := make(chan struct{}, maxIdleConns)
	tr.idleClosed = func() { closed <- struct{}{} }

	readCounted(t, sim, h)
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("the idle connection was not closed 20 s after its idle time of 50 ms")
	}
	tr.mu.Lock()
	pooled := len(tr.idle)
	tr.mu.Unlock()
	if pooled != 0 {
		t.Fatalf("%d connections still pooled after the idle time", pooled)
	}

	d := readCounted(t, sim, h)
	if d.WinRMConnections != 1 || d.TLSHandshakes != 0 || d.TLSResumed != 1 {
		t.Errorf("read_instance after the idle time: %d connections, %d full and %d resumed TLS handshakes; want 1, 0, 1",
			d.WinRMConnections, d.TLSHandshakes, d.TLSResumed)
	}
}

// Operations that follow each other within the idle time share one connection.
func TestConnectionReusedWithinIdleTimeout(t *testing.T) {
	sim := startSim(t)
	h := simHTTPSHost(t, sim)
	ctx := context.Background()
	p := contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume}
	before := stats(t, sim)
	for i := 0; i < 3; i++ {
		if r, err := h.ReadInstance(ctx, p); err != nil || !r.Found {
			t.Fatalf("read_instance %d = %+v, %v", i+1, r, err)
		}
	}
	d := stats(t, sim).Since(before)
	if d.WinRMConnections != 1 || d.NTLMHandshakes != 1 {
		t.Errorf("three read_instance in a row: %d connections, %d NTLM handshakes; want 1 and 1", d.WinRMConnections, d.NTLMHandshakes)
	}
}

// Every host of a configuration trusts the same ca_cert: it is parsed once, not once
// per host and session. (Two names of one simulated host stand for two hosts.)
func TestHostsShareTheParsedCA(t *testing.T) {
	sim := startSim(t)
	info := sim.Info().Hosts[0]
	var pools []any
	for _, host := range []string{"127.0.0.1", "localhost"} {
		h, err := New(Config{Host: host, Port: portOf(t, info.WinRMHTTPS), HTTPS: true, CACert: sim.CACertPEM(), TLSServerName: "sql01",
			Auth: "ntlm", Username: testUser, Password: testPassword, SPN: "HTTP/127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		s, err := winrmOf(t, h).borrow()
		if err != nil {
			t.Fatal(err)
		}
		pools = append(pools, s.t.tlsConf.RootCAs)
		if r, err := h.ReadInstance(context.Background(), contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume}); err != nil || !r.Found {
			t.Fatalf("read_instance through %s = %+v, %v", host, r, err)
		}
	}
	if pools[0] == nil || pools[0] != pools[1] {
		t.Errorf("the two hosts' CA pools are %p and %p, want one shared pool", pools[0], pools[1])
	}
	if _, err := New(Config{Host: "127.0.0.1", HTTPS: true, CACert: []byte("not a certificate"), Auth: "ntlm", Username: testUser, Password: testPassword}); err == nil {
		t.Error("a ca_cert without a certificate was accepted")
	}
}

// ReleaseIdle closes the connection an operation left for the next one at once,
// whatever its idle time (converge.IdleReleaser: a refresh done with its host), and
// keeps what makes the next operation cheap: the next one connects anew and resumes
// the TLS session.
func TestReleaseIdleClosesTheKeptConnection(t *testing.T) {
	sim := startSim(t)
	h := simHTTPSHost(t, sim)
	wh := winrmOf(t, h)
	var _ interface{ ReleaseIdle() } = wh
	tr := wh.idle[0].t
	tr.idleTimeout = time.Hour // only ReleaseIdle can close it within the test

	readCounted(t, sim, h)
	pooled := func() int {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(tr.idle)
	}
	if n := pooled(); n != 1 {
		t.Fatalf("%d connections pooled after an operation, want 1", n)
	}
	wh.ReleaseIdle()
	if n := pooled(); n != 0 {
		t.Fatalf("%d connections pooled after ReleaseIdle, want 0", n)
	}
	if len(wh.idle) != 1 {
		t.Errorf("%d idle sessions after ReleaseIdle, want the 1 the host had", len(wh.idle))
	}
	d := readCounted(t, sim, h)
	if d.WinRMConnections != 1 || d.TLSHandshakes != 0 || d.TLSResumed != 1 {
		t.Errorf("read_instance after ReleaseIdle: %d connections, %d full and %d resumed TLS handshakes; want 1, 0, 1",
			d.WinRMConnections, d.TLSHandshakes, d.TLSResumed)
	}
}
