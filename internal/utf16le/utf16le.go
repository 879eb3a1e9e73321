// Package utf16le converts between Go strings and UTF-16 little-endian bytes, the
// encoding of Windows strings on the wire (NTLM, TDS, powershell -EncodedCommand)
// and in the hashes Windows computes over names (service SIDs).
package utf16le

import (
	"encoding/binary"
	"fmt"
	"unicode/utf16"
)

// Encode returns s as UTF-16LE, two bytes a code unit, without a terminator.
func Encode(s string) []byte {
	units := utf16.Encode([]rune(s))
	b := make([]byte, 2*len(units))
	for i, u := range units {
		binary.LittleEndian.PutUint16(b[2*i:], u)
	}
	return b
}

// Decode reads UTF-16LE bytes; unpaired surrogates become U+FFFD. An odd number of
// bytes cannot be UTF-16LE and is an error that gives the length.
func Decode(b []byte) (string, error) {
	if len(b)%2 != 0 {
		return "", fmt.Errorf("%d bytes is an odd length, so not UTF-16LE", len(b))
	}
	units := make([]uint16, len(b)/2)
	for i := range units {
		units[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return string(utf16.Decode(units)), nil
}
