package ifi

import (
	"strings"
	"testing"
)

// The refusal of a second resource for one instance, or for one failover cluster
// instance's role, names both resources and what they manage, and says what to do.
func TestTwoResources(t *testing.T) {
	first, second := `host = "127.0.2.2", instance = "MSSQLSERVER", enabled = true`, `host = "::ffff:127.0.2.2", instance = "mssqlserver", enabled = false`
	for _, tc := range []struct {
		name    string
		m       Managed
		summary string
		want    []string
	}{
		{"instance", ManagedInstance("127.0.2.2", "MSSQLSERVER"), "Two resources manage one SQL Server instance",
			[]string{"instance MSSQLSERVER on 127.0.2.2", "hosts are compared as addresses", "DNS names and instance names without case",
				"restart SQL Server on every apply", "Nothing was changed.", "keep one resource per instance", "terraform state rm",
				"point one at the instance it was meant for"}},
		{"failover cluster instance", ManagedRole("CLU1", "SQL Server (MSSQLSERVER)", "MSSQLSERVER", "SQLFCI"),
			"Two resources manage one failover cluster instance",
			[]string{`the role "SQL Server (MSSQLSERVER)" of cluster CLU1 (instance MSSQLSERVER, virtual name SQLFCI)`, "through a different node",
				"on every node", "restart it twice", "Nothing was changed.", "keep one resource per failover cluster instance, addressed by any one node",
				"terraform state rm"}},
	} {
		r := TwoResources(second, first, tc.m)
		if r.Summary != tc.summary {
			t.Errorf("%s: summary %q, want %q", tc.name, r.Summary, tc.summary)
		}
		for _, w := range append(tc.want, "This resource ("+second+")", "resource of this configuration ("+first+")") {
			if !strings.Contains(r.Detail, w) {
				t.Errorf("%s: detail lacks %q: %s", tc.name, w, r.Detail)
			}
		}
	}
	if r := TwoResources(first, second, ManagedRole("CLU1", "SQL Server (MSSQLSERVER)", "MSSQLSERVER", "SQLFCI")); strings.Contains(r.Detail, "point one at") {
		t.Errorf("the role's refusal offers to point a resource at another instance: %s", r.Detail)
	}
}

// What the claim compared comes from the configuration and the host: it is escaped.
func TestTwoResourcesEscapes(t *testing.T) {
	for _, r := range []*Refusal{
		TwoResources("a\nb", "c\x1bd", ManagedInstance("h\u202eost", "I\r")),
		TwoResources("a", "b", ManagedRole("C\n", "R\x1b", "I\t", "V\u200b")),
	} {
		if strings.ContainsAny(r.Summary+r.Detail, "\n\r\t\x1b\u202e\u200b") {
			t.Errorf("unescaped: %q", r.Detail)
		}
	}
}

// A role whose virtual name the cluster does not report is named without an empty
// name: the refusal and the cluster's messages say so instead.
func TestRoleWithoutVirtualName(t *testing.T) {
	r := TwoResources("a", "b", ManagedRole("CLU1", "SQL Server (MSSQLSERVER)", "MSSQLSERVER", ""))
	if !strings.Contains(r.Detail, "(instance MSSQLSERVER, its virtual name not reported by the cluster)") {
		t.Errorf("refusal: %s", r.Detail)
	}
	for vn, want := range map[string]string{
		"":       `(failover cluster instance, role "SQL Server (MSSQLSERVER)" on cluster CLU1)`,
		"SQLFCI": `(failover cluster instance SQLFCI, role "SQL Server (MSSQLSERVER)" on cluster CLU1)`,
	} {
		c := &ClusterAssessment{Instance: "MSSQLSERVER", Host: "sql01", VirtualName: vn, Group: "SQL Server (MSSQLSERVER)", Cluster: "CLU1"}
		if got := c.where(); !strings.Contains(got, want) {
			t.Errorf("virtual name %q: %s; want %s", vn, got, want)
		}
	}
}
