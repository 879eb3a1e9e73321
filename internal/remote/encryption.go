package remote

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"mime"
	"strconv"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ntlmauth"
)

// HTTP message encryption (MS-WSMV 2.2.9.1): over plain HTTP a host with
// AllowUnencrypted=false (Windows' default) accepts only bodies encrypted by the
// authentication's security context. Each body is a multipart/encrypted document:
//
//	--Encrypted Boundary\r\n
//	\tContent-Type: <protocol>\r\n
//	\tOriginalContent: type=application/soap+xml;charset=UTF-8;Length=<plain length>\r\n
//	--Encrypted Boundary\r\n
//	\tContent-Type: application/octet-stream\r\n
//	<4-byte little-endian header length><header><encrypted data>--Encrypted Boundary--\r\n
//
// The header is what the mechanism's wrap produces next to the data: the 16-byte
// NTLM signature, or a Kerberos RFC 4121 wrap token's header. The framing is the same
// for both, so a Kerberos context plugs in as another sealer.

// sealer is the message protection of an authenticated connection.
type sealer interface {
	// Protocol is the multipart/encrypted protocol parameter:
	// "application/HTTP-SPNEGO-session-encrypted" for Negotiate (NTLM or Kerberos
	// inside), "application/HTTP-Kerberos-session-encrypted" for plain Kerberos.
	Protocol() string
	// Wrap encrypts one message; header goes before the data in the framing.
	Wrap(plain []byte) (header, sealed []byte, err error)
	// Unwrap decrypts and verifies one message of the host.
	Unwrap(header, sealed []byte) ([]byte, error)
}

const (
	protocolSPNEGO    = "application/HTTP-SPNEGO-session-encrypted"
	encryptedBoundary = "Encrypted Boundary"
	soapContentType   = "application/soap+xml;charset=UTF-8"
)

// ntlmSealer seals with an NTLM session (Negotiate carrying NTLM).
type ntlmSealer struct{ s *ntlmauth.Session }

func (n ntlmSealer) Protocol() string { return protocolSPNEGO }
func (n ntlmSealer) Wrap(plain []byte) ([]byte, []byte, error) {
	return n.s.Seal(plain)
}
func (n ntlmSealer) Unwrap(header, sealed []byte) ([]byte, error) { return n.s.Unseal(header, sealed) }

// encryptedContentType is the request Content-Type of an encrypted body.
func encryptedContentType(protocol string) string {
	return `multipart/encrypted;protocol="` + protocol + `";boundary="` + encryptedBoundary + `"`
}

// wrapBody frames plain, encrypted by s.
func wrapBody(s sealer, plain []byte) ([]byte, error) {
	header, sealed, err := s.Wrap(plain)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("--" + encryptedBoundary + "\r\n")
	b.WriteString("\tContent-Type: " + s.Protocol() + "\r\n")
	b.WriteString("\tOriginalContent: type=" + soapContentType + ";Length=" + strconv.Itoa(len(plain)) + "\r\n")
	b.WriteString("--" + encryptedBoundary + "\r\n")
	b.WriteString("\tContent-Type: application/octet-stream\r\n")
	b.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(header))))
	b.Write(header)
	b.Write(sealed)
	b.WriteString("--" + encryptedBoundary + "--\r\n")
	return b.Bytes(), nil
}

// isEncryptedType tells whether a response Content-Type is multipart/encrypted.
func isEncryptedType(contentType string) bool {
	media, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return strings.HasPrefix(strings.ToLower(contentType), "multipart/encrypted")
	}
	return media == "multipart/encrypted"
}

// unwrapBody opens an encrypted response body.
func unwrapBody(s sealer, body []byte) ([]byte, error) {
	bad := func(what string) error {
		return fmt.Errorf("the host's encrypted WinRM message is malformed (%s)", what)
	}
	boundary := []byte("--" + encryptedBoundary + "\r\n")
	rest, ok := bytes.CutPrefix(body, boundary)
	if !ok {
		return nil, bad("no opening boundary")
	}
	head, payload, ok := bytes.Cut(rest, boundary)
	if !ok {
		return nil, bad("no second part")
	}
	length := -1
	for _, line := range strings.Split(string(head), "\r\n") {
		name, value, _ := strings.Cut(strings.TrimSpace(line), ":")
		if !strings.EqualFold(strings.TrimSpace(name), "OriginalContent") {
			continue
		}
		for _, p := range strings.Split(value, ";") {
			if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "Length") {
				length, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
	}
	if length < 0 {
		return nil, bad("no OriginalContent Length")
	}
	payload, ok = bytes.CutSuffix(payload, []byte("--"+encryptedBoundary+"--\r\n"))
	if !ok {
		return nil, bad("no closing boundary")
	}
	_, payload, ok = bytes.Cut(payload, []byte("application/octet-stream\r\n"))
	if !ok || len(payload) < 4 {
		return nil, bad("no octet-stream part")
	}
	n := int(binary.LittleEndian.Uint32(payload))
	if n > len(payload)-4 {
		return nil, bad("header longer than the part")
	}
	plain, err := s.Unwrap(payload[4:4+n], payload[4+n:])
	if err != nil {
		return nil, err
	}
	if len(plain) != length {
		return nil, errors.New("the host's encrypted WinRM message decrypts to another length than it announces")
	}
	return plain, nil
}
