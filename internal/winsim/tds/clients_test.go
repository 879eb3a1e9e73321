package tds

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/pytest"
)

// The endpoint must also satisfy TDS clients written independently of go-mssqldb:
// FreeTDS's tsql (C) and pytds (pure Python).

func runClient(t *testing.T, stdin string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (Debian packages freetds-bin, python3-tds): %v", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestFreeTDSTsql(t *testing.T) {
	ts := startServer(t, Options{})
	conf := filepath.Join(t.TempDir(), "freetds.conf")
	if err := os.WriteFile(conf, []byte("[global]\n\ttds version = 7.4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A private configuration so a machine-wide freetds.conf (for example one that
	// requires encryption) does not change the test.
	env := []string{"FREETDSCONF=" + conf, "TDSVER=7.4"}
	out, err := runClient(t, "SELECT types\ngo\nSELECT nope\ngo\nexit\n", env,
		"tsql", "-H", "127.0.0.1", "-p", strconv.Itoa(ts.port), "-U", testUser, "-P", testPassword)
	t.Logf("tsql output:\n%s", out)
	if err != nil {
		t.Fatalf("tsql: %v", err)
	}
	for _, want := range []string{
		"servicename\tprocess_id\tbig\tis_clustered\tlast_startup_time\tnote",
		"SQL Server (INST1)\t4242\t-9000000000\t1\tFeb 29 2024 11:59PM\tNULL\tNULL\tNULL\tNULL\tNULL",
		"SQL Server Agent (INST1) ☃\t17\t1099511627776\t0\tFeb 29 2024 06:29PM\tnote ✓\t-5\t0\tJan  1 2001 12:00AM\tlong ∑ text",
		"(2 rows affected)",
		"Msg 208 (severity 16, state 1) from SQL01\\INST1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tsql output lacks %q", want)
		}
	}

	out, _ = runClient(t, "exit\n", env, "tsql", "-H", "127.0.0.1", "-p", strconv.Itoa(ts.port), "-U", testUser, "-P", "wrong")
	if !strings.Contains(out, "Msg 18456") || !strings.Contains(out, "Login failed for user 'provider'.") {
		t.Errorf("tsql with a wrong password printed:\n%s\nwant Msg 18456 Login failed for user 'provider'.", out)
	}
}

func TestPytds(t *testing.T) {
	ts := startServer(t, Options{})
	script := `
import sys, pytds
port = int(sys.argv[1])
with pytds.connect(server="127.0.0.1", port=port, user=sys.argv[2], password=sys.argv[3], database="master", autocommit=True) as conn:
    with conn.cursor() as cur:
        cur.execute("SELECT types")
        print([d[0] for d in cur.description])
        for row in cur.fetchall():
            print(repr(tuple(v.isoformat() if hasattr(v, "isoformat") else v for v in row)))
        try:
            cur.execute("SELECT nope")
        except pytds.ProgrammingError as e:
            print("error", e.msg_no, e.text)
        cur.execute("SELECT two")
        print(cur.fetchall())
        cur.nextset()
        print(cur.fetchall())
try:
    pytds.connect(server="127.0.0.1", port=port, user=sys.argv[2], password="wrong", database="master")
except pytds.Error as e:
    print("login", getattr(e, "msg_no", None), e)
`
	out, err := runClient(t, "", nil, pytest.PythonWith(t, "pytds", "python3-tds"), "-c", script, strconv.Itoa(ts.port), testUser, testPassword)
	t.Logf("pytds output:\n%s", out)
	if err != nil {
		t.Fatalf("pytds: %v", err)
	}
	for _, want := range []string{
		"['servicename', 'process_id', 'big', 'is_clustered', 'last_startup_time', 'note', 'maybe_int', 'maybe_bit', 'maybe_time', 'body']",
		"('SQL Server (INST1)', 4242, -9000000000, True, '2024-02-29T23:59:58.123456+05:30', None, None, None, None, None)",
		"('SQL Server Agent (INST1) ☃', 17, 1099511627776, False, '2024-02-29T18:29:58.123456+00:00', 'note ✓', -5, False, '2001-01-01T00:00:00-08:00', 'long ∑ text')",
		"error 208 Invalid object name 'SELECT nope'.",
		"[(1,), (2,)]\n[('x',)]",
		"login 18456 Login failed for user 'provider'.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("pytds output lacks %q", want)
		}
	}
}

func TestFreeTDSTsqlEncrypted(t *testing.T) {
	cfg, caFile := testPKI(t)
	ts := startServer(t, Options{TLSConfig: cfg})
	conf := filepath.Join(t.TempDir(), "freetds.conf")
	body := "[global]\n\ttds version = 7.4\n\tencryption = require\n\tca file = " + caFile + "\n"
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"FREETDSCONF=" + conf, "TDSVER=7.4"}
	out, err := runClient(t, "SELECT two\ngo\nexit\n", env,
		"tsql", "-H", "127.0.0.1", "-p", strconv.Itoa(ts.port), "-U", testUser, "-P", testPassword)
	t.Logf("tsql output:\n%s", out)
	if err != nil {
		t.Fatalf("tsql: %v", err)
	}
	if !strings.Contains(out, "(2 rows affected)") || !strings.Contains(out, "b\nx\n(1 row affected)") {
		t.Errorf("tsql over TLS did not print both result sets")
	}
	ts.h.mu.Lock()
	logins := append([]Login(nil), ts.h.logins...)
	ts.h.mu.Unlock()
	if len(logins) != 1 || !logins[0].Encrypted {
		t.Errorf("handler saw logins %+v; want one over TLS", logins)
	}
}
