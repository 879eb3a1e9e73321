package contract

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/utf16le"
)

//go:embed scripts/*.ps1
var scriptFS embed.FS

// scriptParts says which library files each operation's script is made of, in order.
var scriptParts = map[Operation][]string{
	OpReadInstance:    {"common.ps1", "lsa.ps1", "instance_report.ps1", "read_instance.ps1"},
	OpReadHost:        {"common.ps1", "lsa.ps1", "instance_report.ps1", "read_host.ps1"},
	OpSetRight:        {"common.ps1", "lsa.ps1", "event_log.ps1", "right_change.ps1", "instance_report.ps1", "set_right.ps1"},
	OpRestartInstance: {"common.ps1", "lsa.ps1", "event_log.ps1", "right_change.ps1", "instance_report.ps1", "restart_common.ps1", "restart_worker.ps1", "restart_guard.ps1", "restart_instance.ps1"},
	OpRestartStatus:   {"common.ps1", "restart_common.ps1", "restart_status.ps1"},
	OpReadCluster:     {"common.ps1", "cluster_common.ps1", "read_cluster.ps1"},
	OpClusterMove:     {"common.ps1", "cluster_common.ps1", "restart_guard.ps1", "cluster_guard.ps1", "cluster_move.ps1"},
	OpClusterRestart:  {"common.ps1", "cluster_common.ps1", "restart_guard.ps1", "cluster_guard.ps1", "cluster_restart.ps1"},
}

const headerPrefix = "# mssqlifi-operation: "

func mustRead(name string) string {
	b, err := scriptFS.ReadFile("scripts/" + name)
	if err != nil {
		panic(fmt.Sprintf("contract: embedded script %s missing: %v", name, err))
	}
	return strings.ReplaceAll(string(b), "\r\n", "\n")
}

// scripts holds each operation's composed script: the embedded files never change,
// so each is composed once per process rather than on every operation.
var scripts sync.Map // Operation → string

// Script returns the whole PowerShell text of one operation, as sent on stdin.
func Script(op Operation) (string, error) {
	if s, ok := scripts.Load(op); ok {
		if text, ok := s.(string); ok {
			return text, nil
		}
	}
	parts, ok := scriptParts[op]
	if !ok {
		return "", fmt.Errorf("unknown operation %q", op)
	}
	s := compose(op, parts)
	scripts.Store(op, s)
	return s, nil
}

// compose joins the header line and the library files of op.
func compose(op Operation, parts []string) string {
	var sb strings.Builder
	sb.WriteString(headerPrefix + string(op) + "\n")
	for _, p := range parts {
		sb.WriteString(mustRead(p))
		if !strings.HasSuffix(sb.String(), "\n") {
			sb.WriteString("\n")
		}
	}
	return sb.String()
}

// Bootstrap returns the bootstrap script that runs on the command line.
func Bootstrap() string { return mustRead("bootstrap.ps1") }

// Shell is the program the bootstrap runs in.
const Shell = "powershell.exe"

// CommandArgs returns the arguments of powershell.exe: the bootstrap as
// -EncodedCommand (base64 of UTF-16LE), well under cmd.exe's 8191-character limit.
func CommandArgs() []string {
	return []string{"-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-EncodedCommand", EncodeCommand(Bootstrap())}
}

// CommandLine is Shell and CommandArgs joined by spaces, as WinRM's Command carries it.
func CommandLine() string {
	return Shell + " " + strings.Join(CommandArgs(), " ")
}

// EncodeCommand encodes a script for powershell.exe -EncodedCommand.
func EncodeCommand(script string) string {
	return base64.StdEncoding.EncodeToString(utf16le.Encode(script))
}

// DecodeCommand reverses EncodeCommand.
func DecodeCommand(encoded string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return "", fmt.Errorf("encoded command is not base64: %w", err)
	}
	script, err := utf16le.Decode(raw)
	if err != nil {
		return "", fmt.Errorf("encoded command is not UTF-16LE: %w", err)
	}
	return script, nil
}

// EncodeInput builds the stdin of one operation, framed so that the bootstrap knows
// where it ends without waiting for an end-of-input: a line of base64 JSON
// parameters, a line with the number of lines of the script, then the script (every
// line ending in "\n"). A console-mode stdin on Windows never reports end-of-input
// (design/winrm-stdin-and-cost-model.md), so nothing may wait for one.
func EncodeInput(op Operation, params any) ([]byte, error) {
	script, err := Script(op)
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encoding %s parameters: %w", op, err)
	}
	var b bytes.Buffer
	b.WriteString(base64.StdEncoding.EncodeToString(js))
	b.WriteString("\n")
	b.WriteString(strconv.Itoa(strings.Count(script, "\n")))
	b.WriteString("\n")
	b.WriteString(script)
	return b.Bytes(), nil
}

// MaxScriptLines bounds the line count a framed input may announce.
const MaxScriptLines = 100000

// InputError is framed input the bootstrap cannot read; Stage names the step that
// failed as the bootstrap would meet it: "params" (no first line), "count" (the
// second line is missing or not a number) or "script" (stdin ended before the
// announced lines).
type InputError struct {
	Stage   string
	Detail  string
	Missing bool   // the line was missing (stdin ended), not malformed
	Value   string // the malformed line, trimmed
}

func (e *InputError) Error() string { return "framed stdin, " + e.Stage + ": " + e.Detail }

// ReadInput reads one framed input from r as the bootstrap does: the parameters
// line, the count line, then exactly that many lines. It never reads past the frame
// or waits for end-of-input, and returns the bytes of the frame (line ends as sent).
func ReadInput(r io.Reader) ([]byte, error) {
	br := bufio.NewReader(r)
	var frame bytes.Buffer
	line := func() (string, bool, error) {
		s, err := br.ReadString('\n')
		frame.WriteString(s)
		if err == io.EOF {
			return s, s != "", nil
		}
		return s, true, err
	}
	if _, ok, err := line(); err != nil || !ok {
		return frame.Bytes(), inputErr("params", "stdin ended before the parameters line", err)
	}
	countLine, ok, err := line()
	if err != nil || !ok {
		return frame.Bytes(), inputErr("count", "stdin ended before the line count", err)
	}
	n, cerr := strconv.Atoi(strings.TrimSpace(countLine))
	if cerr != nil || n < 0 || n > MaxScriptLines {
		return frame.Bytes(), &InputError{Stage: "count", Value: strings.TrimSpace(countLine), Detail: fmt.Sprintf("the line count %q is not a number of lines", strings.TrimSpace(countLine))}
	}
	for i := 0; i < n; i++ {
		if _, ok, err := line(); err != nil || !ok {
			return frame.Bytes(), inputErr("script", fmt.Sprintf("stdin ended after %d of %d script lines", i, n), err)
		}
	}
	return frame.Bytes(), nil
}

func inputErr(stage, detail string, err error) error {
	ie := &InputError{Stage: stage, Detail: detail, Missing: err == nil}
	if err != nil {
		return fmt.Errorf("%w: %w", ie, err)
	}
	return ie
}

// ErrUnknownScript means stdin did not carry one of this contract's scripts verbatim.
var ErrUnknownScript = errors.New("stdin does not carry a known mssqlifi operation script")

// DecodeInput splits an operation's framed stdin (EncodeInput) into its operation and
// its JSON parameters. It accepts only a script identical to Script(op) for the
// operation its header names; anything else is ErrUnknownScript.
func DecodeInput(stdin []byte) (Operation, json.RawMessage, error) {
	js, rest, err := decodeParamsLine(stdin)
	if err != nil {
		return "", nil, err
	}
	countLine, script, ok := strings.Cut(rest, "\n")
	if !ok {
		return "", nil, ErrUnknownScript
	}
	n, err := strconv.Atoi(strings.TrimSpace(countLine))
	if err != nil || n != strings.Count(script, "\n") {
		return "", nil, fmt.Errorf("%w: the line count %q does not match the script", ErrUnknownScript, strings.TrimSpace(countLine))
	}
	return decodeScript(script, js)
}

// DecodeUnframedInput decodes the input of the bootstrap of 0.1.0, which read stdin
// to its end: base64 JSON parameters, a newline, the script. The simulator models
// that bootstrap to show why it hangs on Windows in console mode.
func DecodeUnframedInput(stdin []byte) (Operation, json.RawMessage, error) {
	js, script, err := decodeParamsLine(stdin)
	if err != nil {
		return "", nil, err
	}
	return decodeScript(script, js)
}

// decodeParamsLine reads the first line of an operation's stdin, base64 of the JSON
// parameters, and returns them and the rest with CRLF turned into LF.
func decodeParamsLine(stdin []byte) (js []byte, rest string, err error) {
	s := strings.ReplaceAll(string(stdin), "\r\n", "\n")
	first, rest, ok := strings.Cut(s, "\n")
	if !ok {
		return nil, "", ErrUnknownScript
	}
	js, err = base64.StdEncoding.DecodeString(strings.TrimSpace(first))
	if err != nil {
		return nil, "", fmt.Errorf("%w: parameters are not base64: %v", ErrUnknownScript, err)
	}
	return js, rest, nil
}

func decodeScript(script string, js []byte) (Operation, json.RawMessage, error) {
	first, _, _ := strings.Cut(script, "\n")
	name, ok := strings.CutPrefix(first, headerPrefix)
	if !ok {
		return "", nil, ErrUnknownScript
	}
	op := Operation(strings.TrimSpace(name))
	want, err := Script(op)
	if err != nil || want != script {
		return "", nil, ErrUnknownScript
	}
	if !json.Valid(js) {
		return "", nil, fmt.Errorf("%w: parameters are not JSON", ErrUnknownScript)
	}
	return op, json.RawMessage(js), nil
}
