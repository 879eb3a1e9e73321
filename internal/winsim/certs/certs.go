// Package certs makes the X.509 certificates of the Windows host simulator and of the
// tests that serve TLS on loopback: a CA, and server certificates it signs, so clients
// verify the WinRM HTTPS and TDS TLS endpoints instead of turning verification off.
//
// Only the simulator (internal/winsim) and tests import this package.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// CA is a certificate authority: an ECDSA P-256 key and its self-signed certificate.
type CA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

// NewCA generates a CA named commonName, valid from an hour ago for validity.
func NewCA(commonName string, validity time.Duration) (*CA, error) {
	key, cert, err := generate("the CA "+commonName, validity, &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"mssqlifi winsim"}},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}, nil, nil)
	if err != nil {
		return nil, err
	}
	return &CA{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}),
	}, nil
}

// CertPEM returns the CA's certificate in PEM, what clients are told to trust.
func (ca *CA) CertPEM() []byte { return append([]byte(nil), ca.certPEM...) }

// Issue signs a server certificate for the given DNS names and IP addresses, valid
// from an hour ago for validity. The chain holds the leaf and the CA certificate.
func (ca *CA) Issue(commonName string, dnsNames []string, ips []net.IP, validity time.Duration) (tls.Certificate, error) {
	key, leaf, err := generate(commonName+"'s server certificate", validity, &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName, Organization: []string{"mssqlifi winsim"}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    dnsNames,
		IPAddresses: ips,
	}, ca.cert, ca.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{
		Certificate: [][]byte{leaf.Raw, ca.cert.Raw},
		PrivateKey:  key,
		Leaf:        leaf,
	}, nil
}

// generate makes a P-256 key and a certificate for it from tmpl, with a random serial,
// valid from an hour ago for validity, signed by parent's key (self-signed when parent
// is nil). what names the certificate in errors.
func generate(what string, validity time.Duration, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the key of %s: %w", what, err)
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)); err != nil {
		return nil, nil, fmt.Errorf("drawing the serial number of %s: %w", what, err)
	}
	now := time.Now()
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(validity)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing %s: %w", what, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing %s just made: %w", what, err)
	}
	return key, cert, nil
}

// TB is the part of testing.TB that ForLoopback uses, so this package does not
// import testing.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// ForLoopback is for tests: a new CA valid for an hour and a server certificate it
// signed for 127.0.0.1 and dnsNames (the first is the common name; none means
// "localhost"). It returns the CA's PEM, what the client trusts, and the server's
// certificate; any failure ends the test.
func ForLoopback(t TB, dnsNames ...string) (caPEM []byte, cert tls.Certificate) {
	t.Helper()
	if len(dnsNames) == 0 {
		dnsNames = []string{"localhost"}
	}
	ca, err := NewCA("mssqlifi test CA", time.Hour)
	if err != nil {
		t.Fatalf("making a test CA: %v", err)
	}
	cert, err = ca.Issue(dnsNames[0], dnsNames, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour)
	if err != nil {
		t.Fatalf("issuing a test server certificate: %v", err)
	}
	return ca.CertPEM(), cert
}
