package tds

import (
	"crypto/tls"
	"fmt"
	"net"
	"sync"
)

// handshakeConn carries a TLS handshake inside TDS PRELOGIN messages (TDS 7.x
// encryption). Once the handshake is over it passes bytes straight through: from then
// on TLS records travel bare on the TCP connection, each holding TDS packets.
type handshakeConn struct {
	net.Conn
	pw *packetWriter

	mu          sync.Mutex
	passthrough bool
	in          []byte // unread payload of the current PRELOGIN message
	out         []byte // TLS bytes waiting to be sent as one PRELOGIN message
}

func (h *handshakeConn) Read(p []byte) (int, error) {
	h.mu.Lock()
	if h.passthrough {
		h.mu.Unlock()
		return h.Conn.Read(p)
	}
	defer h.mu.Unlock()
	if err := h.flushLocked(); err != nil {
		return 0, err
	}
	if len(h.in) == 0 {
		m, err := readMessage(h.Conn)
		if err != nil {
			return 0, err
		}
		if m.typ != packPrelogin {
			return 0, fmt.Errorf("expected a PRELOGIN packet carrying the TLS handshake, got packet type 0x%02X", m.typ)
		}
		h.in = m.data
	}
	n := copy(p, h.in)
	h.in = h.in[n:]
	return n, nil
}

func (h *handshakeConn) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.passthrough {
		return h.Conn.Write(p)
	}
	h.out = append(h.out, p...)
	return len(p), nil
}

func (h *handshakeConn) flushLocked() error {
	if len(h.out) == 0 {
		return nil
	}
	out := h.out
	h.out = nil
	return h.pw.writeMessage(packPrelogin, out)
}

// finish sends what the handshake left buffered and switches to pass-through.
func (h *handshakeConn) finish() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.flushLocked(); err != nil {
		return err
	}
	if len(h.in) != 0 {
		return fmt.Errorf("client sent %d bytes after its TLS Finished inside PRELOGIN", len(h.in))
	}
	h.passthrough = true
	return nil
}

// startTLSInTDS runs the TDS 7.x TLS handshake (after PRELOGIN said ENCRYPT_ON) and
// makes every later message travel through TLS.
func (c *conn) startTLSInTDS(transport net.Conn) error {
	cfg := c.s.opts.TLSConfig.Clone()
	// SQL Server speaks TLS 1.2 inside TDS 7.x; TLS 1.3 is for TDS 8.0 only.
	cfg.MaxVersion = tls.VersionTLS12
	if cfg.MinVersion > tls.VersionTLS12 {
		cfg.MinVersion = tls.VersionTLS12
	}
	hc := &handshakeConn{Conn: transport, pw: &packetWriter{w: transport, packetSize: c.pw.packetSize}}
	tc := tls.Server(hc, cfg)
	if err := tc.HandshakeContext(c.ctx); err != nil {
		return fmt.Errorf("TLS handshake inside PRELOGIN (encrypt=true) failed: %w", err)
	}
	if err := hc.finish(); err != nil {
		return err
	}
	c.r = tc
	c.pw.w = tc
	c.tls = true
	return nil
}
