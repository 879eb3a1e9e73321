package ntlmauth_test

import (
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ntlmauth"
)

// FuzzChallenge: no CHALLENGE_MESSAGE a host sends makes the client panic; it
// answers with an AUTHENTICATE_MESSAGE or an error. It runs on its seeds in go test;
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
		if err == nil && len(auth) == 0 {
			t.Fatal("an empty AUTHENTICATE_MESSAGE without an error")
		}
		if err == nil && c.Session() == nil {
			t.Fatal("authenticated without a session")
		}
	})
}
