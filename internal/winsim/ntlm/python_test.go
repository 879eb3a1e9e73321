package ntlm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/pytest"
)

// pythonClient drives ntlm_auth's NtlmContext, the NTLM library of Debian's
// python3-winrm (requests_ntlm passes "" for no domain; pywinrm seals HTTP messages
// with its session_security), over a
// line protocol of base64 tokens on stdin/stdout.
const pythonClient = `
import sys, base64
from ntlm_auth.ntlm import NtlmContext
user, password, domain, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ctx = NtlmContext(user, password, domain, "PYCLIENT", ntlm_compatibility=3)
def send(b):
    sys.stdout.write(base64.b64encode(b).decode() + "\n"); sys.stdout.flush()
def recv():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return base64.b64decode(line)
send(ctx.step())
send(ctx.step(recv()))
for i in range(rounds):
    sealed, sig = ctx._session_security.wrap(("request %d from pywinrm" % i).encode())
    send(sig); send(sealed)
    sig, sealed = recv(), recv()
    send(ctx._session_security.unwrap(sealed, sig))
`

type pyClient struct {
	t    *testing.T
	in   io.WriteCloser
	out  *bufio.Reader
	cmd  *exec.Cmd
	errb *bytes.Buffer
}

func startPython(t *testing.T, user, password, domain string, rounds int) *pyClient {
	python := pytest.PythonWith(t, "ntlm_auth", "python3-winrm")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, python, "-c", pythonClient, user, password, domain, fmt.Sprint(rounds))
	cmd.Env = append(os.Environ(), pytest.LegacyOpenSSLEnv(t))
	errb := &bytes.Buffer{}
	cmd.Stderr = errb
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", python, err)
	}
	p := &pyClient{t: t, in: in, out: bufio.NewReader(out), cmd: cmd, errb: errb}
	t.Cleanup(func() {
		_ = in.Close()
		if err := cmd.Wait(); err != nil && !t.Failed() {
			t.Errorf("python client: %v\n%s", err, errb)
		}
	})
	return p
}

func (p *pyClient) recv() []byte {
	p.t.Helper()
	line, err := p.out.ReadString('\n')
	if err != nil {
		_ = p.in.Close()
		_ = p.cmd.Wait()
		p.t.Fatalf("reading from the python client: %v\nstderr:\n%s", err, p.errb)
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(line))
	if err != nil {
		p.t.Fatalf("python client sent %q: %v", line, err)
	}
	return b
}

func (p *pyClient) send(b []byte) {
	p.t.Helper()
	if _, err := fmt.Fprintln(p.in, base64.StdEncoding.EncodeToString(b)); err != nil {
		p.t.Fatalf("writing to the python client: %v", err)
	}
}

func TestPywinrmNTLMSealsBothWays(t *testing.T) {
	const rounds = 3
	py := startPython(t, "administrator", testPassword, "", rounds)
	sess := testServer().NewSession()
	chal, err := sess.Challenge(py.recv())
	if err != nil {
		t.Fatalf("Challenge(pywinrm negotiate): %v", err)
	}
	py.send(chal)
	id, err := sess.Authenticate(py.recv())
	if err != nil {
		t.Fatalf("Authenticate(pywinrm): %v", err)
	}
	if id.User != "administrator" || id.Workstation != "PYCLIENT" {
		t.Errorf("identity = %+v, want user administrator from PYCLIENT", id)
	}
	if !sess.Sealing() {
		t.Fatal("Sealing() = false after pywinrm's NTLM logon")
	}
	for i := range rounds {
		sig, sealed := py.recv(), py.recv()
		got, err := sess.Unseal(sig, sealed)
		if err != nil {
			t.Fatalf("request %d: Unseal: %v", i, err)
		}
		if want := fmt.Sprintf("request %d from pywinrm", i); string(got) != want {
			t.Fatalf("request %d: Unseal = %q, want %q", i, got, want)
		}
		reply := fmt.Sprintf("reply %d from SQL01", i)
		sig, sealed = sess.Seal([]byte(reply))
		py.send(sig)
		py.send(sealed)
		if got := string(py.recv()); got != reply {
			t.Fatalf("reply %d: pywinrm read %q, want %q", i, got, reply)
		}
	}
}

func TestPywinrmNTLMWrongPasswordFails(t *testing.T) {
	py := startPython(t, "Administrator", "not the password", "SQL01", 0)
	sess := testServer().NewSession()
	chal, err := sess.Challenge(py.recv())
	if err != nil {
		t.Fatal(err)
	}
	py.send(chal)
	if _, err := sess.Authenticate(py.recv()); !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("pywinrm with a wrong password: err = %v, want ErrAuthFailed", err)
	}
}
