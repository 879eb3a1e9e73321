package winsim_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/pytest"
)

// Clients we did not write: pywinrm (Debian python3-winrm) and pytds (python3-tds)
// / tsql (freetds-bin), against the whole simulator.

// pywinrmScript runs one contract operation the way the provider does: powershell.exe
// with the bootstrap, then the input on stdin. pywinrm 0.3.0 has no API for stdin, so
// the script sends the WS-Management Send message itself, as later pywinrm versions
// do in send_command_input.
const pywinrmScript = `
import sys, json, base64, xmltodict
from winrm.protocol import Protocol
url, user, password, ca, command, args, infile = sys.argv[1:8]
p = Protocol(endpoint=url, transport="ntlm", username=user, password=password,
             server_cert_validation="validate", ca_trust_path=ca)
shell = p.open_shell()
cmd = p.run_command(shell, command, [args])
data = open(infile, "rb").read()
req = {"env:Envelope": p._get_soap_header(
    resource_uri="http://schemas.microsoft.com/wbem/wsman/1/windows/shell/cmd",
    action="http://schemas.microsoft.com/wbem/wsman/1/windows/shell/Send",
    shell_id=shell)}
req["env:Envelope"].setdefault("env:Body", {})["rsp:Send"] = {"rsp:Stream": {
    "@Name": "stdin", "@CommandId": cmd, "@End": "true",
    "#text": base64.b64encode(data).decode()}}
p.send_message(xmltodict.unparse(req))
out, err, code = p.get_command_output(shell, cmd)
p.cleanup_command(shell, cmd)
p.close_shell(shell)
print(json.dumps({"code": code, "stdout": out.decode(), "stderr": err.decode()}))
`

func TestPywinrmNTLMOverVerifiedHTTPS(t *testing.T) {
	sim := startFleet(t)
	pywinrmReadInstance(t, sim, "https://"+hostInfo(t, sim, "sql01").WinRMHTTPS+"/wsman")
}

// pywinrm's default message_encryption ("auto") seals NTLM over HTTP, which sql01
// demands with Windows' default AllowUnencrypted=false.
func TestPywinrmNTLMEncryptedOverHTTP(t *testing.T) {
	sim := startFleet(t)
	pywinrmReadInstance(t, sim, "http://"+hostInfo(t, sim, "sql01").WinRM+"/wsman")
}

// pywinrmReadInstance runs read_instance REPORTING on sql01 through pywinrm at url.
func pywinrmReadInstance(t *testing.T, sim *winsim.Sim, url string) {
	t.Helper()
	python := pytest.PythonWith(t, "winrm", "python3-winrm")
	dir := t.TempDir()
	input, err := contract.EncodeInput(contract.OpReadInstance, contract.ReadInstanceParams{Instance: "REPORTING", Right: contract.RightManageVolume})
	if err != nil {
		t.Fatal(err)
	}
	infile := filepath.Join(dir, "stdin")
	// pywinrm's run_command(shell, "powershell.exe", [args]) sends the program as
	// rsp:Command and the arguments as one space-joined rsp:Arguments element, where
	// masterzen sends the whole line as rsp:Command: WinRS joins both into one command
	// line, and the host must start the same process either way.
	args := strings.Join(contract.CommandArgs(), " ")
	if err := os.WriteFile(infile, input, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-c", pywinrmScript,
		url, adminUser, adminPassword, sim.Info().CACert, contract.Shell, args, infile)
	cmd.Env = append(os.Environ(), pytest.LegacyOpenSSLEnv(t))
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("pywinrm: %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	var res struct {
		Code           int
		Stdout, Stderr string
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("pywinrm printed %q: %v", out, err)
	}
	if res.Code != 0 {
		t.Fatalf("read_instance through pywinrm exited %d: %s %s", res.Code, res.Stdout, res.Stderr)
	}
	var r contract.ReadInstanceResult
	if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil {
		t.Fatalf("read_instance printed %q: %v", res.Stdout, err)
	}
	if !r.Found || r.ServiceName != "MSSQL$REPORTING" || !strings.HasPrefix(r.Version, "15.0.") {
		t.Errorf("read_instance REPORTING via pywinrm: found %v service %q version %q; want MSSQL$REPORTING 15.0.x", r.Found, r.ServiceName, r.Version)
	}
	audit, _ := sim.Host("sql01")
	if entries := audit.Audit(); len(entries) != 1 || entries[0].Operation != "read_instance" {
		t.Errorf("audit after pywinrm: %+v; want one read_instance", entries)
	}
}

const pytdsScript = `
import sys, json, pytds
host, port, user, password, query = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
with pytds.connect(server=host, port=port, user=user, password=password, database="master", autocommit=True) as conn:
    with conn.cursor() as cur:
        cur.execute(query)
        cols = [d[0] for d in cur.description]
        print(json.dumps([dict(zip(cols, row)) for row in cur.fetchall()]))
`

func TestPytdsServerProperties(t *testing.T) {
	python := pytest.PythonWith(t, "pytds", "python3-tds")
	sim := startFleet(t)
	for _, tc := range []struct {
		instance, version string
		name              any
	}{
		{"MSSQLSERVER", "16.0.4135.4", nil},
		{"REPORTING", "15.0.4355.3", "REPORTING"},
	} {
		host, port, _ := net.SplitHostPort(sqlAddr(t, sim, "sql01", tc.instance))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, python, "-c", pytdsScript, host, port, sqlUser, sqlPassword, contract.QueryServerProperties).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("pytds on %s: %v\n%s", tc.instance, err, out)
		}
		var rows []map[string]any
		if err := json.Unmarshal(out, &rows); err != nil || len(rows) != 1 {
			t.Fatalf("pytds printed %q (%v); want one row", out, err)
		}
		row := rows[0]
		if row["product_version"] != tc.version || row["is_clustered"] != float64(0) || row["instance_name"] != tc.name {
			t.Errorf("%s: SERVERPROPERTY row %v; want version %s, not clustered, instance_name %v", tc.instance, row, tc.version, tc.name)
		}
	}
}

// requireTsql returns the path of FreeTDS's tsql, or skips the test without it.
func requireTsql(t *testing.T) string {
	t.Helper()
	tsql, err := exec.LookPath("tsql")
	if err != nil {
		t.Skip("tsql is not installed (Debian package freetds-bin)")
	}
	return tsql
}

// runTsql runs tsql over TDS 7.4 against the SQL Server at addr as the fleet's SQL
// login, sending each batch followed by "go", then "exit".
func runTsql(t *testing.T, tsql, addr string, batches ...string) ([]byte, error) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "freetds.conf")
	if err := os.WriteFile(conf, []byte("[global]\n\ttds version = 7.4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var input strings.Builder
	for _, b := range batches {
		input.WriteString(b + "\ngo\n")
	}
	input.WriteString("exit\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tsql, "-H", host, "-p", port, "-U", sqlUser, "-P", sqlPassword)
	cmd.Stdin = strings.NewReader(input.String())
	cmd.Env = append(os.Environ(), "FREETDSCONF="+conf, "TDSVER=7.4")
	return cmd.CombinedOutput()
}

func TestTsqlServerServices(t *testing.T) {
	tsql := requireTsql(t)
	sim := startFleet(t)
	out, err := runTsql(t, tsql, sqlAddr(t, sim, "sql02", "MSSQLSERVER"), contract.QueryServerServices)
	if err != nil {
		t.Fatalf("tsql: %v\n%s", err, out)
	}
	// sql02's Engine runs as CONTOSO\sqlsvc, an Administrators member: IFI is on
	// from the first start without any grant.
	var engine string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "SQL Server (MSSQLSERVER)") {
			engine = line
		}
	}
	if !strings.Contains(engine, `CONTOSO\sqlsvc`) || !strings.HasSuffix(strings.TrimSpace(engine), "\tY") {
		t.Errorf("tsql Engine row %q; want CONTOSO\\sqlsvc with IFI Y\nfull output:\n%s", engine, out)
	}
}

// TestWinsimBinary builds cmd/winsim, runs it on the example, and drives it as a
// user would: read the JSON line, use the control plane, stop it with SIGTERM.
func TestWinsimBinary(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "winsim")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/winsim")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/winsim: %v\n%s", err, out)
	}
	certDir := filepath.Join(dir, "certs")
	logFile := filepath.Join(dir, "winsim.log")
	cmd := exec.Command(bin, "--config", examplePath, "--control", "127.0.0.1:0", "--cert-dir", certDir, "--log", logFile)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			// A killed process exits with an error that says only that it was killed.
			if err := <-exited; err == nil {
				t.Log("winsim had already exited with status 0")
			}
		}
	})
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()

	var line string
	select {
	case line = <-lines:
	case <-time.After(60 * time.Second):
		t.Fatalf("winsim printed no line within 60s; stderr:\n%s", stderr.String())
	}
	var info winsim.Info
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&info); err != nil {
		t.Fatalf("winsim's line %q is not the Info JSON: %v", line, err)
	}
	if filepath.Dir(info.CACert) != certDir || len(info.Hosts) != 2 || !strings.HasPrefix(info.Control, "127.0.0.1:") {
		t.Errorf("Info %+v; want the CA in %s, two hosts, control on 127.0.0.1", info, certDir)
	}
	if _, err := os.Stat(info.CACert); err != nil {
		t.Errorf("ca_cert %s: %v", info.CACert, err)
	}

	ctl := control{t, info.Control}
	out := ctl.action("sql01", map[string]any{"action": "restart_service", "service": "MSSQLSERVER"})
	if out["state"] != contract.StateRunning {
		t.Errorf("restart_service through the binary's control plane answered %v", out)
	}
	var hosts []winsim.HostInfo
	if code := ctl.do(http.MethodGet, "/v1/hosts", nil, &hosts); code != 200 || len(hosts) != 2 {
		t.Errorf("GET /v1/hosts = %d %v", code, hosts)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case extra, ok := <-lines:
		if ok {
			t.Errorf("winsim printed a second stdout line %q; want exactly one", extra)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("winsim did not close stdout within 30s of SIGTERM")
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("winsim after SIGTERM: %v (want exit 0); stderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("winsim did not exit within 30s of SIGTERM")
	}
	if err := dialState(info.Control); err == nil {
		t.Errorf("the control plane %s still answers after exit", info.Control)
	}
	logged, _ := os.ReadFile(logFile)
	if !strings.Contains(string(logged), "stopped") || !strings.Contains(string(logged), "control plane listening") {
		t.Errorf("log file lacks the start and stop lines:\n%s", logged)
	}
}

func TestWinsimBinaryRejectsBadConfig(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "winsim")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/winsim").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"hosts":[{"name":"x","address":"10.0.0.1"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--config", bad).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "outside 127.0.0.0/8") {
		t.Errorf("winsim with a non-loopback address: %v, output %q; want exit 1 naming the problem", err, out)
	}
	out, err = exec.Command(bin).CombinedOutput()
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "--config FILE is required") {
		t.Errorf("winsim without --config: %v, output %q; want exit 2 with usage", err, out)
	}
}
