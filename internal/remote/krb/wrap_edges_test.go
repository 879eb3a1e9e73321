package krb_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
)

// Tests that pin decisions mutation testing found unguarded (make mutate).

// Both keys of a context must be RFC 4121 types: an RC4, DES or unknown subkey is
// refused when the context is set up, not when the first message fails.
func TestNewSealerChecksTheSubkeyToo(t *testing.T) {
	for name, et := range map[string]int32{"RC4": 23, "DES": 3, "unknown": 99} {
		sub := types.EncryptionKey{KeyType: et, KeyValue: make([]byte, 16)}
		if s, err := krb.NewSealer(vectorKey, &sub, false, 0, 0); !errors.Is(err, krb.ErrWrap) || s != nil {
			t.Errorf("%s acceptor subkey: %v, want ErrWrap", name, err)
		}
		if s, err := krb.NewSealer(sub, nil, false, 0, 0); !errors.Is(err, krb.ErrWrap) || s != nil {
			t.Errorf("%s context key: %v, want ErrWrap", name, err)
		}
	}
	// Unknown to the Kerberos library: said so, not taken for RC4 or DES. Camellia
	// (25) uses RFC 4121 tokens, but gokrb5 cannot encrypt with it.
	for _, et := range []int32{99, 25} {
		want := fmt.Sprintf("encryption type %d of the context key is not supported", et)
		if _, err := krb.NewSealer(types.EncryptionKey{KeyType: et, KeyValue: make([]byte, 32)}, nil, false, 0, 0); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("type %d: %v, want %q", et, err, want)
		}
	}
}

// Each message gets the next sequence number: the peer reads a run of them in
// order, and refuses one replayed.
func TestSealNumbersEachMessage(t *testing.T) {
	client, _ := krb.NewSealer(vectorKey, nil, false, 7, 0)
	server, _ := krb.NewSealer(vectorKey, nil, true, 0, 7)
	var last [2][]byte
	for _, msg := range []string{"one", "two", "three"} {
		sig, data, err := client.Seal([]byte(msg))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := server.Unseal(sig, data); err != nil || string(got) != msg {
			t.Fatalf("message %q: %q, %v", msg, got, err)
		}
		last = [2][]byte{sig, data}
	}
	if _, err := server.Unseal(last[0], last[1]); !errors.Is(err, krb.ErrWrap) || !strings.Contains(err.Error(), "sequence number") {
		t.Errorf("replayed message: %v, want a sequence error", err)
	}
}

// A key of the right type but the wrong length fails to seal with an error.
func TestSealWithABrokenKeyFails(t *testing.T) {
	s, err := krb.NewSealer(types.EncryptionKey{KeyType: 18, KeyValue: []byte("short")}, nil, false, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sig, data, err := s.Seal([]byte("x")); !errors.Is(err, krb.ErrWrap) || sig != nil || data != nil {
		t.Errorf("Seal with a 5-byte AES256 key: %x %x %v, want ErrWrap", sig, data, err)
	}
}

// The refusals say what is wrong with the token.
func TestUnsealSaysWhatIsWrong(t *testing.T) {
	client, _ := krb.NewSealer(vectorKey, nil, false, 0, 0)
	for name, c := range map[string]struct {
		tok  []byte
		says string
	}{
		"15 bytes":                  {[]byte{0x05, 0x04, 0x03, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "not an RFC 4121 wrap token (15 bytes)"},
		"header only":               {[]byte{0x05, 0x04, 0x03, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "encrypted part is 0 bytes"},
		"signed, not sealed":        {append([]byte{0x05, 0x04, 0x01, 0xFF}, make([]byte, 80)...), "signed but not encrypted"},
		"no flags at all":           {append([]byte{0x05, 0x04, 0x00, 0xFF}, make([]byte, 80)...), "signed but not encrypted"},
		"sealed by the initiator":   {append([]byte{0x05, 0x04, 0x02, 0xFF}, make([]byte, 80)...), "reflected"},
		"subkey the AP-REP lacked":  {append([]byte{0x05, 0x04, 0x07, 0xFF}, make([]byte, 80)...), "acceptor subkey"},
		"sealed, garbage encrypted": {append([]byte{0x05, 0x04, 0x03, 0xFF}, make([]byte, 80)...), "decrypting failed"},
	} {
		if _, err := client.Unseal(c.tok[:len(c.tok)/2], c.tok[len(c.tok)/2:]); !errors.Is(err, krb.ErrWrap) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want it to say %q", name, err, c.says)
		}
	}
}

// An empty message makes the shortest valid token (confounder, header copy,
// checksum); one byte of filler (EC = 1) rotates as Windows does.
func TestUnsealShortestTokenAndOneByteOfFiller(t *testing.T) {
	for _, ec := range []int{0, 1} {
		server, _ := krb.NewSealer(vectorKey, nil, true, 5, 0)
		server.SealWithFiller(ec)
		client, _ := krb.NewSealer(vectorKey, nil, false, 0, 5)
		for _, msg := range []string{"", "x"} {
			sig, data, err := server.Seal([]byte(msg))
			if err != nil {
				t.Fatal(err)
			}
			if got, err := client.Unseal(sig, data); err != nil || string(got) != msg {
				t.Errorf("EC %d, message %q: %q, %v", ec, msg, got, err)
			}
		}
	}
}

// sealWithHeaders encrypts msg and inner (the header copy) and frames it under
// outer, with the checksum rotated by RRC as RFC 4121 says.
func sealWithHeaders(t *testing.T, msg, inner, outer []byte) (sig, data []byte) {
	t.Helper()
	et, err := crypto.GetEtype(vectorKey.KeyType)
	if err != nil {
		t.Fatal(err)
	}
	_, c, err := et.EncryptMessage(vectorKey.KeyValue, append(append([]byte{}, msg...), inner...), 22)
	if err != nil {
		t.Fatal(err)
	}
	rrc := int(binary.BigEndian.Uint16(outer[6:8]))
	n := rrc % len(c)
	c = append(append([]byte{}, c[len(c)-n:]...), c[:len(c)-n]...)
	token := append(append([]byte{}, outer...), c...)
	return token[:len(token)-len(msg)], token[len(token)-len(msg):]
}

func wrapHeader(ec, rrc uint16, seq uint64) []byte {
	h := []byte{0x05, 0x04, 0x03, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(h[4:], ec)
	binary.BigEndian.PutUint16(h[6:], rrc)
	binary.BigEndian.PutUint64(h[8:], seq)
	return h
}

// A token whose encrypted part decrypts but is shorter than the filler it
// announces, or whose header copy differs from its header, is refused.
func TestUnsealRefusesInconsistentTokens(t *testing.T) {
	for name, c := range map[string]struct {
		inner, outer []byte
		says         string
	}{
		"filler longer than the message": {wrapHeader(100, 0, 9), wrapHeader(100, 28, 9), "shorter than its filler"},
		"header copy of another message": {wrapHeader(0, 0, 8), wrapHeader(0, 28, 9), "header copy does not match"},
	} {
		client, _ := krb.NewSealer(vectorKey, nil, false, 0, 9)
		sig, data := sealWithHeaders(t, []byte("hello"), c.inner, c.outer)
		if got, err := client.Unseal(sig, data); !errors.Is(err, krb.ErrWrap) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %q, %v; want %q", name, got, err, c.says)
		}
	}
}
