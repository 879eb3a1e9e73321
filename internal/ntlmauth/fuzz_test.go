package ntlmauth_test

import (
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ntlmauth"
)

// FuzzChallenge: no CHALLENGE_MESSAGE a host sends makes the client panic; it
// answers with an AUTHENTICATE_MESSAGE or an error. It runs on its seeds (and
// testdata/fuzz: a challenge granting neither signing nor sealing) in go test;
// `make fuzz` runs it longer.
func FuzzChallenge(f *testing.F) {
	chal, err := testServer("strict").NewSession().Challenge((&ntlmauth.Client{User: "u"}).Negotiate())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(chal)
	f.Add(chal[:48])
	f.Add(chal[:len(chal)-3])
	f.Add([]byte("NTLMSSP\x00\x02\x00\x00\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, msg []byte) {
		c := &ntlmauth.Client{User: `SQL01\Administrator`, Password: testPassword, TargetSPN: "HTTP/sql01"}
		c.Negotiate()
		auth, err := c.Authenticate(msg)
		if err != nil {
			return
		}
		if len(auth) < 88 || string(auth[:12]) != "NTLMSSP\x00\x03\x00\x00\x00" {
			t.Fatalf("answer %q is not an AUTHENTICATE_MESSAGE", auth)
		}
		// A server may grant neither signing nor sealing: the session is then nil,
		// and Sealing (which the transport asks before sealing) must say no, not panic.
		_ = c.Session().Sealing()
	})
}
