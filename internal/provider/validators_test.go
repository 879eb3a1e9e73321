package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestCheckInstanceName(t *testing.T) {
	good := []string{"MSSQLSERVER", "mssqlserver", "REPORTING", "Sql2022_A", "_staging", "A$B", "ABCDEFGHIJKLMNOP", "_ETL"}
	bad := map[string]string{
		"":                  "1 to 16",
		"ABCDEFGHIJKLMNOPQ": "1 to 16",
		"DEFAULT":           "reserved",
		"select":            "reserved",
		"1SQL":              "starts with",
		"$SQL":              "starts with",
		"SQL-01":            "not allowed",
		"SQL 01":            "not allowed",
		"SQL';DROP":         "not allowed",
		`SQL\X`:             "not allowed",
		"SQL\"x":            "not allowed",
		"a;b":               "not allowed",
		"Δ1":                "non-ASCII",
		"Prüfung":           "non-ASCII",
		"İNST":              "non-ASCII",
		// Issue 8: hostile names that reached a host before the rule was ASCII only.
		"SQLЕXPRESS":   "non-ASCII", // Cyrillic Е
		"ＳＱＬ":          "non-ASCII", // fullwidth
		"İ":            "non-ASCII", // Turkish dotted capital I
		"ſql":          "non-ASCII", // long s, folds to "s"
		"SQL٢٠٢٢":      "non-ASCII", // Arabic-Indic digits
		"SQL۲":         "non-ASCII", // Extended Arabic-Indic digit
		"\u212Aelvin":  "non-ASCII", // Kelvin sign, folds to "k"
		"SQL\u202Eexe": "non-ASCII", // right-to-left override
		"SQL\u200B":    "non-ASCII", // zero-width space
		"SQL\x00":      "not allowed",
		"SQL\r\nX":     "not allowed",
	}
	for _, n := range good {
		if err := checkInstanceName(n); err != nil {
			t.Errorf("checkInstanceName(%q) = %v, want ok", n, err)
		}
	}
	for n, want := range bad {
		err := checkInstanceName(n)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("checkInstanceName(%q) = %v, want an error containing %q", n, err, want)
			continue
		}
		if msg := err.Error(); strings.ContainsAny(msg, "\r\n\x00\u202E\u200B") {
			t.Errorf("checkInstanceName(%q): the message echoes a control character: %q", n, msg)
		}
	}
}

func TestCheckHost(t *testing.T) {
	good := []string{"sql01", "sql01.corp.example.com", "sql01.corp.example.com.", "127.0.0.10", "::1", "fe80::1", "SQL_01.corp"}
	bad := []string{"", "sql 01", "sql01;whoami", `corp\sql01`, "'sql01'", `"sql01"`, "https://sql01", "sql01:5986",
		"-sql01", "sql01-.corp", "sql01..corp", "$(calc)", "sql01`", strings.Repeat("a", 64) + ".corp", "a\nb"}
	for _, h := range good {
		if err := checkHost(h); err != nil {
			t.Errorf("checkHost(%q) = %v, want ok", h, err)
		}
	}
	for _, h := range bad {
		if err := checkHost(h); err == nil {
			t.Errorf("checkHost(%q) accepted, want an error", h)
		}
	}
}

func TestCheckDurationAndPEM(t *testing.T) {
	for _, s := range []string{"60s", "2m", "1h30m"} {
		if err := checkDuration(s); err != nil {
			t.Errorf("checkDuration(%q) = %v", s, err)
		}
	}
	for _, s := range []string{"", "60", "-5s", "0s", "soon"} {
		if err := checkDuration(s); err == nil {
			t.Errorf("checkDuration(%q) accepted", s)
		}
	}
	if err := checkPEM("not a certificate"); err == nil || !strings.Contains(err.Error(), "BEGIN CERTIFICATE") {
		t.Errorf("checkPEM(garbage) = %v", err)
	}
	if err := checkPEM("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"); err == nil {
		t.Error("checkPEM accepted a certificate that does not parse")
	}
}

// An import ID names the host, the WinRM port when the host needs one (issue 14:
// an instance behind a non-default port could not be imported) and the instance.
func TestParseImportID(t *testing.T) {
	for id, want := range map[string]struct {
		host     string
		port     int
		instance string
	}{
		"sql01.corp.example.com/REPORTING":       {"sql01.corp.example.com", 0, "REPORTING"},
		"sql01.corp.example.com:15986/REPORTING": {"sql01.corp.example.com", 15986, "REPORTING"},
		"192.0.2.10:5985/MSSQLSERVER":            {"192.0.2.10", 5985, "MSSQLSERVER"},
		"[2001:db8::10]:5986/MSSQLSERVER":        {"2001:db8::10", 5986, "MSSQLSERVER"},
		"[2001:db8::10]/MSSQLSERVER":             {"2001:db8::10", 0, "MSSQLSERVER"},
		"2001:db8::10/MSSQLSERVER":               {"2001:db8::10", 0, "MSSQLSERVER"},
		"fe80::1/MSSQLSERVER":                    {"fe80::1", 0, "MSSQLSERVER"},
	} {
		h, p, i, err := parseImportID(id)
		if err != nil || h != want.host || p != want.port || i != want.instance {
			t.Errorf("parseImportID(%q) = %q %d %q %v; want %q %d %q", id, h, p, i, err, want.host, want.port, want.instance)
		}
		// What the mssqlifi_instances data source gives as import_id reads back the same.
		if f := formatImportID(want.host, want.port, want.instance); f != id && !strings.HasPrefix(id, "[2001:db8::10]/") && id != "2001:db8::10/MSSQLSERVER" && id != "fe80::1/MSSQLSERVER" {
			t.Errorf("formatImportID(%q, %d, %q) = %q; want %q", want.host, want.port, want.instance, f, id)
		} else if h, p, i, err := parseImportID(f); err != nil || h != want.host || p != want.port || i != want.instance {
			t.Errorf("parseImportID(formatImportID(...)) of %q = %q %d %q %v", id, h, p, i, err)
		}
	}
	for id, want := range map[string]string{
		"sql01":                          "exactly one /",
		"sql01/":                         "exactly one /",
		"/MSSQLSERVER":                   "exactly one /",
		"sql01/A/B":                      "exactly one /",
		`sql01\MSSQLSERVER`:              "exactly one /",
		"sql 01/MSSQLSERVER":             "host:",
		"sql01/DEFAULT":                  "instance:",
		"sql01/MSSQL;shutdown":           "instance:",
		"sql01:/MSSQLSERVER":             `port ""`,
		"sql01:0/MSSQLSERVER":            `port "0"`,
		"sql01:65536/MSSQLSERVER":        `port "65536"`,
		"sql01:05986/MSSQLSERVER":        `port "05986"`,
		"sql01:+5986/MSSQLSERVER":        `port "+5986"`,
		"sql01:http/MSSQLSERVER":         `port "http"`,
		"sql01:5986:1/MSSQLSERVER":       "not an IPv6 address",
		"[2001:db8::10/MSSQLSERVER":      "no ]",
		"[sql01]:5986/MSSQLSERVER":       "not an IPv6 address",
		"[192.0.2.10]:5986/MSSQLSERVER":  "not an IPv6 address",
		"[2001:db8::10]5986/MSSQLSERVER": "only :PORT",
		"[2001:db8::10]:x/MSSQLSERVER":   `port "x"`,
		"2001:db8::10:5986:/MSSQLSERVER": "[ADDRESS]:PORT",
	} {
		_, _, _, err := parseImportID(id)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "HOST:PORT/INSTANCE") {
			t.Errorf("parseImportID(%q) = %v, want an error containing %q and the accepted forms", id, err, want)
		}
	}
}

// TestSchemasValid checks every schema the way the framework does when serving, and
// that every attribute documents itself.
func TestSchemasValid(t *testing.T) {
	ctx := context.Background()
	p := New("test")()
	var ps provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &ps)
	if ps.Diagnostics.HasError() {
		t.Fatal(ps.Diagnostics)
	}
	if d := ps.Schema.ValidateImplementation(ctx); d.HasError() {
		t.Fatalf("provider schema: %v", d)
	}
	for name, b := range ps.Schema.Blocks {
		for an, a := range b.GetNestedObject().GetAttributes() {
			if a.GetMarkdownDescription() == "" {
				t.Errorf("provider %s.%s has no MarkdownDescription", name, an)
			}
		}
	}

	var rs resource.SchemaResponse
	NewInstantFileInitializationResource().Schema(ctx, resource.SchemaRequest{}, &rs)
	if d := rs.Schema.ValidateImplementation(ctx); d.HasError() {
		t.Fatalf("resource schema: %v", d)
	}
	for an, a := range rs.Schema.Attributes {
		if a.GetMarkdownDescription() == "" {
			t.Errorf("resource attribute %s has no MarkdownDescription", an)
		}
	}
	var ds datasource.SchemaResponse
	NewInstantFileInitializationDataSource().Schema(ctx, datasource.SchemaRequest{}, &ds)
	if d := ds.Schema.ValidateImplementation(ctx); d.HasError() {
		t.Fatalf("data source schema: %v", d)
	}
	for an, a := range ds.Schema.Attributes {
		if a.GetMarkdownDescription() == "" {
			t.Errorf("data source attribute %s has no MarkdownDescription", an)
		}
		if _, ok := rs.Schema.Attributes[an]; !ok {
			t.Errorf("data source attribute %s is not in the resource", an)
		}
	}
	for _, want := range []string{"service_name", "service_account", "service_sid", "grantee_sid", "privilege_granted",
		"ifi_enabled", "restart_pending", "verified_by", "sql_version", "group_policy_managed", "tde_databases", "clustered", "cluster_nodes",
		"ifi_survives_failover", "nodes", "sql_host"} {
		if _, ok := ds.Schema.Attributes[want]; !ok {
			t.Errorf("data source lacks %s", want)
		}
	}
}

func TestCheckSPN(t *testing.T) {
	for _, s := range []string{"HTTP/sql01", "HTTP/sql01.contoso.com", "WSMAN/sql01.contoso.com:5985", "HTTP/10.0.0.5"} {
		if err := checkSPN(s); err != nil {
			t.Errorf("checkSPN(%q) = %v, want nil", s, err)
		}
	}
	for s, want := range map[string]string{
		"sql01":             "SERVICE/host",
		"/sql01":            "SERVICE/host",
		"HTTP/":             "host is empty",
		"HTTP/sql 01":       "not allowed",
		"HTTP/sql01:port":   "port number",
		`CONTOSO\x/sql01`:   "SERVICE/host",
		"HTTP/https://sql1": "port number",
	} {
		if err := checkSPN(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("checkSPN(%q) = %v, want an error containing %q", s, err, want)
		}
	}
}

// The nodes map is refused at plan time when a key is not a node name (an FQDN, an
// address), when two keys name one node, or when a value is not a host.
func TestNodesValidator(t *testing.T) {
	for _, tc := range []struct {
		nodes map[string]attr.Value
		want  []string // each the detail of one error; none: valid
	}{
		{nodes: map[string]attr.Value{"NODE1": types.StringValue("node1.contoso.com"), "node-2": types.StringValue("10.0.0.12")}},
		{nodes: map[string]attr.Value{"NODE1": types.StringUnknown()}},
		{nodes: map[string]attr.Value{"node1.contoso.com": types.StringValue("10.0.0.11")}, want: []string{"give the node's computer name"}},
		{nodes: map[string]attr.Value{"10.0.0.11": types.StringValue("10.0.0.11")}, want: []string{"give the node's computer name"}},
		{nodes: map[string]attr.Value{"NODE_1": types.StringValue("n1")}, want: []string{"letters, digits and"}},
		{nodes: map[string]attr.Value{"NODE1": types.StringValue("n1"), "node1": types.StringValue("n1")},
			want: []string{`"NODE1" and "node1" name the same node`}},
		{nodes: map[string]attr.Value{"NODE1": types.StringValue("https://node1:5986")}, want: []string{`node "NODE1": `}},
		{nodes: map[string]attr.Value{"NODE1": types.StringNull()}, want: []string{`node "NODE1" has no address`}},
	} {
		req := validator.MapRequest{Path: path.Root("nodes"), ConfigValue: types.MapValueMust(types.StringType, tc.nodes)}
		var resp validator.MapResponse
		nodesValidator{}.ValidateMap(context.Background(), req, &resp)
		errs := resp.Diagnostics.Errors()
		if len(errs) != len(tc.want) {
			t.Errorf("%v: %d errors %v, want %d", tc.nodes, len(errs), errs, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(errs[i].Detail(), w) {
				t.Errorf("%v: error %q, want it to contain %q", tc.nodes, errs[i].Detail(), w)
			}
		}
	}
}

// availability_replica_addresses: bad names, a name given twice (without case) and
// bad addresses are plan-time errors, each on its own key.
func TestReplicaAddressesValidator(t *testing.T) {
	m := func(kv map[string]attr.Value) validator.MapRequest {
		return validator.MapRequest{Path: path.Root("availability_replica_addresses"), ConfigValue: types.MapValueMust(types.StringType, kv)}
	}
	for _, tc := range []struct {
		in   map[string]attr.Value
		want []string // error summaries, sorted by key
	}{
		{map[string]attr.Value{"SQL01": types.StringValue("10.0.0.1:14330"), `SQL02\INST`: types.StringValue("sql02.contoso.com")}, nil},
		{map[string]attr.Value{"sql01:1433": types.StringValue("10.0.0.1")}, []string{"Invalid availability replica name"}},
		{map[string]attr.Value{"SQL01": types.StringValue("a"), "sql01": types.StringValue("b")}, []string{"Availability replica named twice"}},
		{map[string]attr.Value{"SQL01": types.StringValue("sql01:0")}, []string{"Invalid availability replica address"}},
		{map[string]attr.Value{"SQL01": types.StringNull()}, []string{"Invalid availability replica address"}},
	} {
		var resp validator.MapResponse
		replicaAddressesValidator{}.ValidateMap(context.Background(), m(tc.in), &resp)
		var got []string
		for _, d := range resp.Diagnostics.Errors() {
			got = append(got, d.Summary())
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%v: errors %v, want %v", tc.in, got, tc.want)
		}
	}
}
