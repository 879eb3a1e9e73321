package certs

import (
	"crypto/x509"
	"net"
	"testing"
	"time"
)

// A client trusting only the CA accepts the server certificate for the names and
// addresses it was issued for, and no other.
func TestIssuedCertificateVerifiesAgainstTheCA(t *testing.T) {
	ca, err := NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue("sql01", []string{"sql01", "sql01.example.test"}, []net.IP{net.ParseIP("127.0.0.2")}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca.CertPEM()) {
		t.Fatalf("CertPEM() is not a PEM certificate: %q", ca.CertPEM())
	}
	if len(cert.Certificate) != 2 || cert.Leaf == nil {
		t.Fatalf("the chain has %d certificates (leaf %v); want the leaf and the CA", len(cert.Certificate), cert.Leaf != nil)
	}
	for _, name := range []string{"sql01", "sql01.example.test", "127.0.0.2"} {
		if _, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
			t.Errorf("verifying for %s: %v", name, err)
		}
	}
	for _, name := range []string{"sql02", "127.0.0.1"} {
		if _, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err == nil {
			t.Errorf("the certificate verified for %s, which it was not issued for", name)
		}
	}
	other, err := NewCA("other CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherRoots := x509.NewCertPool()
	otherRoots.AppendCertsFromPEM(other.CertPEM())
	if _, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: "sql01", Roots: otherRoots}); err == nil {
		t.Error("the certificate verified against a CA that did not sign it")
	}
}

// ForLoopback's certificate is for 127.0.0.1 and the names given, localhost by default.
func TestForLoopback(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
	}{{nil, "localhost"}, {[]string{"sql01.example.test"}, "sql01.example.test"}} {
		caPEM, cert := ForLoopback(t, tc.names...)
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(caPEM)
		for _, name := range []string{tc.want, "127.0.0.1"} {
			if _, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
				t.Errorf("ForLoopback(%v): verifying for %s: %v", tc.names, name, err)
			}
		}
	}
}
