package krb_test

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
)

var vectorKey = types.EncryptionKey{KeyType: 18, KeyValue: []byte("fixed-vector-key-for-ms-kile-ec!")}

// windowsVector is an acceptor's sealed answer as MS-KILE 3.4.5.4.1 describes
// Windows' GSS_WrapEx for AES: EC = 16 filler bytes, RRC = 28, and the trailer
// (encrypted filler and header copy, and the checksum) rotated by RRC + EC = 44.
// Sequence number 300, AES256, key usage 22 (acceptor seal), flags sealed and
// sent by the acceptor. Built from the key with gokrb5's AES primitive as the
// section describes (build, encrypt, rotate by EC + RRC, split), then frozen.
const windowsVector = "050403ff0010001c000000000000012c8fd41c78ff1cdc54740314a6727d1363d0b3f5b43888db37135ac76e6727b65ce66a8d2f98b95053319ae54cf1be1ee2d71df8a91c1813b7e4fdd039e58d65f00e2e0cbd8358ffaa692f2163a75ff3cc07fd2bf40d4031669ac553"

// splitWSMV splits a token into MS-WSMV's signature and data: the data is as long
// as the message.
func splitWSMV(t *testing.T, token []byte, msgLen int) (sig, data []byte) {
	t.Helper()
	return token[:len(token)-msgLen], token[len(token)-msgLen:]
}

// A token from a Windows acceptor with EC != 0 unseals: the trailer is rotated by
// RRC + EC (issue 14: rotating by RRC alone failed every such answer).
func TestUnsealWindowsECVector(t *testing.T) {
	token, err := hex.DecodeString(windowsVector)
	if err != nil {
		t.Fatal(err)
	}
	const msg = "<s:Envelope>answer</s:Envelope>"
	client, err := krb.NewSealer(vectorKey, nil, false, 1, 300)
	if err != nil {
		t.Fatal(err)
	}
	sig, data := splitWSMV(t, token, len(msg))
	if len(sig) != 76 {
		t.Fatalf("the vector's signature is %d bytes, want 76 (header 16, rotated 44, confounder 16)", len(sig))
	}
	got, err := client.Unseal(sig, data)
	if err != nil || string(got) != msg {
		t.Fatalf("Unseal of the Windows vector = %q, %v; want %q", got, err, msg)
	}
	// Changed in transit: no rotation verifies.
	token[len(token)-3] ^= 0x40
	sig, data = splitWSMV(t, token, len(msg))
	other, _ := krb.NewSealer(vectorKey, nil, false, 1, 300)
	if _, err := other.Unseal(sig, data); !errors.Is(err, krb.ErrWrap) || !strings.Contains(err.Error(), "decrypting failed") {
		t.Fatalf("changed vector: %v, want a decryption failure", err)
	}
}

// sealByHand builds an acceptor's token with filler ec, rotated by rotate bytes,
// with the header's RRC set to rrc.
func sealByHand(t *testing.T, key types.EncryptionKey, msg []byte, flags byte, ec, rrc, rotate int, seq uint64) (sig, data []byte) {
	t.Helper()
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		t.Fatal(err)
	}
	header := []byte{0x05, 0x04, flags, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(header[4:], uint16(ec))
	binary.BigEndian.PutUint64(header[8:], seq)
	plain := append(append(append([]byte{}, msg...), make([]byte, ec)...), header...)
	_, c, err := et.EncryptMessage(key.KeyValue, plain, 22)
	if err != nil {
		t.Fatal(err)
	}
	n := rotate % len(c)
	c = append(append([]byte{}, c[len(c)-n:]...), c[:len(c)-n]...)
	binary.BigEndian.PutUint16(header[6:], uint16(rrc))
	token := append(append([]byte{}, header...), c...)
	return token[:len(token)-len(msg)], token[len(token)-len(msg):]
}

// With EC != 0 both rotations are accepted, RRC + EC (Windows) and RRC alone (RFC
// 4121); the checksum decides. EC = 0 rotates by RRC.
func TestUnsealRotationByChecksum(t *testing.T) {
	msg := []byte(strings.Repeat("<s:Body/>", 40))
	for _, tc := range []struct {
		name        string
		ec, rotate  int
		keyType     int32
		keyLen, rrc int
	}{
		{"AES256 EC 16 rotated by RRC+EC", 16, 44, 18, 32, 28},
		{"AES256 EC 16 rotated by RRC", 16, 28, 18, 32, 28},
		{"AES128 EC 5 rotated by RRC+EC", 5, 33, 17, 16, 28},
		{"AES256 EC 0", 0, 28, 18, 32, 28},
		{"AES256 EC 16 RRC 0 (no rotation)", 16, 0, 18, 32, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := types.EncryptionKey{KeyType: tc.keyType, KeyValue: []byte(strings.Repeat("k", tc.keyLen))}
			client, _ := krb.NewSealer(key, nil, false, 0, 7)
			sig, data := sealByHand(t, key, msg, 0x03, tc.ec, tc.rrc, tc.rotate, 7)
			got, err := client.Unseal(sig, data)
			if err != nil || string(got) != string(msg) {
				t.Fatalf("Unseal = %q, %v", got, err)
			}
		})
	}
}

// The simulator seals as Windows may (SealWithFiller(16)): EC = 16 in the header,
// a 76-byte signature, and the provider's side reads it.
func TestSealWithFillerIsWindowsLayout(t *testing.T) {
	server, _ := krb.NewSealer(vectorKey, nil, true, 9, 1)
	server.SealWithFiller(16)
	client, _ := krb.NewSealer(vectorKey, nil, false, 1, 9)
	msg := []byte("<s:Envelope>reply</s:Envelope>")
	sig, data, err := server.Seal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if ec, rrc := binary.BigEndian.Uint16(sig[4:6]), binary.BigEndian.Uint16(sig[6:8]); ec != 16 || rrc != 28 || len(sig) != 76 || len(data) != len(msg) {
		t.Fatalf("EC %d, RRC %d, signature %d bytes, data %d; want 16, 28, 76, %d", ec, rrc, len(sig), len(data), len(msg))
	}
	if got, err := client.Unseal(sig, data); err != nil || string(got) != string(msg) {
		t.Fatalf("Unseal = %q, %v", got, err)
	}
}

// An acceptor subkey: both sides seal with it and set the flag; a token flagged
// for a subkey the AP-REP did not carry is refused; a token without the flag was
// sealed with the initiator's key (before the initiator saw the AP-REP) and is
// read with it, as MIT does.
func TestAcceptorSubkey(t *testing.T) {
	initKey := types.EncryptionKey{KeyType: 18, KeyValue: []byte(strings.Repeat("i", 32))}
	subkey := types.EncryptionKey{KeyType: 18, KeyValue: []byte(strings.Repeat("a", 32))}
	server, _ := krb.NewSealer(initKey, &subkey, true, 50, 10)
	client, _ := krb.NewSealer(initKey, &subkey, false, 10, 50)
	sig, data, err := client.Seal([]byte("request"))
	if err != nil {
		t.Fatal(err)
	}
	if sig[2]&0x04 == 0 {
		t.Errorf("the initiator's token after an acceptor subkey has flags %#x, want AcceptorSubkey (0x04)", sig[2])
	}
	if got, err := server.Unseal(sig, data); err != nil || string(got) != "request" {
		t.Fatalf("server Unseal = %q, %v", got, err)
	}
	sig, data, _ = server.Seal([]byte("answer"))
	if got, err := client.Unseal(sig, data); err != nil || string(got) != "answer" {
		t.Fatalf("client Unseal = %q, %v", got, err)
	}

	noSubkey, _ := krb.NewSealer(initKey, nil, false, 10, 51)
	sig, data, _ = server.Seal([]byte("answer 2"))
	if _, err := noSubkey.Unseal(sig, data); !errors.Is(err, krb.ErrWrap) || !strings.Contains(err.Error(), "acceptor subkey") {
		t.Errorf("flagged token without a subkey in the AP-REP: %v, want a refusal naming the acceptor subkey", err)
	}

	early, _ := krb.NewSealer(initKey, nil, false, 11, 0)
	sig, data, _ = early.Seal([]byte("early"))
	if got, err := server.Unseal(sig, data); err != nil || string(got) != "early" {
		t.Errorf("token sealed with the initiator's key: %q, %v", got, err)
	}
}

// Malformed tokens are errors, never panics: empty, header only, a short
// encrypted part, a huge EC or RRC.
func TestUnsealMalformedTokens(t *testing.T) {
	hdr := func(ec, rrc uint16) []byte {
		h := []byte{0x05, 0x04, 0x03, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		binary.BigEndian.PutUint16(h[4:], ec)
		binary.BigEndian.PutUint16(h[6:], rrc)
		return h
	}
	for name, tok := range map[string][]byte{
		"empty":             {},
		"short header":      {0x05, 0x04, 0x03},
		"header only":       hdr(0, 28),
		"one byte":          append(hdr(16, 28), 0x42),
		"below confounder":  append(hdr(16, 28), make([]byte, 15)...),
		"huge EC and RRC":   append(hdr(0xffff, 0xffff), make([]byte, 60)...),
		"no checksum room":  append(hdr(0, 0), make([]byte, 27)...),
		"wrong token id":    append([]byte{0x04, 0x04, 0x03, 0xFF}, make([]byte, 80)...),
		"not sealed":        append([]byte{0x05, 0x04, 0x01, 0xFF}, make([]byte, 80)...),
		"filler not 0xFF":   append([]byte{0x05, 0x04, 0x03, 0x00}, make([]byte, 80)...),
		"initiator's token": append([]byte{0x05, 0x04, 0x02, 0xFF}, make([]byte, 80)...),
	} {
		t.Run(name, func(t *testing.T) {
			client, _ := krb.NewSealer(vectorKey, nil, false, 0, 0)
			for _, split := range []int{0, len(tok) / 2, len(tok)} {
				if _, err := client.Unseal(tok[:split], tok[split:]); !errors.Is(err, krb.ErrWrap) {
					t.Fatalf("split at %d: %v, want ErrWrap", split, err)
				}
			}
		})
	}
}

// No token makes Unseal panic. To run it longer, fuzz it:
// go test -run '^$' -fuzz FuzzUnseal ./internal/remote/krb/ (any duration).
func FuzzUnseal(f *testing.F) {
	v, _ := hex.DecodeString(windowsVector)
	f.Add(v, 76)
	f.Add(v[:16], 16)
	f.Add(v[:40], 20)
	f.Add([]byte{}, 0)
	f.Fuzz(func(t *testing.T, tok []byte, split int) {
		if split < 0 || split > len(tok) {
			split = len(tok)
		}
		client, _ := krb.NewSealer(vectorKey, nil, false, 1, 300)
		if got, err := client.Unseal(tok[:split], tok[split:]); err == nil && len(got) > len(tok) {
			t.Fatalf("unsealed %d bytes from a %d-byte token", len(got), len(tok))
		}
	})
}
