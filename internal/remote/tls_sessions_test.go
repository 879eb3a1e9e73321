package remote

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"weak"
)

// A host's TLS session cache keeps what resuming needs, not the server's parsed
// certificates: once the connection that brought the session is gone, its parsed
// chain can be collected (crypto/tls's LRU cache keeps it to the end of the run), and
// the next connection still resumes.
func TestSessionCacheKeepsSessionsEncoded(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS13}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	cache := newSessionCache()

	leaf, resumed := sessionRequest(t, srv.Listener.Addr().String(), pool, cache)
	if resumed {
		t.Fatal("the first connection resumed a session, want a full handshake")
	}
	if len(cache.m) != 1 {
		t.Fatalf("the cache holds %d sessions after a connection, want 1", len(cache.m))
	}
	runtime.GC()
	if leaf.Value() != nil {
		t.Error("the server's parsed certificate is still reachable after its connection closed, want it kept only as DER in the session")
	}
	if _, resumed := sessionRequest(t, srv.Listener.Addr().String(), pool, cache); !resumed {
		t.Error("the second connection did not resume the kept session")
	}

	cache.Put("example.com", nil)
	if _, ok := cache.Get("example.com"); ok || len(cache.m) != 0 {
		t.Errorf("after Put(nil) the cache holds %d sessions, want the session removed", len(cache.m))
	}
}

// sessionRequest makes one HTTPS request on its own connection with cache (the
// server's session ticket comes after the handshake, read with the answer), and
// returns a weak pointer to the server's parsed certificate and whether the
// connection resumed a session. Nothing of the connection outlives it.
func sessionRequest(t *testing.T, addr string, pool *x509.CertPool, cache tls.ClientSessionCache) (weak.Pointer[x509.Certificate], bool) {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "example.com", ClientSessionCache: cache, MinVersion: tls.VersionTLS13})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	st := conn.ConnectionState()
	return weak.Make(st.PeerCertificates[0]), st.DidResume
}
