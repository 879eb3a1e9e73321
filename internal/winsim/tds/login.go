package tds

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/utf16le"
)

// PRELOGIN option tokens (MS-TDS 2.2.6.5).
const (
	preloginVersion    byte = 0x00
	preloginEncryption byte = 0x01
	preloginInstOpt    byte = 0x02
	preloginThreadID   byte = 0x03
	preloginMARS       byte = 0x04
	preloginTerminator byte = 0xFF
)

// PRELOGIN ENCRYPTION values.
const (
	encryptOff    byte = 0x00
	encryptOn     byte = 0x01
	encryptNotSup byte = 0x02
	encryptReq    byte = 0x03
	encryptStrict byte = 0x04
)

// parsePrelogin returns the client's PRELOGIN options.
func parsePrelogin(data []byte) (map[byte][]byte, error) {
	opts := map[byte][]byte{}
	for i := 0; ; i += 5 {
		if i >= len(data) {
			return nil, errors.New("PRELOGIN option list has no terminator")
		}
		tok := data[i]
		if tok == preloginTerminator {
			return opts, nil
		}
		if i+5 > len(data) {
			return nil, errors.New("PRELOGIN option entry is truncated")
		}
		off := int(binary.BigEndian.Uint16(data[i+1:]))
		n := int(binary.BigEndian.Uint16(data[i+3:]))
		if off+n > len(data) {
			return nil, fmt.Errorf("PRELOGIN option 0x%02X points past the end of the packet", tok)
		}
		opts[tok] = data[off : off+n]
	}
}

// buildPrelogin encodes the server's PRELOGIN answer.
func buildPrelogin(major, minor uint8, build uint16, encryption byte) []byte {
	type opt struct {
		tok byte
		val []byte
	}
	opts := []opt{
		{preloginVersion, []byte{major, minor, byte(build >> 8), byte(build), 0, 0}},
		{preloginEncryption, []byte{encryption}},
		{preloginInstOpt, []byte{0}},
		{preloginThreadID, nil},
		{preloginMARS, []byte{0}},
	}
	head := len(opts)*5 + 1
	var out, vals []byte
	for _, o := range opts {
		out = append(out, o.tok)
		out = binary.BigEndian.AppendUint16(out, uint16(head+len(vals)))
		out = binary.BigEndian.AppendUint16(out, uint16(len(o.val)))
		vals = append(vals, o.val...)
	}
	out = append(out, preloginTerminator)
	return append(out, vals...)
}

// login7 is the part of a LOGIN7 record the endpoint uses.
type login7 struct {
	Login
	TDSVersion uint32
	PacketSize uint32
	SSPI       bool
	// SSPIData is the first token of an integrated login (SPNEGO/Kerberos or NTLMSSP).
	SSPIData []byte
}

// LOGIN7 fixed header offsets (MS-TDS 2.2.6.4).
const (
	login7FixedSize   = 94
	offHostName       = 36
	offUserName       = 40
	offPassword       = 44
	offAppName        = 48
	offDatabase       = 68
	offSSPI           = 78
	offSSPILong       = 90 // cbSSPILong, when cbSSPI is 0xFFFF
	optionFlags2Index = 25
	fIntSecurity      = 0x80
)

func parseLogin7(data []byte) (*login7, error) {
	if len(data) < login7FixedSize {
		return nil, fmt.Errorf("LOGIN7 record is %d bytes, shorter than its %d-byte fixed part", len(data), login7FixedSize)
	}
	total := int(binary.LittleEndian.Uint32(data[0:4]))
	if total > len(data) {
		return nil, fmt.Errorf("LOGIN7 record announces %d bytes but the message holds %d", total, len(data))
	}
	l := &login7{
		TDSVersion: binary.LittleEndian.Uint32(data[4:8]),
		PacketSize: binary.LittleEndian.Uint32(data[8:12]),
		SSPI:       data[optionFlags2Index]&fIntSecurity != 0,
	}
	field := func(at int, name string, password bool) (string, error) {
		off := int(binary.LittleEndian.Uint16(data[at:]))
		n := int(binary.LittleEndian.Uint16(data[at+2:])) * 2
		if n == 0 {
			return "", nil
		}
		if off+n > len(data) {
			return "", fmt.Errorf("LOGIN7 field %s points past the end of the record", name)
		}
		raw := data[off : off+n]
		if password {
			raw = unmanglePassword(raw)
		}
		return utf16le.Decode(raw) // n is even: cannot fail
	}
	var err error
	if l.HostName, err = field(offHostName, "HostName", false); err != nil {
		return nil, err
	}
	if l.User, err = field(offUserName, "UserName", false); err != nil {
		return nil, err
	}
	if l.Password, err = field(offPassword, "Password", true); err != nil {
		return nil, err
	}
	if l.AppName, err = field(offAppName, "AppName", false); err != nil {
		return nil, err
	}
	if l.Database, err = field(offDatabase, "Database", false); err != nil {
		return nil, err
	}
	if n := int(binary.LittleEndian.Uint16(data[offSSPI+2:])); n != 0 {
		l.SSPI = true
		if n == 0xFFFF {
			n = int(binary.LittleEndian.Uint32(data[offSSPILong:]))
		}
		off := int(binary.LittleEndian.Uint16(data[offSSPI:]))
		if off+n > len(data) || off+n < off {
			return nil, errors.New("LOGIN7 field SSPI points past the end of the record")
		}
		l.SSPIData = append([]byte(nil), data[off:off+n]...)
	}
	return l, nil
}

// unmanglePassword reverses the LOGIN7 password obfuscation: each byte was
// nibble-swapped, then XORed with 0xA5.
func unmanglePassword(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		c ^= 0xA5
		out[i] = c<<4 | c>>4
	}
	return out
}
