package remote

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// failingSealer fails to seal and to unseal, as a broken security context does.
type failingSealer struct{ clearSealer }

var errSealer = errors.New("the context is broken")

func (failingSealer) Wrap([]byte) ([]byte, []byte, error)   { return nil, nil, errSealer }
func (failingSealer) Unwrap([]byte, []byte) ([]byte, error) { return nil, errSealer }

// The framing of MS-WSMV 2.2.9.1, byte for byte.
func TestWrapBodyFraming(t *testing.T) {
	body, err := wrapBody(clearSealer{}, []byte("<s:Envelope/>"))
	if err != nil {
		t.Fatal(err)
	}
	want := "--Encrypted Boundary\r\n" +
		"\tContent-Type: application/HTTP-SPNEGO-session-encrypted\r\n" +
		"\tOriginalContent: type=application/soap+xml;charset=UTF-8;Length=13\r\n" +
		"--Encrypted Boundary\r\n" +
		"\tContent-Type: application/octet-stream\r\n" +
		"\x04\x00\x00\x00HDR!<s:Envelope/>" +
		"--Encrypted Boundary--\r\n"
	if string(body) != want {
		t.Fatalf("body\n%q\nwant\n%q", body, want)
	}
	if b, err := wrapBody(failingSealer{}, []byte("x")); !errors.Is(err, errSealer) || b != nil {
		t.Fatalf("a sealer's failure: %q, %v", b, err)
	}
	if got := encryptedContentType(protocolSPNEGO); got != `multipart/encrypted;protocol="application/HTTP-SPNEGO-session-encrypted";boundary="Encrypted Boundary"` {
		t.Errorf("Content-Type %s", got)
	}
}

func TestUnwrapBodyRoundTripAndHeaderCase(t *testing.T) {
	body, _ := wrapBody(clearSealer{}, []byte("<s:Envelope>answer</s:Envelope>"))
	if plain, err := unwrapBody(clearSealer{}, body); err != nil || string(plain) != "<s:Envelope>answer</s:Envelope>" {
		t.Fatalf("round trip: %q, %v", plain, err)
	}
	// Header names and the Length parameter are case-insensitive; spaces around the parts are allowed.
	alt := bytes.Replace(body, []byte("\tOriginalContent: type=application/soap+xml;charset=UTF-8;Length=31"),
		[]byte(" originalcontent : type=application/soap+xml; charset=UTF-8; length=31 "), 1)
	if plain, err := unwrapBody(clearSealer{}, alt); err != nil || len(plain) != 31 {
		t.Fatalf("header in another case: %q, %v", plain, err)
	}
	empty, _ := wrapBody(clearSealer{}, nil)
	if plain, err := unwrapBody(clearSealer{}, empty); err != nil || len(plain) != 0 {
		t.Fatalf("empty message: %q, %v", plain, err)
	}
}

// Every malformed body is an error that says what is wrong; none panics.
func TestUnwrapBodyMalformed(t *testing.T) {
	good, _ := wrapBody(clearSealer{}, []byte("<s:Envelope/>"))
	head, _, _ := bytes.Cut(good, []byte("application/octet-stream\r\n"))
	head = append(head, "application/octet-stream\r\n"...)
	tail := []byte("--Encrypted Boundary--\r\n")
	part := func(data []byte) []byte { return append(append(append([]byte(nil), head...), data...), tail...) }
	lenPrefix := func(n uint32, rest string) []byte { return append(binary.LittleEndian.AppendUint32(nil, n), rest...) }
	for name, c := range map[string]struct {
		body []byte
		says string
	}{
		"empty":                  {nil, "no opening boundary"},
		"plain SOAP":             {[]byte("<s:Envelope/>"), "no opening boundary"},
		"one part":               {[]byte("--Encrypted Boundary\r\n\tContent-Type: x\r\n"), "no second part"},
		"no length":              {bytes.Replace(good, []byte(";Length=13"), nil, 1), "no OriginalContent Length"},
		"negative length":        {bytes.Replace(good, []byte("Length=13"), []byte("Length=-1"), 1), "no OriginalContent Length"},
		"no closing boundary":    {good[:len(good)-4], "no closing boundary"},
		"no octet-stream":        {bytes.Replace(good, []byte("application/octet-stream\r\n"), []byte("text/plain\r\n"), 1), "no octet-stream part"},
		"data part of 0 bytes":   {part(nil), "no octet-stream part"},
		"data part of 3 bytes":   {part([]byte{4, 0, 0}), "no octet-stream part"},
		"header past the part":   {part(lenPrefix(5, "HDR!")), "header longer than the part"},
		"huge header length":     {part(lenPrefix(0xffffffff, "HDR!")), "header longer than the part"},
		"length disagrees":       {bytes.Replace(good, []byte("Length=13"), []byte("Length=12"), 1), "another length"},
		"header all of the part": {part(lenPrefix(4, "HDR!")), "another length"},
	} {
		plain, err := unwrapBody(clearSealer{}, c.body)
		if err == nil || plain != nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %q, %v; want an error saying %q", name, plain, err, c.says)
		}
	}
	// A 4-byte header length with nothing after it is a header of 0 bytes: valid framing.
	if plain, err := unwrapBody(clearSealer{}, part(lenPrefix(0, ""))); !errors.Is(err, errBadHeader) || plain != nil {
		t.Errorf("empty header: %q, %v; want the sealer to judge it", plain, err)
	}
	if plain, err := unwrapBody(failingSealer{}, good); !errors.Is(err, errSealer) || plain != nil {
		t.Errorf("a sealer's failure: %q, %v", plain, err)
	}
}

func TestIsEncryptedType(t *testing.T) {
	for ct, want := range map[string]bool{
		`multipart/encrypted;protocol="application/HTTP-SPNEGO-session-encrypted";boundary="Encrypted Boundary"`: true,
		`Multipart/Encrypted; protocol="application/HTTP-Kerberos-session-encrypted"`:                            true,
		`multipart/encrypted;protocol=`: true, // malformed parameters: the media type still says so
		`MULTIPART/ENCRYPTED;;`:         true,
		// Not a media type Go can parse (no ";"): the prefix still says encrypted,
		// so the body is opened (and fails) rather than read as clear text.
		`multipart/encrypted boundary="Encrypted Boundary"`: true,
		`application/soap+xml;charset=UTF-8`:                false,
		`multipart/related; type="text/xml"`:                false,
		`text/plain;;`:                                      false,
		``:                                                  false,
	} {
		if got := isEncryptedType(ct); got != want {
			t.Errorf("isEncryptedType(%q) = %v", ct, got)
		}
	}
}
