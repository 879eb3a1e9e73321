package tds

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode/utf16"
)

// Token types (MS-TDS 2.2.7).
const (
	tokenColMetadata byte = 0x81
	tokenError       byte = 0xAA
	tokenInfo        byte = 0xAB
	tokenLoginAck    byte = 0xAD
	tokenRow         byte = 0xD1
	tokenEnvChange   byte = 0xE3
	tokenDone        byte = 0xFD
	tokenSSPI        byte = 0xED // SSPI: a security package token during an integrated login (MS-TDS 2.2.7.22)
)

// DONE status bits.
const (
	doneFinal uint16 = 0x00
	doneMore  uint16 = 0x01
	doneError uint16 = 0x02
	doneCount uint16 = 0x10
	doneAttn  uint16 = 0x20
)

// curCmdSelect is the CurCmd SQL Server puts in the DONE after a SELECT.
const curCmdSelect uint16 = 0xC1

// ENVCHANGE types.
const (
	envDatabase   byte = 1
	envLanguage   byte = 2
	envPacketSize byte = 4
	envCollation  byte = 7
	// envResetConnAck acknowledges a packet with the RESETCONNECTION status bit.
	envResetConnAck byte = 18
)

// Wire type ids.
const (
	typeGUID           byte = 0x24
	typeInt4           byte = 0x38 // INT4TYPE, a sql_variant's int base type
	typeIntN           byte = 0x26
	typeVariant        byte = 0x62
	typeDateTimeOffset byte = 0x2B
	typeBitN           byte = 0x68
	typeNVarChar       byte = 0xE7
)

// collation is SQL_Latin1_General_CP1_CI_AS, the default of an English-locale SQL
// Server install: LCID 0x0409, flags IgnoreCase|IgnoreKana|IgnoreWidth, sort id 52.
var collation = []byte{0x09, 0x04, 0xD0, 0x00, 0x34}

// tdsVersion74 is TDS 7.4 as LOGINACK carries it (big-endian on the wire).
const tdsVersion74 uint32 = 0x74000004

// tokenBuf builds a token stream.
type tokenBuf struct{ b []byte }

func (t *tokenBuf) byte1(v byte)      { t.b = append(t.b, v) }
func (t *tokenBuf) uint16le(v uint16) { t.b = binary.LittleEndian.AppendUint16(t.b, v) }
func (t *tokenBuf) uint32le(v uint32) { t.b = binary.LittleEndian.AppendUint32(t.b, v) }
func (t *tokenBuf) uint64le(v uint64) { t.b = binary.LittleEndian.AppendUint64(t.b, v) }

// bVarChar writes a B_VARCHAR: character count in one byte, then UTF-16LE.
func (t *tokenBuf) bVarChar(s string) {
	u := utf16.Encode([]rune(s))
	if len(u) > 255 {
		u = u[:255]
	}
	t.byte1(byte(len(u)))
	t.utf16(u)
}

// usVarChar writes a US_VARCHAR: character count in two bytes, then UTF-16LE.
func (t *tokenBuf) usVarChar(s string) {
	u := utf16.Encode([]rune(s))
	if len(u) > 65535 {
		u = u[:65535]
	}
	t.uint16le(uint16(len(u)))
	t.utf16(u)
}

func (t *tokenBuf) utf16(u []uint16) {
	for _, c := range u {
		t.uint16le(c)
	}
}

// withLength writes a token whose body starts with its own uint16 length.
func (t *tokenBuf) withLength(token byte, body func(b *tokenBuf)) {
	var inner tokenBuf
	body(&inner)
	t.byte1(token)
	t.uint16le(uint16(len(inner.b)))
	t.b = append(t.b, inner.b...)
}

func (t *tokenBuf) envChangeString(typ byte, newValue, oldValue string) {
	t.withLength(tokenEnvChange, func(b *tokenBuf) {
		b.byte1(typ)
		b.bVarChar(newValue)
		b.bVarChar(oldValue)
	})
}

func (t *tokenBuf) envChangeCollation() {
	t.withLength(tokenEnvChange, func(b *tokenBuf) {
		b.byte1(envCollation)
		b.byte1(byte(len(collation)))
		b.b = append(b.b, collation...)
		b.byte1(0) // old value: empty
	})
}

func (t *tokenBuf) loginAck(progName string, major, minor uint8, build uint16) {
	t.withLength(tokenLoginAck, func(b *tokenBuf) {
		b.byte1(1) // interface: SQL_TSQL
		b.b = binary.BigEndian.AppendUint32(b.b, tdsVersion74)
		b.bVarChar(progName)
		b.byte1(major)
		b.byte1(minor)
		b.byte1(byte(build >> 8))
		b.byte1(byte(build))
	})
}

// sspi writes an SSPI token (0xED): USHORT length, then the security package's
// bytes.
func (t *tokenBuf) sspi(b []byte) {
	t.byte1(tokenSSPI)
	t.uint16le(uint16(len(b)))
	t.b = append(t.b, b...)
}

// message writes an ERROR (0xAA) or INFO (0xAB) token.
func (t *tokenBuf) message(token byte, e *SQLError, serverName string) {
	t.withLength(token, func(b *tokenBuf) {
		b.uint32le(uint32(e.Number))
		b.byte1(e.State)
		b.byte1(e.Class)
		b.usVarChar(e.Message)
		b.bVarChar(serverName)
		b.bVarChar("") // procedure name
		b.uint32le(uint32(e.Line))
	})
}

func (t *tokenBuf) done(status, curCmd uint16, rowCount uint64) {
	t.byte1(tokenDone)
	t.uint16le(status)
	t.uint16le(curCmd)
	t.uint64le(rowCount)
}

// colMetadata writes COLMETADATA for the columns.
func (t *tokenBuf) colMetadata(cols []Column) error {
	t.byte1(tokenColMetadata)
	t.uint16le(uint16(len(cols)))
	for _, c := range cols {
		t.uint32le(0) // user type
		var flags uint16
		if c.Nullable {
			flags |= 0x0001
		}
		t.uint16le(flags)
		switch c.Type {
		case TypeNVarChar:
			t.byte1(typeNVarChar)
			if isMaxNVarChar(c) {
				t.uint16le(0xFFFF)
			} else {
				t.uint16le(uint16(c.Size * 2))
			}
			t.b = append(t.b, collation...)
		case TypeInt:
			t.byte1(typeIntN)
			t.byte1(4)
		case TypeBigInt:
			t.byte1(typeIntN)
			t.byte1(8)
		case TypeTinyInt:
			t.byte1(typeIntN)
			t.byte1(1)
		case TypeSmallInt:
			t.byte1(typeIntN)
			t.byte1(2)
		case TypeUniqueIdentifier:
			t.byte1(typeGUID)
			t.byte1(16)
		case TypeVariant:
			t.byte1(typeVariant)
			t.uint32le(variantMaxLen)
		case TypeBit:
			t.byte1(typeBitN)
			t.byte1(1)
		case TypeDateTimeOffset:
			if c.Scale < 0 || c.Scale > 7 {
				return fmt.Errorf("column %q: datetimeoffset scale %d is outside 0-7", c.Name, c.Scale)
			}
			t.byte1(typeDateTimeOffset)
			t.byte1(byte(c.Scale))
		default:
			return fmt.Errorf("column %q: unknown column type %d", c.Name, c.Type)
		}
		t.bVarChar(c.Name)
	}
	return nil
}

// isMaxNVarChar reports whether the column is nvarchar(max) (sent as PLP).
func isMaxNVarChar(c Column) bool { return c.Size <= 0 || c.Size > 4000 }

// row writes one ROW token; it checks each value against its column.
func (t *tokenBuf) row(cols []Column, values []any) error {
	if len(values) != len(cols) {
		return fmt.Errorf("row has %d values for %d columns", len(values), len(cols))
	}
	t.byte1(tokenRow)
	for i, c := range cols {
		v := values[i]
		if v == nil && !c.Nullable {
			return fmt.Errorf("column %q is not nullable but the row holds NULL", c.Name)
		}
		if err := t.value(c, v); err != nil {
			return fmt.Errorf("column %q: %w", c.Name, err)
		}
	}
	return nil
}

func (t *tokenBuf) value(c Column, v any) error {
	switch c.Type {
	case TypeNVarChar:
		if v == nil {
			if isMaxNVarChar(c) {
				t.uint64le(0xFFFFFFFFFFFFFFFF) // PLP NULL
			} else {
				t.uint16le(0xFFFF)
			}
			return nil
		}
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("value %v (%T) is not a string", v, v)
		}
		u := utf16.Encode([]rune(s))
		if isMaxNVarChar(c) {
			t.uint64le(uint64(len(u) * 2))
			if len(u) > 0 {
				t.uint32le(uint32(len(u) * 2))
				t.utf16(u)
			}
			t.uint32le(0) // PLP terminator
			return nil
		}
		if len(u) > c.Size {
			return fmt.Errorf("value of %d characters is longer than nvarchar(%d)", len(u), c.Size)
		}
		t.uint16le(uint16(len(u) * 2))
		t.utf16(u)
	case TypeInt, TypeBigInt, TypeTinyInt, TypeSmallInt:
		if v == nil {
			t.byte1(0)
			return nil
		}
		var n int64
		switch x := v.(type) {
		case int16:
			n = int64(x)
		case int32:
			n = int64(x)
		case int64:
			n = x
		case int:
			n = int64(x)
		default:
			return fmt.Errorf("value %v (%T) is not an integer", v, v)
		}
		switch c.Type {
		case TypeInt:
			if n < -1<<31 || n > 1<<31-1 {
				return fmt.Errorf("value %d does not fit an int", n)
			}
			t.byte1(4)
			t.uint32le(uint32(int32(n)))
		case TypeTinyInt:
			if n < 0 || n > 255 {
				return fmt.Errorf("value %d does not fit a tinyint (0-255)", n)
			}
			t.byte1(1)
			t.byte1(byte(n))
		case TypeSmallInt:
			if n < -1<<15 || n > 1<<15-1 {
				return fmt.Errorf("value %d does not fit a smallint", n)
			}
			t.byte1(2)
			t.uint16le(uint16(int16(n)))
		default:
			t.byte1(8)
			t.uint64le(uint64(n))
		}
	case TypeBit:
		if v == nil {
			t.byte1(0)
			return nil
		}
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("value %v (%T) is not a bool", v, v)
		}
		t.byte1(1)
		if b {
			t.byte1(1)
		} else {
			t.byte1(0)
		}
	case TypeUniqueIdentifier:
		if v == nil {
			t.byte1(0)
			return nil
		}
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("value %v (%T) is not a GUID string", v, v)
		}
		g, err := encodeGUID(s)
		if err != nil {
			return err
		}
		t.byte1(16)
		t.b = append(t.b, g...)
	case TypeVariant:
		return t.variant(v)
	case TypeDateTimeOffset:
		if v == nil {
			t.byte1(0)
			return nil
		}
		tm, ok := v.(time.Time)
		if !ok {
			return fmt.Errorf("value %v (%T) is not a time.Time", v, v)
		}
		enc, err := encodeDateTimeOffset(tm, c.Scale)
		if err != nil {
			return err
		}
		t.byte1(byte(len(enc)))
		t.b = append(t.b, enc...)
	default:
		return fmt.Errorf("unknown column type %d", c.Type)
	}
	return nil
}

// variantMaxLen is the maximum length a sql_variant column declares (8000 bytes of
// data plus the base type's header), as SQL Server sends it.
const variantMaxLen = 8016

// variant writes a sql_variant value: its total length (0 for NULL), the base type,
// the count of property bytes, the properties, then the data. A string goes as
// nvarchar (collation and maximum length as properties), an int32 as int.
func (t *tokenBuf) variant(v any) error {
	switch x := v.(type) {
	case nil:
		t.uint32le(0)
	case string:
		u := utf16.Encode([]rune(x))
		if len(u) > 4000 {
			return fmt.Errorf("sql_variant string of %d characters is longer than 4000", len(u))
		}
		t.uint32le(uint32(2 + 7 + 2*len(u)))
		t.byte1(typeNVarChar)
		t.byte1(7)
		t.b = append(t.b, collation...)
		t.uint16le(8000) // the base type's maximum length in bytes
		t.utf16(u)
	case int32:
		t.uint32le(2 + 4)
		t.byte1(typeInt4)
		t.byte1(0)
		t.uint32le(uint32(x))
	default:
		return fmt.Errorf("sql_variant value %v (%T) is neither a string nor an int32", v, v)
	}
	return nil
}

// encodeGUID encodes "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" as uniqueidentifier's 16
// bytes: the first three groups little-endian, the last two as written.
func encodeGUID(s string) ([]byte, error) {
	h := strings.ReplaceAll(s, "-", "")
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != 16 || len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return nil, fmt.Errorf("value %q is not a GUID such as 6F9619FF-8B86-D011-B42D-00C04FC964FF", s)
	}
	b[0], b[1], b[2], b[3] = b[3], b[2], b[1], b[0]
	b[4], b[5] = b[5], b[4]
	b[6], b[7] = b[7], b[6]
	return b, nil
}

// unixDaysAtYear1 is the number of days from 0001-01-01 to 1970-01-01.
const unixDaysAtYear1 = 719162

// encodeDateTimeOffset encodes a datetimeoffset(scale): the UTC time of day in units
// of 10^-scale seconds (3 to 5 bytes), the UTC date as days since 0001-01-01 (3 bytes),
// and the offset in minutes (int16).
func encodeDateTimeOffset(tm time.Time, scale int) ([]byte, error) {
	_, offsetSec := tm.Zone()
	if offsetSec%60 != 0 || offsetSec < -14*3600 || offsetSec > 14*3600 {
		return nil, fmt.Errorf("time zone offset of %d seconds is not whole minutes within ±14:00", offsetSec)
	}
	u := tm.UTC()
	if u.Year() < 1 || u.Year() > 9999 {
		return nil, fmt.Errorf("time %s is outside the datetimeoffset range", tm)
	}
	midnight := time.Date(u.Year(), u.Month(), u.Day(), 0, 0, 0, 0, time.UTC)
	days := midnight.Unix()/86400 + unixDaysAtYear1
	nanos := u.Sub(midnight).Nanoseconds()
	div := int64(1)
	for i := scale; i < 9; i++ {
		div *= 10
	}
	ticks := uint64(nanos / div)
	timeSize := 5
	switch {
	case scale <= 2:
		timeSize = 3
	case scale <= 4:
		timeSize = 4
	}
	out := make([]byte, 0, timeSize+5)
	for i := 0; i < timeSize; i++ {
		out = append(out, byte(ticks>>(8*i)))
	}
	out = append(out, byte(days), byte(days>>8), byte(days>>16))
	out = binary.LittleEndian.AppendUint16(out, uint16(int16(offsetSec/60)))
	return out, nil
}

// resultStream encodes the result sets of one batch.
func resultStream(sets []ResultSet) ([]byte, error) {
	var t tokenBuf
	if len(sets) == 0 {
		t.done(doneFinal, 0, 0)
		return t.b, nil
	}
	for i, rs := range sets {
		status := doneCount
		if i < len(sets)-1 {
			status |= doneMore
		}
		if len(rs.Columns) == 0 {
			// A statement without a result set (CREATE DATABASE, DROP DATABASE):
			// its DONE carries no row count.
			if len(rs.Rows) > 0 {
				return nil, fmt.Errorf("result set %d has rows but no columns", i+1)
			}
			t.done(status&^doneCount, 0, 0)
			continue
		}
		if err := t.colMetadata(rs.Columns); err != nil {
			return nil, fmt.Errorf("result set %d: %w", i+1, err)
		}
		for j, r := range rs.Rows {
			if err := t.row(rs.Columns, r); err != nil {
				return nil, fmt.Errorf("result set %d, row %d: %w", i+1, j+1, err)
			}
		}
		t.done(status, curCmdSelect, uint64(len(rs.Rows)))
	}
	return t.b, nil
}

// errorStream is an ERROR token followed by DONE with the error bit.
func errorStream(e *SQLError, serverName string) []byte {
	var t tokenBuf
	t.message(tokenError, e, serverName)
	t.done(doneError, 0, 0)
	return t.b
}
