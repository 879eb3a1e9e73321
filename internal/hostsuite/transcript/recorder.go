package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
)

// Recorder collects one run's transcript. The suite calls it for each answer it
// gets; WriteFile redacts and writes the whole. A nil *Recorder records nothing, so
// the suite can call it whether or not recording was asked for. It is safe for
// concurrent use.
type Recorder struct {
	mu    sync.Mutex
	t     Transcript
	known Known
}

// NewRecorder starts a transcript of the given source (SourceReal against Windows,
// SourceSimulator in the rehearsal). known names what Redact must replace that no
// pattern finds: the passwords, the host name, the user names (Know adds more).
func NewRecorder(source string, known Known) *Recorder {
	return &Recorder{
		t: Transcript{
			Version:  FormatVersion,
			Source:   source,
			Recorded: time.Now().UTC().Format(time.DateOnly),
			Entries:  []Entry{},
		},
		known: known.clone(),
	}
}

// Know adds names and secrets for Redact, e.g. a computer name the host reported.
func (r *Recorder) Know(k Known) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.known = r.known.merge(k)
}

// Describe sets the transcript's header (Host, Windows, PowerShell, SQLVersion,
// Facts, Note) as the suite learns them.
func (r *Recorder) Describe(set func(t *Transcript)) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	set(&r.t)
}

// Operation records one operation's raw answer: its parameters, exit code, stdout
// and stderr, as the host sent them. Parameters named like a password are dropped.
func (r *Recorder) Operation(stage, op string, params any, exitCode int, stdout, stderr []byte) {
	if r == nil {
		return
	}
	e := Entry{Stage: stage, Kind: KindOperation, Operation: op, ExitCode: exitCode,
		Params: paramsJSON(params), Stdout: outputJSON(stdout), Stderr: string(stderr)}
	r.add(e)
}

// SQL records one batch: the result set's column names, database type names
// (sql.ColumnType.DatabaseTypeName) and rows, or the error it ended with.
func (r *Recorder) SQL(stage, query string, columns, types []string, rows [][]any, err error) {
	if r == nil {
		return
	}
	e := Entry{Stage: stage, Kind: KindSQL, SQL: query, Columns: columns, Types: types, Rows: rows}
	if err != nil {
		s := ShapeOf(err)
		e.Shape, e.Error = &s, err.Error()
	}
	r.add(e)
}

// Error records an error answer met at step (a contract operation, or a Probe*):
// shape as far as the suite saw it, completed from err (ShapeOf).
func (r *Recorder) Error(stage, step string, shape ErrorShape, err error) {
	if r == nil {
		return
	}
	if err != nil {
		shape = shape.merge(ShapeOf(err))
	}
	e := Entry{Stage: stage, Kind: KindError, Operation: step, Shape: &shape}
	if err != nil {
		e.Error = err.Error()
	}
	r.add(e)
}

func (r *Recorder) add(e Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.t.Entries = append(r.t.Entries, e)
}

// Transcript returns the redacted transcript recorded so far.
func (r *Recorder) Transcript() *Transcript {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return Redact(&r.t, r.known)
}

// WriteFile redacts the transcript and writes it into dir (created if needed) as
// <source>-<host>-<UTC time>.json, and returns the file's path. It refuses to write
// a file in which a secret or a known name survived redaction.
func (r *Recorder) WriteFile(dir string) (string, error) {
	if r == nil {
		return "", errors.New("no recorder: recording was not asked for")
	}
	t := r.Transcript()
	r.mu.Lock()
	known := r.known.clone()
	r.mu.Unlock()
	raw, err := Marshal(t)
	if err != nil {
		return "", fmt.Errorf("encoding the transcript: %w", err)
	}
	if left := known.survivors(raw); len(left) > 0 {
		return "", fmt.Errorf("the redacted transcript still holds %s; nothing was written (report this: Redact must replace it)", strings.Join(left, ", "))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating the transcript directory: %w", err)
	}
	name := fmt.Sprintf("%s-%s-%s.json", t.Source, fileSafe(t.Host), time.Now().UTC().Format("20060102T150405Z"))
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		return "", fmt.Errorf("writing the transcript: %w", err)
	}
	return path, nil
}

func fileSafe(s string) string {
	s = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, s)
	if s == "" {
		return "host"
	}
	return s
}

// paramsJSON encodes parameters without any field named like a password.
func paramsJSON(params any) json.RawMessage {
	if params == nil {
		return nil
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return mustJSON(fmt.Sprintf("(parameters not encodable: %v)", err))
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&tree) != nil {
		return raw
	}
	return mustJSON(dropSecrets(tree))
}

// secretKey reports a JSON key that names a secret.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"password", "passwd", "secret", "token", "credential", "keytab", "private"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

func dropSecrets(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if secretKey(k) {
				delete(t, k)
				continue
			}
			t[k] = dropSecrets(e)
		}
	case []any:
		for i, e := range t {
			t[i] = dropSecrets(e)
		}
	}
	return v
}

// outputJSON is stdout as JSON when it is JSON, else a JSON string of its text.
func outputJSON(stdout []byte) json.RawMessage {
	s := bytes.TrimSpace(bytes.TrimPrefix(stdout, []byte("\xef\xbb\xbf")))
	if len(s) == 0 {
		return nil
	}
	if json.Valid(s) {
		return append(json.RawMessage(nil), s...)
	}
	return mustJSON(string(s))
}

func mustJSON(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only the values of this package reach here: strings, numbers, maps, lists.
		panic(err)
	}
	return json.RawMessage(bytes.TrimSpace(buf.Bytes()))
}

// sqlError is what go-mssqldb's mssql.Error offers.
type sqlError interface {
	SQLErrorNumber() int32
	SQLErrorClass() uint8
	SQLErrorState() uint8
}

// ShapeOf reads an error's shape: an internal/remote error's kind, script code,
// exit code and HTTP status; a SQL Server error's number, class and state.
func ShapeOf(err error) ErrorShape {
	var s ErrorShape
	var re *remote.Error
	if errors.As(err, &re) {
		s.Kind = kindName(re.Kind)
		s.Code, s.ExitCode, s.HTTPStatus = re.Code, re.ExitCode, re.HTTPStatus
	}
	var se sqlError
	if errors.As(err, &se) {
		s.SQLNumber, s.SQLClass, s.SQLState = int(se.SQLErrorNumber()), int(se.SQLErrorClass()), int(se.SQLErrorState())
	}
	return s
}

func kindName(k remote.ErrorKind) string {
	switch k {
	case remote.KindAuth:
		return "auth"
	case remote.KindUnreachable:
		return "unreachable"
	case remote.KindTLS:
		return "tls"
	case remote.KindTimeout:
		return "timeout"
	case remote.KindProtocol:
		return "protocol"
	case remote.KindScript:
		return "script"
	case remote.KindConfig:
		return "config"
	}
	return "unknown"
}

// merge fills the fields s left empty from o.
func (s ErrorShape) merge(o ErrorShape) ErrorShape {
	if s.HTTPStatus == 0 {
		s.HTTPStatus = o.HTTPStatus
	}
	if s.Kind == "" {
		s.Kind = o.Kind
	}
	if s.Code == "" {
		s.Code = o.Code
	}
	if s.ExitCode == 0 {
		s.ExitCode = o.ExitCode
	}
	if s.SQLNumber == 0 {
		s.SQLNumber, s.SQLClass, s.SQLState = o.SQLNumber, o.SQLClass, o.SQLState
	}
	return s
}

// MediaType is a Content-Type header's media type without parameters, for
// ErrorShape.ContentType ("" when the header is empty or unreadable).
func MediaType(header string) string {
	mt, _, err := mime.ParseMediaType(header)
	if err != nil {
		return ""
	}
	return mt
}
