package winsim_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
)

const examplePath = "examples/fleet.json"

func TestExampleConfigLoads(t *testing.T) {
	cfg, err := winsim.LoadConfig(examplePath)
	if err != nil {
		t.Fatalf("LoadConfig(%s): %v", examplePath, err)
	}
	if len(cfg.Hosts) != 2 || cfg.Hosts[0].Name != "sql01" || cfg.Hosts[1].Name != "sql02" {
		t.Fatalf("hosts = %d (%v); want sql01 and sql02", len(cfg.Hosts), cfg.Hosts)
	}
	sql01, sql02 := cfg.Hosts[0], cfg.Hosts[1]
	if sql01.Address != "127.0.0.2" || sql02.Address != "127.0.0.3" {
		t.Errorf("addresses %s, %s; want 127.0.0.2, 127.0.0.3", sql01.Address, sql02.Address)
	}
	if len(sql01.Instances) != 2 || sql01.Instances[0].Name != "MSSQLSERVER" || sql01.Instances[1].Name != "REPORTING" {
		t.Fatalf("sql01 instances %+v; want MSSQLSERVER and REPORTING", sql01.Instances)
	}
	if got := sql01.Instances[1].TDEDatabases; len(got) != 1 {
		t.Errorf("REPORTING TDE databases %v; want one", got)
	}
	if sql02.Instances[0].ServiceAccount != `CONTOSO\sqlsvc` {
		t.Errorf("sql02 start account %q; want CONTOSO\\sqlsvc", sql02.Instances[0].ServiceAccount)
	}
	// The Group Policy example is written as a comment: it must not be active.
	if len(sql02.GroupPolicy.Rights) != 0 {
		t.Errorf("sql02 group policy rights %v; the example must be inactive by default", sql02.GroupPolicy.Rights)
	}
	if !sql01.WinRM.BasicEnabled() || !sql01.WinRM.NTLMEnabled() || len(sql01.WinRM.Users) == 0 {
		t.Errorf("sql01 WinRM %+v; want Basic, NTLM and users", sql01.WinRM)
	}
}

func TestConfigValidationErrors(t *testing.T) {
	host := func(name, addr string, extra string) string {
		return `{"name":"` + name + `","address":"` + addr + `"` + extra + `}`
	}
	cases := []struct {
		name, json string
		want       []string
	}{
		{"no hosts", `{"hosts":[]}`, []string{`"hosts" is empty`}},
		{"duplicate names", `{"hosts":[` + host("sql01", "127.0.0.2", "") + `,` + host("SQL01", "127.0.0.3", "") + `]}`,
			[]string{`host "SQL01" (hosts[1]): the name is already used by hosts[0]`}},
		{"duplicate addresses", `{"hosts":[` + host("a", "127.0.0.2", "") + `,` + host("b", "127.0.0.2", "") + `]}`,
			[]string{`"address" 127.0.0.2 is already used by hosts[0]`}},
		{"not loopback", `{"hosts":[` + host("a", "10.1.2.3", "") + `]}`,
			[]string{`10.1.2.3 is outside 127.0.0.0/8`}},
		{"ipv6", `{"hosts":[` + host("a", "::1", "") + `]}`, []string{`"::1" is not an IPv4 address`}},
		{"missing address", `{"hosts":[{"name":"a"}]}`, []string{`"address" is empty`}},
		{"bad instance name", `{"hosts":[` + host("a", "127.0.0.2", `,"instances":[{"name":"1BAD"}]`) + `]}`,
			[]string{`instances[0] ("1BAD"): not a SQL Server instance name: "1BAD" starts with '1'`}},
		{"instance name too long", `{"hosts":[` + host("a", "127.0.0.2", `,"instances":[{"name":"ABCDEFGHIJKLMNOPQ"}]`) + `]}`,
			[]string{`1 to 16 characters`}},
		{"instance name hyphen", `{"hosts":[` + host("a", "127.0.0.2", `,"instances":[{"name":"MY-INST"}]`) + `]}`,
			[]string{`the character '-' in "MY-INST" is not allowed`}},
		{"instance name not ASCII", `{"hosts":[` + host("a", "127.0.0.2", `,"instances":[{"name":"Δ1"}]`) + `]}`,
			[]string{`non-ASCII character 'Δ'`}},
		{"reserved instance name", `{"hosts":[` + host("a", "127.0.0.2", `,"instances":[{"name":"select"}]`) + `]}`,
			[]string{`"select" is a reserved word`}},
		{"winrm port range", `{"hosts":[` + host("a", "127.0.0.2", `,"winrm":{"http_port":70000}`) + `]}`,
			[]string{`host "a" (hosts[0]): winrm: "http_port" 70000 is not a TCP port`}},
		{"empty host name", `{"hosts":[{"name":"","address":"127.0.0.2"}]}`,
			[]string{`hosts[0]: host "name" is empty`}},
		{"duplicate instance", `{"hosts":[` + host("a", "127.0.0.2", `,"instances":[{"name":"X"},{"name":"x"}]`) + `]}`,
			[]string{`the instance is configured twice on this host`}},
		{"port clash", `{"hosts":[` + host("a", "127.0.0.2", `,"winrm":{"http_port":5985,"https_port":5985}`) + `]}`,
			[]string{`"https_port" 5985 is also "http_port"`}},
		{"port range", `{"hosts":[` + host("a", "127.0.0.2", `,"instances":[{"name":"MSSQLSERVER","sql_port":70000}]`) + `]}`,
			[]string{`"sql_port" 70000 is not a TCP port`}},
		{"unknown field", `{"hosts":[` + host("a", "127.0.0.2", `,"ip_address":"x"`) + `]}`,
			[]string{`unknown field "ip_address"`, "README.md"}},
		{"wrong type", `{"hosts":[` + host("a", "127.0.0.2", `,"winrm":{"http_port":"5985"}`) + `]}`,
			[]string{`http_port`, `string`}},
		{"syntax", "{\"hosts\": [\n  {\"name\": \"a\",,}\n]}", []string{"line 2, column"}},
		{"unknown version", `{"version":2,"hosts":[` + host("a", "127.0.0.2", "") + `]}`,
			[]string{`"version" 2 is not a configuration format this winsim reads (it reads version 1`}},
		{"bad cert validity", `{"cert_validity":"a year","hosts":[` + host("a", "127.0.0.2", "") + `]}`,
			[]string{`"cert_validity" "a year" is not a positive Go duration`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := winsim.ParseConfig([]byte(tc.json))
			if err == nil {
				t.Fatalf("ParseConfig(%s) accepted it; want an error", tc.json)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestConfigReportsEveryProblemAndTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.json")
	body := `{"hosts":[{"name":"a","address":"192.168.1.1"},{"name":"a","address":"127.0.0.2"}]}`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := winsim.LoadConfig(path)
	if err == nil {
		t.Fatal("LoadConfig accepted two problems")
	}
	for _, w := range []string{path, "outside 127.0.0.0/8", "already used by hosts[0]"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if _, err := winsim.LoadConfig(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "--config") {
		t.Errorf("LoadConfig(missing) = %v; want an error that says to pass an existing file", err)
	}
}

// TestConfigVersion: a file says which format it is written in; version 1 and a
// file without the key load alike.
func TestConfigVersion(t *testing.T) {
	for _, raw := range []string{
		`{"hosts":[{"name":"a","address":"127.0.0.2"}]}`,
		`{"version":1,"hosts":[{"name":"a","address":"127.0.0.2"}]}`,
	} {
		if _, err := winsim.ParseConfig([]byte(raw)); err != nil {
			t.Errorf("ParseConfig(%s): %v; want it loaded as version 1", raw, err)
		}
	}
}

func TestConfigCommentsAreIgnoredAtAnyDepth(t *testing.T) {
	body := `{"//":"top","hosts":[{"//":"a host","name":"a","address":"127.0.0.9","winrm":{"//x":1,"users":[{"//":"u","name":"Administrator","password":"p"}]}}]}`
	cfg, err := winsim.ParseConfig([]byte(body))
	if err != nil {
		t.Fatalf("ParseConfig with comments: %v", err)
	}
	if cfg.Hosts[0].WinRM.Users[0].Name != "Administrator" {
		t.Errorf("users %+v; want Administrator", cfg.Hosts[0].WinRM.Users)
	}
}

func TestConfigAcceptsUnderscoreInstance(t *testing.T) {
	body := `{"hosts":[{"name":"a","address":"127.0.0.9","instances":[{"name":"_ETL"},{"name":"MSSQLSERVER"}]}]}`
	cfg, err := winsim.ParseConfig([]byte(body))
	if err != nil {
		t.Fatalf("ParseConfig with instance _ETL: %v", err)
	}
	if cfg.Hosts[0].Instances[0].Name != "_ETL" {
		t.Errorf("instances %+v; want _ETL first", cfg.Hosts[0].Instances)
	}
}
