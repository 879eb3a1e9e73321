package contract

import (
	"bytes"
	"errors"
	"testing"
)

// The envelope's readers take whatever arrives on stdin. No input makes them panic;
// ReadInput returns only bytes it read, and DecodeInput accepts only the scripts of
// this contract. They run on their seeds in go test; `make fuzz` runs them longer.

// envelopeSeeds are small frames; full says whether to add a whole operation's input
// (long: the fuzzer spends its time on it, so only DecodeInput, which needs a real
// script to get past the script check, has it).
func envelopeSeeds(f *testing.F, full bool) {
	if full {
		good, err := EncodeInput(OpRestartStatus, map[string]string{"restart_id": "0123456789abcdef0123456789abcdef"})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(good)
		f.Add(bytes.ReplaceAll(good, []byte("\n"), []byte("\r\n")))
	}
	f.Add([]byte("e30=\n2\nfirst line\r\nsecond\n"))
	f.Add([]byte("e30=\n3\nfirst line\nsecond\n"))
	f.Add([]byte("e30=\n0\n"))
	f.Add([]byte("e30=\n100000\n"))
	f.Add([]byte("e30=\n100001\n"))
	f.Add([]byte("e30=\n-1\n"))
	f.Add([]byte("not base64\n1\n# mssqlifi-operation: read_instance\n"))
	f.Add([]byte("\n"))
	f.Add([]byte{})
}

func FuzzReadInput(f *testing.F) {
	envelopeSeeds(f, false)
	f.Fuzz(func(t *testing.T, in []byte) {
		frame, err := ReadInput(bytes.NewReader(in))
		if !bytes.HasPrefix(in, frame) {
			t.Fatalf("the frame %q is not what was read from %q", frame, in)
		}
		var ie *InputError
		if err != nil && !errors.As(err, &ie) {
			t.Fatalf("error %v is not an InputError", err)
		}
	})
}

func FuzzDecodeInput(f *testing.F) {
	envelopeSeeds(f, true)
	f.Fuzz(func(t *testing.T, in []byte) {
		op, params, err := DecodeInput(in)
		if err != nil {
			if !errors.Is(err, ErrUnknownScript) {
				t.Fatalf("error %v is not ErrUnknownScript", err)
			}
			return
		}
		if _, serr := Script(op); serr != nil {
			t.Fatalf("accepted unknown operation %q", op)
		}
		if len(params) == 0 {
			t.Fatal("accepted input without parameters")
		}
	})
}
