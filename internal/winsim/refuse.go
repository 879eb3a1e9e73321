package winsim

import (
	"net"
	"sync"
	"time"
)

// gateListener is a WinRM listener that can stop listening for a while (the
// "refuse" fault): its socket is closed, so a connection attempt gets a TCP reset
// (ECONNREFUSED, as from a host whose WinRM listener, firewall or link is down
// while it restarts), and every connection open at that moment is reset. After the
// pause it listens on the same address again; the HTTP server serving it never sees
// the gap.
type gateListener struct {
	addr string

	mu      sync.Mutex
	inner   net.Listener  // nil while refusing
	reopen  chan struct{} // closed when inner is set again, or on Close
	closed  bool
	conns   map[net.Conn]struct{} // open connections, reset when refusing starts
	refused int                   // refusal periods begun
}

func newGateListener(l net.Listener) *gateListener {
	return &gateListener{addr: l.Addr().String(), inner: l, conns: map[net.Conn]struct{}{}}
}

func (g *gateListener) Accept() (net.Conn, error) {
	for {
		g.mu.Lock()
		l, wait, closed := g.inner, g.reopen, g.closed
		g.mu.Unlock()
		if closed {
			return nil, net.ErrClosed
		}
		if l == nil {
			<-wait
			continue
		}
		c, err := l.Accept()
		g.mu.Lock()
		if err != nil {
			swapped := g.inner != l && !g.closed
			g.mu.Unlock()
			if swapped {
				continue // a refusal began: wait for the listener to open again
			}
			return nil, err
		}
		if g.inner != l {
			// A refusal began between the listener's Accept and this lock: the
			// connection belongs to the closed listener and is reset with the others.
			g.mu.Unlock()
			resetConn(c)
			continue
		}
		g.conns[c] = struct{}{}
		g.mu.Unlock()
		return &gateConn{Conn: c, g: g}, nil
	}
}

func (g *gateListener) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	if g.reopen != nil {
		close(g.reopen)
		g.reopen = nil
	}
	if g.inner != nil {
		return g.inner.Close()
	}
	return nil
}

func (g *gateListener) Addr() net.Addr {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inner != nil {
		return g.inner.Addr()
	}
	a, _ := net.ResolveTCPAddr("tcp", g.addr)
	return a
}

// refuse closes the socket and resets every open connection, then listens again
// after d (or when stop is closed). A refusal already under way is not extended.
func (g *gateListener) refuse(d time.Duration, stop <-chan struct{}) {
	if g.shut() {
		g.reopenAfter(d, stop)
	}
}

// shut closes the socket and resets every open connection; false when the listener
// was closed for good or is already refusing.
func (g *gateListener) shut() bool {
	g.mu.Lock()
	if g.closed || g.inner == nil {
		g.mu.Unlock()
		return false
	}
	l := g.inner
	g.inner, g.reopen = nil, make(chan struct{})
	g.refused++
	conns := g.conns
	g.conns = map[net.Conn]struct{}{}
	g.mu.Unlock()
	_ = l.Close()
	for c := range conns {
		resetConn(c)
	}
	return true
}

// reopenAfter listens again after d, or when stop is closed.
func (g *gateListener) reopenAfter(d time.Duration, stop <-chan struct{}) {
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-stop:
		t.Stop()
	}
	nl, err := listenRetry(g.addr)
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil || g.closed {
		if nl != nil {
			_ = nl.Close()
		}
		return
	}
	g.inner = nl
	if g.reopen != nil {
		close(g.reopen)
		g.reopen = nil
	}
}

// gateConn forgets itself in its listener when closed.
type gateConn struct {
	net.Conn
	g *gateListener
}

func (c *gateConn) Close() error {
	c.g.mu.Lock()
	delete(c.g.conns, c.Conn)
	c.g.mu.Unlock()
	return c.Conn.Close()
}

// NetConn is the TCP connection, for resetConn.
func (c *gateConn) NetConn() net.Conn { return c.Conn }
