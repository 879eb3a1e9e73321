package winsim

import (
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"
)

// The network half of the cost model (host.CostConfig): a round trip charged per
// turn of a connection, and counters of connections and TLS handshakes.

// wireStats counts one listener family's connections and TLS handshakes.
type wireStats struct {
	conns      atomic.Int64
	handshakes atomic.Int64 // full TLS handshakes
	resumed    atomic.Int64 // resumed TLS sessions
}

// costListener charges the round-trip time on every connection it accepts and
// counts them.
type costListener struct {
	net.Listener
	rtt   time.Duration
	stats *wireStats
}

func (l *costListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.stats.conns.Add(1)
	if l.rtt <= 0 {
		return c, nil
	}
	lc := &latencyConn{Conn: c, rtt: l.rtt}
	lc.turned.Store(true) // the first bytes cost TCP's handshake
	return lc, nil
}

// latencyConn delays what the client says after the server last spoke by one
// round trip: each request/response turn (an HTTP exchange, a TLS flight, a TDS
// packet exchange) costs the round-trip time, as on a network, whatever the
// protocol. The delay is spent on the server side, so the client sees it as the
// answer's latency.
type latencyConn struct {
	net.Conn
	rtt    time.Duration
	turned atomic.Bool // the server wrote since the client last spoke
}

// NetConn is the connection beneath, for resetConn.
func (c *latencyConn) NetConn() net.Conn { return c.Conn }

func (c *latencyConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.turned.Swap(false) {
		time.Sleep(c.rtt) // the simulated network latency, not synchronisation
	}
	return n, err
}

func (c *latencyConn) Write(p []byte) (int, error) {
	c.turned.Store(true)
	return c.Conn.Write(p)
}

// countHandshakes makes cfg count the TLS handshakes it completes, full or resumed.
func countHandshakes(cfg *tls.Config, stats *wireStats) *tls.Config {
	cfg = cfg.Clone()
	next := cfg.VerifyConnection
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if cs.DidResume {
			stats.resumed.Add(1)
		} else {
			stats.handshakes.Add(1)
		}
		if next != nil {
			return next(cs)
		}
		return nil
	}
	return cfg
}

// HostStats is what one simulated host was asked to do since the simulator started:
// the figures the fleet benchmarks divide per refresh.
type HostStats struct {
	WinRMConnections    int64 `json:"winrm_connections"`
	WinRMRequests       int64 `json:"winrm_requests"` // HTTP requests, authentication legs included
	TLSHandshakes       int64 `json:"tls_handshakes"` // full TLS handshakes (WinRM over HTTPS)
	TLSResumed          int64 `json:"tls_resumed"`    // resumed TLS sessions
	NTLMHandshakes      int64 `json:"ntlm_handshakes"`
	KerberosLogons      int64 `json:"kerberos_logons"`
	WinRMSignals        int64 `json:"winrm_signals"`
	WinRMReceives       int64 `json:"winrm_receives"` // Receive requests, part of WinRMRequests
	PowerShellProcesses int64 `json:"powershell_processes"`
	AddTypeCompilations int64 `json:"add_type_compilations"`
	SQLConnections      int64 `json:"sql_connections"`
	// SQLKerberosLogons are SQL Server logons by Kerberos (SSPI) accepted.
	SQLKerberosLogons int64 `json:"sql_kerberos_logons"`
}

// Since is what the counters counted after before: s − before, counter by counter.
func (s HostStats) Since(before HostStats) HostStats {
	return HostStats{
		WinRMConnections:    s.WinRMConnections - before.WinRMConnections,
		WinRMRequests:       s.WinRMRequests - before.WinRMRequests,
		TLSHandshakes:       s.TLSHandshakes - before.TLSHandshakes,
		TLSResumed:          s.TLSResumed - before.TLSResumed,
		NTLMHandshakes:      s.NTLMHandshakes - before.NTLMHandshakes,
		KerberosLogons:      s.KerberosLogons - before.KerberosLogons,
		WinRMSignals:        s.WinRMSignals - before.WinRMSignals,
		WinRMReceives:       s.WinRMReceives - before.WinRMReceives,
		PowerShellProcesses: s.PowerShellProcesses - before.PowerShellProcesses,
		AddTypeCompilations: s.AddTypeCompilations - before.AddTypeCompilations,
		SQLConnections:      s.SQLConnections - before.SQLConnections,
		SQLKerberosLogons:   s.SQLKerberosLogons - before.SQLKerberosLogons,
	}
}

// Stats returns one host's counters.
func (s *Sim) Stats(hostName string) (HostStats, error) {
	sh, ok := s.byName[strings.ToLower(hostName)]
	if !ok {
		return HostStats{}, fmt.Errorf("%w %q", ErrUnknownHost, hostName)
	}
	ws := sh.wsman.Stats()
	hs := sh.model.Stats()
	return HostStats{
		WinRMConnections:    sh.winrmWire.conns.Load(),
		WinRMRequests:       ws.Requests,
		TLSHandshakes:       sh.winrmWire.handshakes.Load(),
		TLSResumed:          sh.winrmWire.resumed.Load(),
		NTLMHandshakes:      ws.NTLMHandshakes,
		KerberosLogons:      ws.KerberosLogons,
		WinRMSignals:        ws.Signals,
		WinRMReceives:       ws.Receives,
		PowerShellProcesses: hs.PowerShellProcesses,
		AddTypeCompilations: hs.AddTypeCompilations,
		SQLConnections:      sh.sqlWire.conns.Load(),
		SQLKerberosLogons:   sh.sqlKerberos.Load(),
	}, nil
}

// TotalStats adds up every host's counters.
func (s *Sim) TotalStats() HostStats {
	var t HostStats
	for _, sh := range s.hosts {
		st, _ := s.Stats(sh.name)
		t.WinRMConnections += st.WinRMConnections
		t.WinRMRequests += st.WinRMRequests
		t.TLSHandshakes += st.TLSHandshakes
		t.TLSResumed += st.TLSResumed
		t.NTLMHandshakes += st.NTLMHandshakes
		t.KerberosLogons += st.KerberosLogons
		t.WinRMSignals += st.WinRMSignals
		t.WinRMReceives += st.WinRMReceives
		t.PowerShellProcesses += st.PowerShellProcesses
		t.AddTypeCompilations += st.AddTypeCompilations
		t.SQLConnections += st.SQLConnections
		t.SQLKerberosLogons += st.SQLKerberosLogons
	}
	return t
}
