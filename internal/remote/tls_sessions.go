package remote

import (
	"bytes"
	"crypto/tls"
	"sync"
)

// sessionCache is a host's TLS session cache (tls.ClientSessionCache, shared by the
// host's transports) that keeps each session as its encoding (tls.SessionState.Bytes:
// the resumption secret and the server's certificates as DER, about 1.5 KB with the
// ticket) instead of as crypto/tls's own LRU cache keeps it, with the server's
// certificate chain parsed (about 4 KB more per host). A refresh of a fleet connects
// once per host and never resumes, yet kept every host's parsed chain to the end of
// the run; a session is decoded only when a later operation resumes it.
type sessionCache struct {
	mu sync.Mutex
	m  map[string]encodedSession
}

type encodedSession struct {
	ticket, state []byte
}

// maxCachedSessions bounds the sessions a host keeps (one per TLS server name: every
// transport of a host uses the same one).
const maxCachedSessions = 8

func newSessionCache() *sessionCache {
	return &sessionCache{m: map[string]encodedSession{}}
}

var _ tls.ClientSessionCache = (*sessionCache)(nil)

// Get decodes the session kept for key; one that does not decode is dropped.
func (c *sessionCache) Get(key string) (*tls.ClientSessionState, bool) {
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	ss, err := tls.ParseSessionState(e.state)
	if err == nil {
		var cs *tls.ClientSessionState
		if cs, err = tls.NewResumptionState(e.ticket, ss); err == nil {
			return cs, true
		}
	}
	c.Put(key, nil)
	return nil, false
}

// Put keeps cs encoded for key; a nil cs removes key's (crypto/tls's contract). A
// session that does not encode is not kept.
func (c *sessionCache) Put(key string, cs *tls.ClientSessionState) {
	var e encodedSession
	if cs != nil {
		ticket, ss, err := cs.ResumptionState()
		if err != nil || ss == nil {
			return
		}
		state, err := ss.Bytes()
		if err != nil {
			return
		}
		// Bytes answers with its builder's buffer, about twice the encoding's size.
		e = encodedSession{ticket: bytes.Clone(ticket), state: bytes.Clone(state)}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs == nil {
		delete(c.m, key)
		return
	}
	if _, ok := c.m[key]; !ok && len(c.m) >= maxCachedSessions {
		for k := range c.m {
			delete(c.m, k) // any one: a host has one server name
			break
		}
	}
	c.m[key] = e
}
