package ntlm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	azure "github.com/Azure/go-ntlmssp"
	"github.com/bodgit/ntlmssp"
)

const (
	testComputer = "SQL01"
	testPassword = "Pa$$w0rd-ü"
)

// testServer is a workgroup host SQL01 with one local account, Administrator, and a
// domain account CONTOSO\svc-sql.
func testServer() *Server {
	return &Server{
		ComputerName: testComputer,
		Lookup: func(domain, user string) (string, bool) {
			switch {
			case strings.EqualFold(user, "Administrator") && (domain == "" || strings.EqualFold(domain, testComputer)):
				return testPassword, true
			case strings.EqualFold(user, "svc-sql") && strings.EqualFold(domain, "CONTOSO"):
				return "svc secret", true
			}
			return "", false
		},
	}
}

// azureLogin runs the Azure/go-ntlmssp client (masterzen/winrm's ClientNTLM) against
// a new session. user may be "DOMAIN\user", as masterzen passes it.
func azureLogin(t *testing.T, srv *Server, user, password string) (*Session, Identity, error) {
	t.Helper()
	// The NEGOTIATE names the client machine's domain (none here); the AUTHENTICATE
	// takes the user's domain from "DOMAIN\user".
	neg, err := azure.NewNegotiateMessage("", "")
	if err != nil {
		t.Fatalf("azure NewNegotiateMessage: %v", err)
	}
	sess := srv.NewSession()
	chal, err := sess.Challenge(neg)
	if err != nil {
		t.Fatalf("Challenge(azure negotiate): %v", err)
	}
	auth, err := azure.NewAuthenticateMessage(chal, user, password, nil)
	if err != nil {
		t.Fatalf("azure NewAuthenticateMessage rejected our CHALLENGE: %v", err)
	}
	id, err := sess.Authenticate(auth)
	return sess, id, err
}

func TestAzureClientAuthenticates(t *testing.T) {
	for _, user := range []string{"Administrator", "administrator", `SQL01\Administrator`} {
		t.Run(user, func(t *testing.T) {
			sess, id, err := azureLogin(t, testServer(), user, testPassword)
			if err != nil {
				t.Fatalf("Authenticate with the right password: %v", err)
			}
			if !strings.EqualFold(id.User, "Administrator") {
				t.Errorf("identity user = %q, want Administrator", id.User)
			}
			if got, ok := sess.Identity(); !ok || got != id {
				t.Errorf("Identity() = %+v, %v; want %+v, true", got, ok, id)
			}
			if sess.Sealing() {
				t.Error("Sealing() = true for a client that did not ask to seal")
			}
		})
	}
}

func TestAzureClientWrongPasswordFails(t *testing.T) {
	_, _, err := azureLogin(t, testServer(), "Administrator", "wrong")
	if !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("Authenticate with a wrong password: err = %v, want ErrAuthFailed", err)
	}
	if !strings.Contains(err.Error(), "Administrator") {
		t.Errorf("error %q does not name the user", err)
	}
	_, _, err = azureLogin(t, testServer(), "nobody", testPassword)
	if !errors.Is(err, ErrAuthFailed) || !strings.Contains(err.Error(), "nobody") {
		t.Fatalf("unknown user: err = %v, want ErrAuthFailed naming the user", err)
	}
}

func TestChallengeOffersOnlyWhatWasAsked(t *testing.T) {
	neg, _ := azure.NewNegotiateMessage("", "")
	chal, err := testServer().NewSession().Challenge(neg)
	if err != nil {
		t.Fatal(err)
	}
	flags := binary.LittleEndian.Uint32(chal[20:24])
	for name, f := range map[string]uint32{"KEY_EXCH": flagKeyExch, "DATAGRAM": 0x40, "SEAL": flagSeal, "SIGN": flagSign, "LM_KEY": flagLMKey} {
		if flags&f != 0 {
			t.Errorf("CHALLENGE to Azure/go-ntlmssp sets %s (flags %#08x), which it did not ask for", name, flags)
		}
	}
	if flags&flagTargetInfo == 0 || flags&flagExtendedSession == 0 {
		t.Errorf("CHALLENGE flags %#08x lack TARGET_INFO or EXTENDED_SESSIONSECURITY", flags)
	}

	c, _ := ntlmssp.NewClient(ntlmssp.SetUserInfo("Administrator", testPassword), ntlmssp.SetVersion(ntlmssp.DefaultVersion()))
	neg, _ = c.Authenticate(nil, nil)
	chal, err = testServer().NewSession().Challenge(neg)
	if err != nil {
		t.Fatal(err)
	}
	flags = binary.LittleEndian.Uint32(chal[20:24])
	want := flagKeyExch | flagSeal | flagSign | flagExtendedSession | flag128 | flag56
	if flags&want != want {
		t.Errorf("CHALLENGE to bodgit/ntlmssp has flags %#08x, missing %#08x", flags, want&^flags)
	}
}

// bodgitLogin runs bodgit/ntlmssp's client (masterzen/winrm's NewEncryption("ntlm")).
func bodgitLogin(t *testing.T, srv *Server, opts ...func(*ntlmssp.Client) error) (*ntlmssp.Client, *Session, error) {
	t.Helper()
	opts = append([]func(*ntlmssp.Client) error{ntlmssp.SetVersion(ntlmssp.DefaultVersion()), ntlmssp.SetWorkstation("CLIENT1")}, opts...)
	c, err := ntlmssp.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	neg, err := c.Authenticate(nil, nil)
	if err != nil {
		t.Fatalf("bodgit negotiate: %v", err)
	}
	sess := srv.NewSession()
	chal, err := sess.Challenge(neg)
	if err != nil {
		t.Fatalf("Challenge(bodgit negotiate): %v", err)
	}
	auth, err := c.Authenticate(chal, nil)
	if err != nil {
		t.Fatalf("bodgit rejected our CHALLENGE: %v", err)
	}
	_, err = sess.Authenticate(auth)
	return c, sess, err
}

func TestBodgitClientSealsBothWays(t *testing.T) {
	c, sess, err := bodgitLogin(t, testServer(), ntlmssp.SetUserInfo("ADMINISTRATOR", testPassword), ntlmssp.SetDomain("sql01"))
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	if !sess.Sealing() {
		t.Fatal("Sealing() = false after a client that asked for SEAL authenticated")
	}
	cs := c.SecuritySession()
	for i := range 4 {
		req := []byte(fmt.Sprintf("<s:Envelope>request %d</s:Envelope>", i))
		sealed, sig, err := cs.Wrap(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := sess.Unseal(sig, sealed)
		if err != nil {
			t.Fatalf("message %d: Unseal: %v", i, err)
		}
		if !bytes.Equal(got, req) {
			t.Fatalf("message %d: Unseal = %q, want %q", i, got, req)
		}

		reply := []byte(fmt.Sprintf("<s:Envelope>reply %d</s:Envelope>", i))
		sig, sealed = sess.Seal(reply)
		if bytes.Equal(sealed, reply) {
			t.Fatalf("message %d: Seal returned the plain text", i)
		}
		if seq := binary.LittleEndian.Uint32(sig[12:]); seq != uint32(i) {
			t.Errorf("reply %d carries sequence number %d", i, seq)
		}
		opened, err := cs.Unwrap(sealed, sig)
		if err != nil {
			t.Fatalf("reply %d: bodgit Unwrap of our Seal: %v", i, err)
		}
		if !bytes.Equal(opened, reply) {
			t.Fatalf("reply %d: client read %q, want %q", i, opened, reply)
		}
	}
}

func TestBodgitClientWrongPasswordFails(t *testing.T) {
	_, _, err := bodgitLogin(t, testServer(), ntlmssp.SetUserInfo("svc-sql", "nope"), ntlmssp.SetDomain("CONTOSO"))
	if !errors.Is(err, ErrAuthFailed) || !strings.Contains(err.Error(), `CONTOSO\svc-sql`) {
		t.Fatalf("err = %v, want ErrAuthFailed naming CONTOSO\\svc-sql", err)
	}
	_, _, err = bodgitLogin(t, testServer(), ntlmssp.SetUserInfo("svc-sql", "svc secret"), ntlmssp.SetDomain("CONTOSO"))
	if err != nil {
		t.Fatalf("domain account with the right password: %v", err)
	}
}

func TestNTLMv1Refused(t *testing.T) {
	_, sess, err := bodgitLogin(t, testServer(), ntlmssp.SetUserInfo("Administrator", testPassword), ntlmssp.SetCompatibilityLevel(1))
	if !errors.Is(err, ErrAuthFailed) || !strings.Contains(err.Error(), "NTLMv1") {
		t.Fatalf("NTLMv1 client: err = %v, want ErrAuthFailed mentioning NTLMv1", err)
	}
	if _, ok := sess.Identity(); ok {
		t.Error("session reports an identity after a refused logon")
	}
}

func TestAlteredMICFails(t *testing.T) {
	c, err := ntlmssp.NewClient(ntlmssp.SetUserInfo("Administrator", testPassword), ntlmssp.SetVersion(ntlmssp.DefaultVersion()))
	if err != nil {
		t.Fatal(err)
	}
	neg, _ := c.Authenticate(nil, nil)
	sess := testServer().NewSession()
	chal, err := sess.Challenge(neg)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := c.Authenticate(chal, nil)
	if err != nil {
		t.Fatal(err)
	}
	auth[micOffset] ^= 0xff
	if _, err := sess.Authenticate(auth); !errors.Is(err, ErrAuthFailed) || !strings.Contains(err.Error(), "MIC") {
		t.Fatalf("altered MIC: err = %v, want ErrAuthFailed about the MIC", err)
	}
}

func TestUnsealRejectsTamperingAndReplay(t *testing.T) {
	login := func() (*ntlmssp.SecuritySession, *Session) {
		c, sess, err := bodgitLogin(t, testServer(), ntlmssp.SetUserInfo("Administrator", testPassword))
		if err != nil {
			t.Fatal(err)
		}
		return c.SecuritySession(), sess
	}

	cs, sess := login()
	sealed, sig, _ := cs.Wrap([]byte("Remove-Item C:\\ -Recurse"))
	sealed[3] ^= 1
	if _, err := sess.Unseal(sig, sealed); err == nil {
		t.Fatal("Unseal accepted an altered message")
	}
	sealed, sig, _ = cs.Wrap([]byte("next"))
	if _, err := sess.Unseal(sig, sealed); err == nil {
		t.Fatal("Unseal accepted a message after a failed one on the same session")
	}

	cs, sess = login()
	sealed, sig, _ = cs.Wrap([]byte("once"))
	if _, err := sess.Unseal(sig, sealed); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Unseal(sig, sealed); err == nil {
		t.Fatal("Unseal accepted a replayed message")
	}
}

func TestMisuseAndMalformedMessages(t *testing.T) {
	sess := testServer().NewSession()
	if _, err := sess.Authenticate([]byte("NTLMSSP\x00\x03\x00\x00\x00")); err == nil || errors.Is(err, ErrAuthFailed) {
		t.Errorf("Authenticate before Challenge: err = %v, want a sequencing error", err)
	}
	if _, err := sess.Challenge([]byte("hello")); err == nil {
		t.Error("Challenge accepted a non-NTLM token")
	}
	if _, err := sess.Unseal(make([]byte, 16), []byte("x")); err == nil {
		t.Error("Unseal worked on an unauthenticated session")
	}
	if sig, sealed := sess.Seal([]byte("x")); sig != nil || string(sealed) != "x" {
		t.Errorf("Seal on an unauthenticated session = %x, %q; want nil, the plain text", sig, sealed)
	}

	neg, _ := azure.NewNegotiateMessage("", "")
	if _, err := sess.Challenge(neg); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Challenge(neg); err == nil {
		t.Error("second Challenge on one session accepted")
	}
	bad := []byte("NTLMSSP\x00\x03\x00\x00\x00")
	bad = append(bad, make([]byte, 60)...)
	binary.LittleEndian.PutUint16(bad[20:], 100)  // NtChallengeResponse length
	binary.LittleEndian.PutUint32(bad[24:], 1000) // offset past the end
	_, err := sess.Authenticate(bad)
	if err == nil || errors.Is(err, ErrAuthFailed) || !strings.Contains(err.Error(), "NtChallengeResponse") {
		t.Errorf("Authenticate(out-of-range field) = %v, want a malformed-message error naming the field", err)
	}
}
