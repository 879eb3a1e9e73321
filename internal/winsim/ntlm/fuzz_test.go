package ntlm

import (
	"errors"
	"testing"

	azure "github.com/Azure/go-ntlmssp"
	"github.com/bodgit/ntlmssp"
)

// The parsers read what any network client sends: they must return errors, never
// panic. Run longer with: go test ./internal/winsim/ntlm/ -run '^$' -fuzz FuzzAuthenticate -fuzztime 30s

func FuzzChallenge(f *testing.F) {
	azureNeg, _ := azure.NewNegotiateMessage("CONTOSO", "WS1")
	c, _ := ntlmssp.NewClient(ntlmssp.SetUserInfo("u", "p"))
	bodgitNeg, _ := c.Authenticate(nil, nil)
	f.Add(azureNeg)
	f.Add(bodgitNeg)
	f.Add([]byte("NTLMSSP\x00\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, negotiate []byte) {
		chal, err := testServer().NewSession().Challenge(negotiate)
		if err == nil {
			if err := checkHeader(chal, typeChallenge, "CHALLENGE"); err != nil {
				t.Fatalf("Challenge built an invalid message: %v", err)
			}
		}
	})
}

func FuzzAuthenticate(f *testing.F) {
	// Seed with real AUTHENTICATE messages (they fail: the server challenge differs).
	c, _ := ntlmssp.NewClient(ntlmssp.SetUserInfo("Administrator", testPassword))
	neg, _ := c.Authenticate(nil, nil)
	chal, _ := testServer().NewSession().Challenge(neg)
	auth, _ := c.Authenticate(chal, nil)
	f.Add(auth)
	azureNeg, _ := azure.NewNegotiateMessage("", "")
	chal, _ = testServer().NewSession().Challenge(azureNeg)
	auth, _ = azure.NewAuthenticateMessage(chal, "Administrator", testPassword, nil)
	f.Add(auth)
	f.Fuzz(func(t *testing.T, authenticate []byte) {
		sess := testServer().NewSession()
		if _, err := sess.Challenge(neg); err != nil {
			t.Fatal(err)
		}
		// A random server challenge means no fuzzed input can know the right proof.
		if _, err := sess.Authenticate(authenticate); err == nil {
			t.Fatal("Authenticate accepted a message built for another challenge")
		} else if errors.Is(err, ErrAuthFailed) && len(authenticate) < 64 {
			t.Fatalf("a %d-byte message reached the credential check: %v", len(authenticate), err)
		}
	})
}
