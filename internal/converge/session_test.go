package converge

import (
	"errors"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// One instance, whatever the spelling of its host and name.
func TestInstanceKey(t *testing.T) {
	same := [][2][2]string{
		{{"127.0.2.2", "MSSQLSERVER"}, {"::ffff:127.0.2.2", "mssqlserver"}},
		{{"127.0.2.2", "REPORTING"}, {"[::ffff:7f00:202]", "Reporting"}},
		{{"SQL01.Example.com.", "A"}, {"sql01.example.com", "a"}},
		{{"fe80::1", "X"}, {"FE80:0:0:0:0:0:0:1", "x"}},
	}
	for _, p := range same {
		if a, b := NewInstanceKey(p[0][0], p[0][1]), NewInstanceKey(p[1][0], p[1][1]); a != b {
			t.Errorf("%v and %v are different instances (%v, %v), want one", p[0], p[1], a, b)
		}
	}
	differ := [][2][2]string{
		{{"127.0.2.2", "MSSQLSERVER"}, {"127.0.2.3", "MSSQLSERVER"}},
		{{"sql01", "A"}, {"sql01.example.com", "A"}},
		{{"sql01", "A"}, {"sql01", "B"}},
	}
	for _, p := range differ {
		if NewInstanceKey(p[0][0], p[0][1]) == NewInstanceKey(p[1][0], p[1][1]) {
			t.Errorf("%v and %v are one instance, want two", p[0], p[1])
		}
	}
}

// A second resource for one instance, however spelled, is refused at the instance
// argument, naming both resources; a second identical resource too.
func TestSessionClaim(t *testing.T) {
	s := NewSession(nil)
	on := true
	if err := s.Claim("127.0.2.2", "MSSQLSERVER", &on); err != nil {
		t.Fatalf("the first claim: %v", err)
	}
	for _, host := range []string{"::ffff:127.0.2.2", "127.0.2.2"} {
		err := s.Claim(host, "mssqlserver", nil)
		var ce *Error
		if !errors.As(err, &ce) || ce.Kind != KindRefused || ce.Argument != "instance" || ce.Refusal == nil {
			t.Fatalf("second claim through %s: %v, want a refusal at the instance argument", host, err)
		}
		for _, want := range []string{"Two resources manage one SQL Server instance", `host = "127.0.2.2", instance = "MSSQLSERVER", enabled = true`,
			`host = "` + host + `", instance = "mssqlserver"`, "Nothing was changed", "keep one resource per instance"} {
			if !strings.Contains(ce.Refusal.Summary+": "+ce.Refusal.Detail, want) {
				t.Errorf("second claim through %s: %q lacks %q", host, ce.Refusal.Detail, want)
			}
		}
	}
	if err := s.Claim("127.0.2.3", "MSSQLSERVER", nil); err != nil {
		t.Errorf("another host's instance: %v", err)
	}
}

// One resource reaching a cluster role twice in a run (its refresh, then its plan)
// is not a second resource; another resource through another node is refused at
// the host argument.
func TestSessionClaimRole(t *testing.T) {
	s := NewSession(nil)
	ca := &ifi.ClusterAssessment{Cluster: "CL1", Group: "SQL Server (MSSQLSERVER)", Instance: "MSSQLSERVER", VirtualName: "SQLFCI"}
	node1 := Target{Host: "node1", Instance: "MSSQLSERVER"}
	if err := s.claimRole(node1, ca); err != nil {
		t.Fatal(err)
	}
	if err := s.claimRole(node1, ca); err != nil {
		t.Errorf("the same resource again: %v", err)
	}
	err := s.claimRole(Target{Host: "node2", Instance: "MSSQLSERVER"}, ca)
	var ce *Error
	if !errors.As(err, &ce) || ce.Argument != "host" || !strings.Contains(ce.Refusal.Detail, `the role "SQL Server (MSSQLSERVER)" of cluster CL1`) {
		t.Errorf("through another node: %v, want a refusal at the host argument naming the role", err)
	}
}

// Advice said once per run: the first caller is told it is new; later ones who
// said it first.
func TestSessionOnce(t *testing.T) {
	s := NewSession(nil)
	if _, isNew := s.Once("logon sql01:5985", "A"); !isNew {
		t.Fatal("first: not new")
	}
	if first, isNew := s.Once("logon sql01:5985", "B"); isNew || first != "A" {
		t.Errorf("second: new %v, first %q; want not new, A", isNew, first)
	}
	if _, isNew := s.Once("logon sql02:5985", "B"); !isNew {
		t.Error("another key: not new")
	}
}
