package contract

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// The scripts exit with the codes the provider reads: each error name with its
// constant, and a result with ExitOK.
func TestExitCodesMatchTheScripts(t *testing.T) {
	want := map[string]int{"failed": ExitFailure, "lsa_error": ExitFailure, "invalid_parameters": ExitInvalidParams,
		"clustered": ExitRefused, "not_found": ExitNotFound, CodeRestartInProgress: ExitRefused,
		CodeNotClustered: ExitRefused, CodeClusterError: ExitRefused, CodeMoveFailed: ExitFailure, CodeRestartNotStarted: ExitRefused,
		CodeChangedNotRestarted: ExitChangedNotStarted}
	re := regexp.MustCompile(`Exit-WithError -Code (\d+) -ErrorName '([a-z_]+)'`)
	seen := 0
	for _, parts := range scriptParts {
		for _, p := range parts {
			for _, m := range re.FindAllStringSubmatch(mustRead(p), -1) {
				seen++
				code, _ := strconv.Atoi(m[1])
				if w, ok := want[m[2]]; !ok || code != w {
					t.Errorf("%s exits %d for %q; the provider reads %d", p, code, m[2], w)
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no Exit-WithError found in the scripts")
	}
	if !strings.Contains(mustRead("common.ps1"), fmt.Sprintf("[Console]::Out.Write((ConvertTo-AsciiJson -Value $Value))\n    exit %d\n", ExitOK)) {
		t.Errorf("common.ps1's Write-Result does not exit %d (ExitOK)", ExitOK)
	}
	if !strings.Contains(Bootstrap(), fmt.Sprintf("exit %d", ExitRefused)) {
		t.Errorf("the bootstrap does not refuse with exit %d (ExitRefused)", ExitRefused)
	}
}

func TestUserAgentNamesTheVersionOrDev(t *testing.T) {
	if got := UserAgent(""); got != "terraform-provider-mssqlifi/dev" {
		t.Errorf("UserAgent(\"\") = %q", got)
	}
	if got := UserAgent("1.2.3"); got != "terraform-provider-mssqlifi/1.2.3" {
		t.Errorf("UserAgent(1.2.3) = %q", got)
	}
}

func TestUnknownOperationAndBadParametersAreRefused(t *testing.T) {
	if s, err := Script("format_disk"); err == nil || s != "" {
		t.Errorf("Script(format_disk) = %d bytes, %v; want an error", len(s), err)
	}
	if in, err := EncodeInput("format_disk", map[string]string{}); err == nil || in != nil {
		t.Errorf("EncodeInput(format_disk) = %q, %v; want an error", in, err)
	}
	if in, err := EncodeInput(OpReadInstance, map[string]any{"x": make(chan int)}); err == nil || in != nil {
		t.Errorf("EncodeInput with parameters JSON cannot encode = %q, %v; want an error", in, err)
	}
}

// Each operation's script is its header line, then its files whole and in order:
// composing adds no line (every file ends with a newline).
func TestScriptIsTheHeaderThenEachFile(t *testing.T) {
	for op, parts := range scriptParts {
		s, err := Script(op)
		if err != nil {
			t.Fatal(err)
		}
		want := headerPrefix + string(op) + "\n"
		for _, p := range parts {
			f := mustRead(p)
			if !strings.HasSuffix(f, "\n") {
				t.Errorf("%s does not end with a newline", p)
			}
			want += f
		}
		if s != want {
			t.Errorf("%s: the script is not its header and its files (%d lines, want %d)", op, strings.Count(s, "\n"), strings.Count(want, "\n"))
		}
	}
}

func TestDecodeCommandRefusesWhatEncodeCommandCannotMake(t *testing.T) {
	if s, err := DecodeCommand(EncodeCommand("Get-Date; 'ü'")); err != nil || s != "Get-Date; 'ü'" {
		t.Fatalf("round trip: %q, %v", s, err)
	}
	for _, bad := range []string{"not base64!", base64.StdEncoding.EncodeToString([]byte{'A', 0, 'B'})} {
		if s, err := DecodeCommand(bad); err == nil || s != "" {
			t.Errorf("DecodeCommand(%q) = %q, %v; want an error", bad, s, err)
		}
	}
}

// frame builds a framed input of n script lines by hand.
func frame(params string, count string, lines int) []byte {
	var b bytes.Buffer
	b.WriteString(base64.StdEncoding.EncodeToString([]byte(params)) + "\n" + count + "\n")
	for i := 0; i < lines; i++ {
		b.WriteString("x\n")
	}
	return b.Bytes()
}

// The line count runs from 0 to MaxScriptLines; ReadInput reads exactly the frame.
func TestReadInputLineCountBounds(t *testing.T) {
	for _, n := range []int{0, 1, MaxScriptLines} {
		in := frame("{}", strconv.Itoa(n), n)
		got, err := ReadInput(io.MultiReader(bytes.NewReader(in), strings.NewReader("next\n")))
		if err != nil || !bytes.Equal(got, in) {
			t.Errorf("count %d: %d bytes, %v; want the %d-byte frame", n, len(got), err, len(in))
		}
	}
	for _, count := range []string{strconv.Itoa(MaxScriptLines + 1), "-1", "many"} {
		_, err := ReadInput(bytes.NewReader(frame("{}", count, 2)))
		var ie *InputError
		if !errors.As(err, &ie) || ie.Stage != "count" || ie.Missing || ie.Value != count {
			t.Errorf("count %q: %v; want a malformed count", count, err)
		}
	}
}

// A missing line is Missing (stdin ended); a failing read is not, and its error is kept.
func TestReadInputTellsEndOfInputFromAFailedRead(t *testing.T) {
	in := frame("{}", "3", 3)
	lines := strings.SplitAfter(string(in), "\n")
	for _, c := range []struct{ input, stage string }{
		{"", "params"}, {lines[0], "count"}, {lines[0] + lines[1] + lines[2], "script"},
	} {
		_, err := ReadInput(strings.NewReader(c.input))
		var ie *InputError
		if !errors.As(err, &ie) || ie.Stage != c.stage || !ie.Missing {
			t.Errorf("%q: %v; want stdin ended at %s", c.input, err, c.stage)
		}
		if errors.Is(err, io.EOF) {
			t.Errorf("%q: end of input is reported as a read error: %v", c.input, err)
		}
		broken := errors.New("pipe broke")
		_, err = ReadInput(io.MultiReader(strings.NewReader(c.input), iotest.ErrReader(broken)))
		if !errors.As(err, &ie) || ie.Stage != c.stage || ie.Missing || !errors.Is(err, broken) {
			t.Errorf("%q then a failed read: %v; want the read error at %s", c.input, err, c.stage)
		}
	}
}

func TestDecodeInputRefusesBadParameters(t *testing.T) {
	good, err := EncodeInput(OpReadInstance, ReadInstanceParams{Instance: "MSSQLSERVER", Right: RightManageVolume})
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := bytes.Cut(good, []byte("\n"))
	script, _ := Script(OpReadInstance)
	for name, c := range map[string]struct {
		params []byte
		says   string
	}{
		// base64 decodes "{}" before the bad byte: a reader that ignored the error would accept it.
		"not base64": {[]byte("e30=%"), "not base64"},
		"not JSON":   {[]byte(base64.StdEncoding.EncodeToString([]byte("{"))), "not JSON"},
	} {
		framed := append(append(append([]byte(nil), c.params...), '\n'), rest...)
		if op, js, err := DecodeInput(framed); !errors.Is(err, ErrUnknownScript) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("DecodeInput, parameters %s: %s %s, %v", name, op, js, err)
		}
		unframed := append(append(append([]byte(nil), c.params...), '\n'), script...)
		if op, js, err := DecodeUnframedInput(unframed); !errors.Is(err, ErrUnknownScript) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("DecodeUnframedInput, parameters %s: %s %s, %v", name, op, js, err)
		}
	}
	unframed := append(append(append([]byte(nil), first...), '\n'), script...)
	if op, js, err := DecodeUnframedInput(unframed); err != nil || op != OpReadInstance || !strings.Contains(string(js), "MSSQLSERVER") {
		t.Errorf("DecodeUnframedInput of 0.1.0's input: %s %s, %v", op, js, err)
	}
}

func TestInstanceNameCharacterMessages(t *testing.T) {
	for name, says := range map[string]string{
		"A\x7f":       "is not allowed",
		"Aé":          "non-ASCII",
		"mssqlserver": "",
		"MSSQLSERVER": "",
	} {
		err := ValidateInstanceName(name)
		if says == "" {
			if err != nil {
				t.Errorf("%q: %v", name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%q: %v; want it to say %q", name, err, says)
		}
	}
}
