// Package recordings reads the WinRS answers real Windows hosts gave, recorded by
// other WinRM clients' test suites, from ../shared/reference/winrm-replay-recordings
// beside the repository (its SOURCES.md says where each comes from and under which
// license; they are never copied into this repository). Tests replay them to the
// provider's client (internal/remote) and compare the simulator's answers to the
// same requests (internal/winsim/wsman) by their Shape.
package recordings

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Exchange is one request and the host's answer to it.
type Exchange struct {
	Request  string
	Response string
	// Status is the answer's HTTP status: 500 for a fault (transport_error), else 200.
	Status int
}

// Action is the request's WS-Addressing Action, its last segment (Create,
// Command, Receive ...).
func (e Exchange) Action() string { return action(e.Request) }

// Dir is the recordings' folder, found from the working directory (a package's
// folder in tests) upward to the repository root (go.mod); ok is false when it is
// absent.
func Dir() (dir string, ok bool) {
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			dir = filepath.Join(d, "..", "shared", "reference", "winrm-replay-recordings")
			st, err := os.Stat(dir)
			return dir, err == nil && st.IsDir()
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}

// Path is the recorded file name (e.g. "pypsrp/test_winrs_standard.yml"), or skips
// the test with "skipped: recordings not found" where the folder is absent.
func Path(t testing.TB, name string) string {
	t.Helper()
	dir, ok := Dir()
	if !ok {
		t.Skipf("skipped: recordings not found (%s)", dir)
	}
	return filepath.Join(dir, filepath.FromSlash(name))
}

// Read is a recorded file's text (a single message, e.g. masterzen-winrm/*.xml).
func Read(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(Path(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Load reads one of pypsrp's recorded exchanges (pypsrp/*.yml).
func Load(t testing.TB, name string) []Exchange {
	t.Helper()
	var doc struct {
		Messages []struct {
			Request        string `yaml:"request"`
			Response       string `yaml:"response"`
			TransportError *struct {
				Code int `yaml:"code"`
			} `yaml:"transport_error"`
		} `yaml:"messages"`
	}
	if err := yaml.Unmarshal([]byte(Read(t, name)), &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out []Exchange
	for _, m := range doc.Messages {
		e := Exchange{Request: m.Request, Response: m.Response, Status: 200}
		if m.TransportError != nil {
			e.Status = m.TransportError.Code
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		t.Fatalf("%s holds no exchange", name)
	}
	return out
}

// WinRS lists pypsrp's recordings of the cmd shell (WinRS), as opposed to its
// PowerShell remoting (PSRP) ones.
var WinRS = []string{
	"pypsrp/test_client_execute_cmd.yml",
	"pypsrp/test_winrs_bad_cmd_id.yml",
	"pypsrp/test_winrs_fail_poll_process.yml",
	"pypsrp/test_winrs_no_cmd_shell.yml",
	"pypsrp/test_winrs_operation_timeout.yml",
	"pypsrp/test_winrs_send.yml",
	"pypsrp/test_winrs_standard.yml",
	"pypsrp/test_winrs_stderr_rc.yml",
	"pypsrp/test_winrs_unicode.yml",
}

var actionRe = regexp.MustCompile(`<(?:\w+:)?Action[^>]*>([^<]*)</`)

func action(msg string) string {
	m := actionRe.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	a := strings.TrimSpace(m[1])
	return a[strings.LastIndex(a, "/")+1:]
}

// Shape is the structure of a message's body, one line per element in document
// order: its path of local names and what a client reads of it, without the
// values that differ between hosts and runs (ids, addresses, texts, data):
// a stream's Name and End and whether it carries data, a CommandState's State, an
// ExitCode, a fault's code and subcode values, its FaultDetail, its WSManFault
// Code and its ProviderFault's provider.
func Shape(msg string) ([]string, error) {
	d := xml.NewDecoder(strings.NewReader(msg))
	var path []string
	var out []string
	inBody := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			path = append(path, t.Name.Local)
			if t.Name.Local == "Body" {
				inBody = true
				continue
			}
			if !inBody {
				continue
			}
			line := strings.Join(path[2:], "/")
			for _, a := range t.Attr {
				switch a.Name.Local {
				case "Name", "End", "provider":
					line += " " + a.Name.Local + "=" + strings.ToLower(a.Value)
				case "State":
					line += " State=" + a.Value[strings.LastIndex(a.Value, "/")+1:]
				case "Code":
					if t.Name.Local == "WSManFault" {
						line += " Code=" + a.Value
					}
				case "CommandId":
					line += " CommandId"
				}
			}
			out = append(out, line)
		case xml.EndElement:
			if t.Name.Local == "Body" {
				inBody = false
			}
			path = path[:len(path)-1]
		case xml.CharData:
			s := strings.TrimSpace(string(t))
			if !inBody || len(path) == 0 || len(out) == 0 {
				continue
			}
			switch path[len(path)-1] {
			case "Value", "FaultDetail", "ExitCode":
				out[len(out)-1] += " = " + s
			case "Stream":
				if s != "" {
					out[len(out)-1] += " (data)"
				}
			}
		}
	}
}
