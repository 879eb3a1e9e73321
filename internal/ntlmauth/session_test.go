package ntlmauth_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ntlmauth"
)

// NegotiateFlags (MS-NLMP 2.2.2.5) as a host grants them.
const (
	negSign     = 0x00000010
	negSeal     = 0x00000020
	negExtended = 0x00080000
	neg128      = 0x20000000
	negKeyExch  = 0x40000000
)

var exportedKey = bytes.Repeat([]byte{0x5A}, 16)

// A host that grants signing but not sealing gets nothing from the client in clear
// text, while a server session in the same position signs, as GSS_WrapEx does.
func TestClientSessionRefusesClearTextButServerSigns(t *testing.T) {
	signOnly := uint32(negSign | negExtended | neg128 | negKeyExch)
	client := ntlmauth.NewClientSession(signOnly, exportedKey)
	if client.Sealing() {
		t.Fatal("Sealing() = true without NTLMSSP_NEGOTIATE_SEAL")
	}
	if _, _, err := client.Seal([]byte("secret")); err == nil || !strings.Contains(err.Error(), "the host") {
		t.Fatalf("client Seal without SEAL: %v; want a refusal naming the host", err)
	}
	server := ntlmauth.NewServerSession(signOnly, exportedKey)
	sig, sealed, err := server.Seal([]byte("reply"))
	if err != nil || len(sig) != ntlmauth.SignatureSize || string(sealed) != "reply" {
		t.Fatalf("server Seal, sign only = %x, %q, %v; want a signature and the clear text", sig, sealed, err)
	}
	if _, err := client.Unseal(sig, sealed); err == nil {
		t.Fatal("client accepted a message the host only signed")
	}
}

// A client and a server session of one key open each other's messages, in order;
// a replayed or altered message names the peer that sent it and breaks the session.
func TestSessionsMirrorEachOther(t *testing.T) {
	flags := uint32(negSign | negSeal | negExtended | neg128 | negKeyExch)
	client := ntlmauth.NewClientSession(flags, exportedKey)
	server := ntlmauth.NewServerSession(flags, exportedKey)
	var sig, sealed []byte
	for _, msg := range []string{"first", "second"} {
		var err error
		if sig, sealed, err = client.Seal([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		if got, err := server.Unseal(sig, sealed); err != nil || string(got) != msg {
			t.Fatalf("server Unseal = %q, %v; want %q", got, err, msg)
		}
		sig, sealed, _ = server.Seal([]byte("re: " + msg))
		if got, err := client.Unseal(sig, sealed); err != nil || string(got) != "re: "+msg {
			t.Fatalf("client Unseal = %q, %v; want %q", got, err, "re: "+msg)
		}
	}
	if _, err := client.Unseal(sig, sealed); err == nil || !strings.Contains(err.Error(), "the host sent message sequence number 1, want 2") {
		t.Fatalf("replayed reply: %v; want a sequence error naming the host", err)
	}
	if _, err := client.Unseal(sig, sealed); err == nil || !strings.Contains(err.Error(), "refuses every later one") {
		t.Fatalf("after a failed Unseal: %v; want the session to refuse", err)
	}
	client = ntlmauth.NewClientSession(flags, exportedKey)
	server = ntlmauth.NewServerSession(flags, exportedKey)
	sig, sealed, _ = client.Seal([]byte("Remove-Item"))
	sealed[0] ^= 1
	if _, err := server.Unseal(sig, sealed); err == nil || !strings.Contains(err.Error(), "from the client does not match") {
		t.Fatalf("altered message: %v; want a checksum error naming the client", err)
	}
}
