package remote

import (
	"bytes"
	"errors"
	"testing"
	"unicode/utf8"
)

// The parsers of what a host sends: no answer may panic the provider. They run on
// their seeds in go test; `make fuzz` runs them longer.

// clearSealer "seals" by framing alone: the header must be "HDR!", the data is
// the message. It lets the fuzzer reach every check of the framing.
type clearSealer struct{}

var errBadHeader = errors.New("bad header")

func (clearSealer) Protocol() string { return protocolSPNEGO }
func (clearSealer) Wrap(plain []byte) ([]byte, []byte, error) {
	return []byte("HDR!"), append([]byte(nil), plain...), nil
}
func (clearSealer) Unwrap(header, sealed []byte) ([]byte, error) {
	if string(header) != "HDR!" {
		return nil, errBadHeader
	}
	return append([]byte(nil), sealed...), nil
}

func FuzzUnwrapBody(f *testing.F) {
	body, err := wrapBody(clearSealer{}, []byte("<s:Envelope/>"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(body)
	f.Add(body[:len(body)-10])
	f.Add(bytes.Replace(body, []byte("Length=13"), []byte("Length=-1"), 1))
	f.Add(bytes.Replace(body, []byte("\x04\x00\x00\x00HDR!"), []byte("\xff\xff\xff\x7fHDR!"), 1))
	f.Add([]byte("--Encrypted Boundary\r\n\tOriginalContent: type=x;Length=0\r\n--Encrypted Boundary\r\napplication/octet-stream\r\n\x01--Encrypted Boundary--\r\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		plain, err := unwrapBody(clearSealer{}, body)
		if err == nil && len(plain) > len(body) {
			t.Fatalf("%d bytes out of a %d-byte body", len(plain), len(body))
		}
	})
}

func FuzzDecodeCLIXML(f *testing.F) {
	f.Add(`#< CLIXML
<Objs Version="1.1.0.1" xmlns="http://schemas.microsoft.com/powershell/2004/04"><S S="Error">Access is denied._x000D__x000A_</S></Objs>`)
	f.Add(`#< CLIXML` + "\r\n" + `<Objs><Obj S="progress" RefId="0"><TN RefId="0"><T>System.Management.Automation.PSCustomObject</T></TN></Obj></Objs>`)
	f.Add("#< CLIXML\n<Objs><S S=\"Error\">cut _x00")
	f.Add("#< CLIXML\n<Objs><S S=\"Error\">_xD83D__xDE00_ _xD800_</S></Objs>#< CLIXML<Objs></Objs> tail")
	f.Add("plain text on stderr")
	f.Add("")
	f.Fuzz(func(t *testing.T, stderr string) {
		out := DecodeCLIXML(stderr)
		if utf8.ValidString(stderr) && !utf8.ValidString(out) {
			t.Fatalf("valid UTF-8 in, invalid out: %q → %q", stderr, out)
		}
	})
}
