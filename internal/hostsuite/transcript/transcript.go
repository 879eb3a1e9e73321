// Package transcript records what a Windows host answered to the real-host suite
// (internal/hostsuite): each operation's raw answer, each SQL query's columns, types
// and rows, and each error shape met on the way. A transcript is written as JSON,
// redacted (Redact), into testdata/realhost/ at the repository root, where the
// simulator's replay test (internal/winsim/replay_test.go) holds the simulator to it:
// a real host's answer overrules what the simulator believes
// (testdata/realhost/README.md).
//
// The package never imports the simulator: the suite that records runs against
// Windows as well.
package transcript

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// FormatVersion is the transcript format this package writes and reads.
const FormatVersion = 1

// Sources of a transcript.
const (
	// SourceReal: recorded by the suite against a Windows host.
	SourceReal = "real"
	// SourceSynthetic: written by hand to the shape Windows is documented to give,
	// until a real transcript replaces it.
	SourceSynthetic = "synthetic"
	// SourceSimulator: recorded by the suite's rehearsal against the simulator; it
	// proves the recorder, never Windows.
	SourceSimulator = "simulator"
)

// Kinds of an entry.
const (
	KindOperation = "operation" // a contract operation's raw answer
	KindSQL       = "sql"       // a SQL batch's columns, types and rows, or its error
	KindError     = "error"     // an error answer met on the way (HTTP, WinRM, TDS)
)

// Transcript is one recorded run of the suite against one host.
type Transcript struct {
	Version int `json:"version"`
	// Source is SourceReal, SourceSynthetic or SourceSimulator.
	Source string `json:"source"`
	// Host is the host's name, redacted ("host-1").
	Host string `json:"host"`
	// Recorded is the date of the run, YYYY-MM-DD (UTC).
	Recorded string `json:"recorded"`
	// Windows, PowerShell and SQLVersion are the versions the host reported, e.g.
	// "10.0.20348" (Windows Server 2022), "5.1.20348.2849", "16.0.4135.4".
	Windows    string `json:"windows,omitempty"`
	PowerShell string `json:"powershell,omitempty"`
	SQLVersion string `json:"sql_version,omitempty"`
	// Facts are what the suite learnt about the host, which a replay needs to build a
	// simulated host like it.
	Facts Facts `json:"facts"`
	// Note says where a synthetic transcript's shapes come from, or anything a
	// reader of a real one should know.
	Note    string  `json:"note,omitempty"`
	Entries []Entry `json:"entries"`
}

// Facts describe the recorded host as far as its answers depend on it.
type Facts struct {
	// Instance is the SQL Server instance the suite worked on (MSSQLSERVER or a
	// named instance's name). Instance names are not redacted.
	Instance string `json:"instance"`
	// Edition is SERVERPROPERTY('Edition'), e.g. "Developer Edition (64-bit)".
	Edition string `json:"edition,omitempty"`
	// Auth is the WinRM logon mechanism used (kerberos, ntlm, basic); HTTPS whether
	// the listener was HTTPS.
	Auth  string `json:"auth,omitempty"`
	HTTPS bool   `json:"https,omitempty"`
	// LanguageMode is PowerShell's language mode for the WinRM user
	// (FullLanguage, ConstrainedLanguage).
	LanguageMode string `json:"language_mode,omitempty"`
	// SQLLogin is what the suite's SQL login may see; nil when no SQL login was used.
	SQLLogin *LoginFacts `json:"sql_login,omitempty"`
	// HADREnabled is SERVERPROPERTY('IsHadrEnabled'); nil when unknown.
	HADREnabled *bool `json:"hadr_enabled,omitempty"`
	// Clustered: the instance is a failover cluster instance.
	Clustered bool `json:"clustered,omitempty"`
	// Dependents are the services that depend on the Engine (SQLSERVERAGENT, ...).
	Dependents []string `json:"dependents,omitempty"`
	// ASRRuleAction is the action of Defender's attack surface reduction rule
	// "Block process creations originating from PSExec and WMI commands"
	// (d1e49aac-8f56-4280-b9ba-993a6d77406c): 0 off, 1 block, 2 audit, 6 warn;
	// nil when unknown or not configured.
	ASRRuleAction *int `json:"asr_rule_action,omitempty"`
	// AllowUnencrypted is the WinRM service's AllowUnencrypted; nil when unknown.
	AllowUnencrypted *bool `json:"allow_unencrypted,omitempty"`
}

// LoginFacts are the suite's SQL login's permissions.
type LoginFacts struct {
	ViewServerState   bool `json:"view_server_state"`
	ViewAnyDefinition bool `json:"view_any_definition"`
	Sysadmin          bool `json:"sysadmin"`
}

// Entry is one answer the host gave.
type Entry struct {
	// Stage is the suite's stage that met the answer (preflight, read, change,
	// restart, seed).
	Stage string `json:"stage"`
	// Kind is KindOperation, KindSQL or KindError.
	Kind string `json:"kind"`
	// Operation is the contract operation (KindOperation), or for KindError the step
	// that met the error: a contract operation, or a probe such as ProbeClearText.
	Operation string `json:"operation,omitempty"`
	// Params are the operation's parameters as sent (no password is ever recorded).
	Params json.RawMessage `json:"params,omitempty"`
	// ExitCode is the operation's exit code (contract.Exit*).
	ExitCode int `json:"exit_code,omitempty"`
	// Stdout is what the operation printed: its JSON as printed, or a JSON string
	// holding the text when it was not JSON.
	Stdout json.RawMessage `json:"stdout,omitempty"`
	// Stderr is the operation's stderr as received (CLIXML).
	Stderr string `json:"stderr,omitempty"`
	// SQL is the batch sent (KindSQL).
	SQL string `json:"sql,omitempty"`
	// Columns, Types and Rows are the batch's result set: the column names, their
	// database type names as go-mssqldb reports them (NVARCHAR, INT, BIT,
	// DATETIMEOFFSET, SQL_VARIANT, ...) and the rows.
	Columns []string `json:"columns,omitempty"`
	Types   []string `json:"types,omitempty"`
	Rows    [][]any  `json:"rows,omitempty"`
	// Shape is the error's shape (KindError, or a KindSQL batch that failed).
	Shape *ErrorShape `json:"shape,omitempty"`
	// Error is the error's text as the client reported it.
	Error string `json:"error,omitempty"`
	// Note says what the entry shows, or where a synthetic entry's shape comes from.
	Note string `json:"note,omitempty"`
}

// ErrorShape is what tells one error answer from another, without its text.
type ErrorShape struct {
	// HTTPStatus is the WinRM listener's HTTP status (0: no HTTP answer).
	HTTPStatus int `json:"http_status,omitempty"`
	// ContentType is the answer's media type, without parameters ("" when none).
	ContentType string `json:"content_type,omitempty"`
	// SOAPFault: the body held a SOAP fault; FaultCode is its subcode or WSManFault
	// code when it did (e.g. "w:TimedOut", "2150858793").
	SOAPFault bool   `json:"soap_fault,omitempty"`
	FaultCode string `json:"fault_code,omitempty"`
	// BodyBytes is the answer body's length.
	BodyBytes int `json:"body_bytes,omitempty"`
	// Kind is the client's classification (remote.ErrorKind's name: auth,
	// unreachable, tls, timeout, protocol, script, config).
	Kind string `json:"kind,omitempty"`
	// Code is a script's ScriptError code; ExitCode its exit code.
	Code     string `json:"code,omitempty"`
	ExitCode int    `json:"exit_code,omitempty"`
	// SQLNumber, SQLClass and SQLState are a SQL Server error's number, severity and state.
	SQLNumber int `json:"sql_number,omitempty"`
	SQLClass  int `json:"sql_class,omitempty"`
	SQLState  int `json:"sql_state,omitempty"`
}

// Probes: steps the suite takes only to see how the host answers, named in an error
// entry's Operation.
const (
	// ProbeClearText sends one WS-Management request over HTTP with an NTLM logon
	// but an unsealed (clear-text) body, which a host with AllowUnencrypted false
	// refuses.
	ProbeClearText = "winrm_cleartext_body"
	// ProbeSQLLogin logs on to SQL Server with the suite's login.
	ProbeSQLLogin = "sql_login"
)

// Validate checks what a replay relies on.
func (t *Transcript) Validate() error {
	var errs []error
	if t.Version != FormatVersion {
		errs = append(errs, fmt.Errorf("version %d: this package reads transcript format %d", t.Version, FormatVersion))
	}
	switch t.Source {
	case SourceReal, SourceSynthetic, SourceSimulator:
	default:
		errs = append(errs, fmt.Errorf("source %q is not %q, %q or %q", t.Source, SourceReal, SourceSynthetic, SourceSimulator))
	}
	if t.Facts.Instance == "" {
		errs = append(errs, errors.New(`facts.instance is empty: name the instance the suite worked on`))
	}
	for i, e := range t.Entries {
		where := fmt.Sprintf("entries[%d] (%s %s)", i, e.Kind, e.Operation)
		switch e.Kind {
		case KindOperation:
			if e.Operation == "" || len(e.Stdout) == 0 && e.Stderr == "" {
				errs = append(errs, fmt.Errorf("%s: an operation entry needs operation and stdout or stderr", where))
			}
		case KindSQL:
			if e.SQL == "" {
				errs = append(errs, fmt.Errorf("%s: a sql entry needs its sql", where))
			}
			if e.Shape == nil && len(e.Types) != len(e.Columns) {
				errs = append(errs, fmt.Errorf("%s: %d columns but %d types", where, len(e.Columns), len(e.Types)))
			}
		case KindError:
			if e.Operation == "" || e.Shape == nil {
				errs = append(errs, fmt.Errorf("%s: an error entry needs operation (the step) and shape", where))
			}
		default:
			errs = append(errs, fmt.Errorf("entries[%d]: kind %q is not %q, %q or %q", i, e.Kind, KindOperation, KindSQL, KindError))
		}
	}
	return errors.Join(errs...)
}

// Load reads and validates one transcript file.
func Load(path string) (*Transcript, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var t Transcript
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("transcript %s: %w", path, err)
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("transcript %s: %w", path, err)
	}
	return &t, nil
}

// LoadDir reads every *.json transcript of dir, in name order.
func LoadDir(dir string) (map[string]*Transcript, []string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(paths)
	out := map[string]*Transcript{}
	for _, p := range paths {
		t, err := Load(p)
		if err != nil {
			return nil, nil, err
		}
		out[p] = t
	}
	return out, paths, nil
}

// Marshal is the transcript's file form: indented JSON, HTML characters unescaped.
func Marshal(t *Transcript) ([]byte, error) {
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(t); err != nil {
		return nil, err
	}
	return []byte(sb.String()), nil
}
