package wsman

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"mime"
	"strconv"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/ntlm"
)

// HTTP message encryption with NTLM (MS-WSMV 2.2.9.1.1): each body is a
// multipart/encrypted document of two parts. The first part's headers name the
// protocol and the original content type and length; the second part is
// application/octet-stream holding a 4-byte little-endian signature length,
// the NTLM signature, and the sealed SOAP envelope.
const (
	encryptedProtocol    = "application/HTTP-SPNEGO-session-encrypted"
	encryptedBoundary    = "Encrypted Boundary"
	encryptedContentType = `multipart/encrypted;protocol="` + encryptedProtocol + `";boundary="` + encryptedBoundary + `"`
)

var (
	boundaryLine = []byte("--" + encryptedBoundary + "\r\n")
	closingLine  = []byte("--" + encryptedBoundary + "--\r\n")
	octetHeader  = []byte("\tContent-Type: application/octet-stream\r\n")
)

// isEncrypted tells whether a request Content-Type is an NTLM-sealed body.
func isEncrypted(contentType string) bool {
	media, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return strings.HasPrefix(strings.ToLower(contentType), "multipart/encrypted")
	}
	return media == "multipart/encrypted" && strings.EqualFold(params["protocol"], encryptedProtocol)
}

// unwrapEncrypted unseals a multipart/encrypted request body sealed with NTLM.
func unwrapEncrypted(session *ntlm.Session, body []byte) ([]byte, error) {
	length, payload, err := parseEncrypted(body)
	if err != nil {
		return nil, err
	}
	if len(payload) < 4 {
		return nil, fmt.Errorf("encrypted WS-Management message: payload of %d bytes has no signature length", len(payload))
	}
	sigLen := int(binary.LittleEndian.Uint32(payload[:4]))
	if sigLen != 16 || len(payload) < 4+sigLen {
		return nil, fmt.Errorf("encrypted WS-Management message: signature length %d, want 16 (NTLM)", sigLen)
	}
	plain, err := session.Unseal(payload[4:4+sigLen], payload[4+sigLen:])
	if err != nil {
		return nil, fmt.Errorf("encrypted WS-Management message: unsealing failed (wrong session key or out-of-order message): %w", err)
	}
	if len(plain) != length {
		return nil, fmt.Errorf("encrypted WS-Management message: %d bytes after unsealing, header says Length=%d", len(plain), length)
	}
	return plain, nil
}

// parseEncrypted checks the MIME framing of a multipart/encrypted body and
// returns the original length and the octet-stream payload (signature length,
// signature, sealed data), whatever the authentication that sealed it.
func parseEncrypted(body []byte) (length int, payload []byte, err error) {
	rest, ok := bytes.CutPrefix(body, boundaryLine)
	if !ok {
		return 0, nil, fmt.Errorf("encrypted WS-Management message: body does not start with %q", boundaryLine)
	}
	header, payload, ok := bytes.Cut(rest, boundaryLine)
	if !ok {
		return 0, nil, fmt.Errorf("encrypted WS-Management message: second MIME part missing")
	}
	length, err = originalLength(header)
	if err != nil {
		return 0, nil, err
	}
	payload, ok = bytes.CutSuffix(payload, closingLine)
	if !ok {
		return 0, nil, fmt.Errorf("encrypted WS-Management message: closing boundary %q missing (multi-part messages larger than one chunk are not supported)", closingLine)
	}
	payload, ok = bytes.CutPrefix(payload, octetHeader)
	if !ok {
		return 0, nil, fmt.Errorf("encrypted WS-Management message: second part is not application/octet-stream")
	}
	return length, payload, nil
}

// originalLength reads Length=N from the first part's OriginalContent header.
func originalLength(header []byte) (int, error) {
	for _, line := range strings.Split(string(header), "\r\n") {
		name, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "OriginalContent") {
			continue
		}
		for _, p := range strings.Split(value, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(k, "Length") {
				n, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil || n < 0 {
					return 0, fmt.Errorf("encrypted WS-Management message: bad OriginalContent Length %q", v)
				}
				return n, nil
			}
		}
	}
	return 0, fmt.Errorf("encrypted WS-Management message: first part has no OriginalContent Length")
}

// wrapEncrypted seals a reply envelope with NTLM in the same framing.
func wrapEncrypted(session *ntlm.Session, plain []byte) []byte {
	signature, sealed := session.Seal(plain)
	return frameEncrypted(len(plain), signature, sealed)
}

// frameEncrypted puts a sealed message in the multipart/encrypted framing.
func frameEncrypted(plainLen int, signature, sealed []byte) []byte {
	var b bytes.Buffer
	b.Write(boundaryLine)
	b.WriteString("\tContent-Type: " + encryptedProtocol + "\r\n")
	b.WriteString("\tOriginalContent: type=application/soap+xml;charset=UTF-8;Length=" + strconv.Itoa(plainLen) + "\r\n")
	b.Write(boundaryLine)
	b.Write(octetHeader)
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(signature)))
	b.Write(n[:])
	b.Write(signature)
	b.Write(sealed)
	b.Write(closingLine)
	return b.Bytes()
}
