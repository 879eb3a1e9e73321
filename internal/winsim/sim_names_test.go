package winsim_test

import (
	"crypto/tls"
	"slices"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
)

// A domain member's certificates name its FQDN, its computer name in its domain's
// DNS name (dns_domain), as a certificate from the domain's enrollment does; a
// domain host without dns_domain takes its domain name (CONTOSO: contoso).
func TestHostCertificateNamesTheFQDN(t *testing.T) {
	sim := startFleetWith(t, func(cfg *winsim.Config) {
		cfg.Hosts[0].DNSDomain = "Contoso.Test"
	})
	for _, tc := range []struct{ host, fqdn string }{{"sql01", "sql01.contoso.test"}, {"sql02", "sql02.contoso"}} {
		h := hostInfo(t, sim, tc.host)
		conn, err := tls.Dial("tcp", h.WinRMHTTPS, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the test reads the certificate's names
		if err != nil {
			t.Fatal(err)
		}
		names := conn.ConnectionState().PeerCertificates[0].DNSNames
		conn.Close()
		if !slices.Contains(names, tc.fqdn) {
			t.Errorf("%s's certificate names %v, not its FQDN %s", tc.host, names, tc.fqdn)
		}
	}
}
