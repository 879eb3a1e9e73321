package utf16le

import (
	"bytes"
	"testing"
)

func TestRoundTripAndWireBytes(t *testing.T) {
	for _, tc := range []struct {
		s    string
		wire []byte
	}{
		{"", []byte{}},
		{"Ab", []byte{'A', 0, 'b', 0}},
		{"ü", []byte{0xFC, 0}},
		{"𝄞", []byte{0x34, 0xD8, 0x1E, 0xDD}}, // a surrogate pair
	} {
		if got := Encode(tc.s); !bytes.Equal(got, tc.wire) {
			t.Errorf("Encode(%q) = % x, want % x", tc.s, got, tc.wire)
		}
		if got, err := Decode(tc.wire); err != nil || got != tc.s {
			t.Errorf("Decode(% x) = %q, %v; want %q", tc.wire, got, err, tc.s)
		}
	}
}

func TestDecodeRefusesOddLength(t *testing.T) {
	if s, err := Decode([]byte{'A', 0, 'b'}); err == nil {
		t.Fatalf("Decode of 3 bytes = %q, want an error", s)
	}
}
