package provider

import (
	"strings"
	"testing"
)

// An integer argument given a number that is not a whole number fails the plan at
// that argument with an error that says so, not with the framework's "This is
// always an error in the provider"; one out of its range names the range.
func TestCLI_integerArgumentsRefuseFractionsAndSayTheirRange(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	const winrm = `
  winrm {
    username = "Administrator"
    password = "x"
`
	for _, tc := range []struct {
		name, config, attr, summary, detail string
	}{
		{"a resource's port", `provider "mssqlifi" {` + winrm + "  }\n}\n" + resourceConfig("127.0.0.1", "port = 5985.5"),
			"port", `^Not a whole number$`, `port takes a whole number; 5985.5 is not one`},
		{"a resource's sql_port beyond 64 bits", `provider "mssqlifi" {` + winrm + "  }\n}\n" + resourceConfig("127.0.0.1", "sql_port = 1e30"),
			"sql_port", `^Not a whole number$`, `sql_port takes a whole number; 1e\+30 is not one`},
		{"winrm.port", `provider "mssqlifi" {` + winrm + "    port = 5985.5\n  }\n}\n" + resourceConfig("127.0.0.1", ""),
			"winrm.port", `^Not a whole number$`, `winrm.port takes a whole number; 5985.5 is not one`},
		{"max_parallel_restarts", "provider \"mssqlifi\" {\n  max_parallel_restarts = 1.5\n" + winrm + "  }\n}\n" + resourceConfig("127.0.0.1", ""),
			"max_parallel_restarts", `^Not a whole number$`, `max_parallel_restarts takes a whole number; 1.5 is not one`},
		{"a data source's port", `provider "mssqlifi" {` + winrm + "  }\n}\n" +
			"data \"mssqlifi_instant_file_initialization\" \"this\" {\n  host = \"127.0.0.1\"\n  port = 5985.5\n}\n",
			"port", `^Not a whole number$`, `port takes a whole number; 5985.5 is not one`},
		{"the instances data source's port", `provider "mssqlifi" {` + winrm + "  }\n}\n" +
			"data \"mssqlifi_instances\" \"this\" {\n  host = \"127.0.0.1\"\n  port = 0.5\n}\n",
			"port", `^Not a whole number$`, `port takes a whole number; 0.5 is not one`},
		{"a port out of range", `provider "mssqlifi" {` + winrm + "  }\n}\n" + resourceConfig("127.0.0.1", "port = 70000"),
			"port", `^Invalid Attribute Value$`, `between 1 and 65535, got: 70000`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.write(tc.config)
			p := w.plan()
			if p.Exit != 1 {
				t.Fatalf("plan exit %d; want 1 (the configuration refused):\n%s", p.Exit, p.describe())
			}
			p.wantDiag(t, "error", tc.summary, tc.detail)
			for _, d := range p.errors() {
				if strings.Contains(d.Detail, "always an error in the provider") {
					t.Errorf("the framework's internal error reached the user: %s", d)
				}
			}
		})
	}
}
