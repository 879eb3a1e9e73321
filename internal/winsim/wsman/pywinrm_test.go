package wsman

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/pytest"
)

// pywinrmScript runs one command with Debian's python3-winrm (pywinrm 0.3.0)
// and prints what the client parsed as JSON. Arguments come as one JSON object.
const pywinrmScript = `
import json, sys, winrm, winrm.encryption
a = json.loads(sys.argv[1])
replies = []
parse = winrm.encryption.Encryption.parse_encrypted_response
def record(self, response):
    replies.append(response.headers.get("Content-Type", ""))
    return parse(self, response)
winrm.encryption.Encryption.parse_encrypted_response = record
p = winrm.Protocol(endpoint=a["endpoint"], transport=a["transport"], username=a["user"],
    password=a["password"], server_cert_validation=a.get("validation", "validate"),
    ca_trust_path=a.get("ca"), message_encryption=a["encryption"],
    operation_timeout_sec=a.get("op_timeout", 20), read_timeout_sec=a.get("read_timeout", 30))
try:
    shell = p.open_shell()
    cid = p.run_command(shell, a["command"], a["args"])
    out, err, code = p.get_command_output(shell, cid)
    p.cleanup_command(shell, cid)
    p.close_shell(shell)
    print(json.dumps({"stdout": out.decode(), "stderr": err.decode(), "code": code,
        "encrypted": p.transport.encryption is not None,
        "sealed_replies": len([c for c in replies if c.startswith("multipart/encrypted")]),
        "replies": len(replies)}))
except Exception as e:
    print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
`

type pyResult struct {
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	Code      int    `json:"code"`
	Encrypted bool   `json:"encrypted"`
	Sealed    int    `json:"sealed_replies"` // replies in multipart/encrypted framing
	Replies   int    `json:"replies"`        // replies pywinrm parsed with encryption on
	Error     string `json:"error"`
}

// runPywinrm runs the script with a python3 that has Debian's python3-winrm and an
// OpenSSL config that enables the legacy provider, which NTLM needs for MD4.
func runPywinrm(t *testing.T, args map[string]any) pyResult {
	t.Helper()
	python := pytest.PythonWith(t, "winrm, requests_ntlm", "python3-winrm")
	dir := t.TempDir()
	env := append(os.Environ(), pytest.LegacyOpenSSLEnv(t))
	if ca, ok := args["ca"].([]byte); ok {
		path := filepath.Join(dir, "ca.pem")
		if err := os.WriteFile(path, ca, 0o600); err != nil {
			t.Fatal(err)
		}
		args["ca"] = path
	}
	argJSON, _ := json.Marshal(args)
	cmd := exec.Command(python, "-c", pywinrmScript, string(argJSON))
	cmd.Env = slices.Concat(env, []string{"NO_PROXY=*", "no_proxy=*"})
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("pywinrm script failed: %v\n%s", err, stderr)
	}
	var res pyResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("pywinrm printed %q: %v", out, err)
	}
	return res
}

func (env *testEnv) endpoint() string {
	scheme := "http"
	if env.https {
		scheme = "https"
	}
	return fmt.Sprintf("%s://127.0.0.1:%d/wsman", scheme, env.port)
}

func TestPywinrm(t *testing.T) {
	for _, tc := range []struct {
		name          string
		https         bool
		transport     string
		user          string
		encryption    string
		wantEncrypted bool
		// the endpoint accepts unencrypted HTTP (AllowUnencrypted=true)
		allowUnencrypted bool
	}{
		{name: "basic over http", transport: "basic", user: testUser, encryption: "never", allowUnencrypted: true},
		{name: "basic over https", https: true, transport: "basic", user: testUser, encryption: "auto"},
		{name: "ntlm over https", https: true, transport: "ntlm", user: testUser, encryption: "auto"},
		{name: "ntlm over http unencrypted", transport: "ntlm", user: testHost + `\` + testUser, encryption: "never", allowUnencrypted: true},
		{name: "ntlm over http sealed", transport: "ntlm", user: testUser, encryption: "always", wantEncrypted: true},
		{name: "ntlm over http auto seals", transport: "ntlm", user: testUser, encryption: "auto", wantEncrypted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Like Windows' default AllowUnencrypted=false, which HTTPS and sealing satisfy.
			env := newEnv(t, tc.https, func(c *Config) { c.AllowUnencrypted = tc.allowUnencrypted })
			args := map[string]any{
				"endpoint": env.endpoint(), "transport": tc.transport, "user": tc.user,
				"password": testPassword, "encryption": tc.encryption, "command": "exit", "args": []string{"5"},
			}
			if tc.https {
				args["ca"] = env.caPEM
			}
			res := runPywinrm(t, args)
			if res.Error != "" {
				t.Fatalf("pywinrm: %s", res.Error)
			}
			if res.Stdout != "out" || res.Stderr != "err" || res.Code != 5 {
				t.Errorf("pywinrm got stdout %q, stderr %q, exit %d; want out, err, 5", res.Stdout, res.Stderr, res.Code)
			}
			if res.Encrypted != tc.wantEncrypted {
				t.Errorf("pywinrm message encryption = %v, want %v", res.Encrypted, tc.wantEncrypted)
			}
			// Create, Command, Receive, Signal, Delete: every reply sealed.
			if tc.wantEncrypted && (res.Replies < 5 || res.Sealed != res.Replies) {
				t.Errorf("pywinrm parsed %d sealed replies of %d, want every reply (at least 5) sealed", res.Sealed, res.Replies)
			}
		})
	}
}

func TestPywinrmWrongPassword(t *testing.T) {
	for _, transport := range []string{"basic", "ntlm"} {
		t.Run(transport, func(t *testing.T) {
			env := newEnv(t, false, nil)
			res := runPywinrm(t, map[string]any{
				"endpoint": env.endpoint(), "transport": transport, "user": testUser,
				"password": "wrong", "encryption": "never", "command": "whoami", "args": []string{},
			})
			if !strings.Contains(res.Error, "InvalidCredentialsError") {
				t.Errorf("pywinrm with a wrong password: %+v, want InvalidCredentialsError", res)
			}
		})
	}
}

// A sealed Receive that times out answers a sealed TimedOut fault, which
// pywinrm must unseal and recognise to poll again.
func TestPywinrmSealedOperationTimeout(t *testing.T) {
	env := newEnv(t, false, func(c *Config) { c.AllowUnencrypted = false })
	res := runPywinrm(t, map[string]any{
		"endpoint": env.endpoint(), "transport": "ntlm", "user": testUser, "password": testPassword,
		"encryption": "always", "command": "late", "args": []string{}, "op_timeout": 1, "read_timeout": 10,
	})
	if res.Error != "" || res.Stdout != "late output" || res.Code != 0 {
		t.Errorf("pywinrm late: %+v, want the output that came after a Receive timed out", res)
	}
	select {
	case <-env.timedOut:
	default:
		t.Error("no Receive timed out, the test proves nothing")
	}
}

func TestPywinrmUnencryptedRefused(t *testing.T) {
	for _, tc := range []struct{ transport, want string }{
		// What Ansible users see when AllowUnencrypted is false: Basic credentials
		// refused, and an unsealed NTLM body answered HTTP 500 without a fault
		// (pywinrm issues #129 and #208).
		{"basic", "InvalidCredentialsError"},
		{"ntlm", "Bad HTTP response returned from server. Code 500"},
	} {
		t.Run(tc.transport, func(t *testing.T) {
			env := newEnv(t, false, func(c *Config) { c.AllowUnencrypted = false })
			res := runPywinrm(t, map[string]any{
				"endpoint": env.endpoint(), "transport": tc.transport, "user": testUser,
				"password": testPassword, "encryption": "never", "command": "whoami", "args": []string{},
			})
			if !strings.Contains(res.Error, tc.want) {
				t.Errorf("pywinrm %s over HTTP without encryption, AllowUnencrypted=false: %+v, want %s", tc.transport, res, tc.want)
			}
			select {
			case cmd := <-env.started:
				t.Errorf("an unencrypted request ran a command: %q", cmd)
			default:
			}
		})
	}
}
