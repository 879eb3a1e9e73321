package krb_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

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
