package provider

import (
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// A create's plan record counts for the same instance (however spelt), the same
// arguments and planRecordMaxAge; Create and Delete remove it.
func TestPlanRecord(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Chdir(t.TempDir())
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	args := "enabled=true grantee=service_sid restart=if_needed port=<null>"
	savePlanRecord(planRecord{Host: "SQL01.example.com.", Instance: "reporting", Desired: args, Action: ifi.ActionGrant, At: at})
	if r := loadPlanRecord("sql01.example.com", "REPORTING", args, at.Add(time.Hour)); r == nil || r.Action != ifi.ActionGrant {
		t.Fatalf("record %+v; want the plan's grant", r)
	}
	for name, r := range map[string]*planRecord{
		"other arguments": loadPlanRecord("sql01.example.com", "REPORTING", "enabled=false", at),
		"other instance":  loadPlanRecord("sql01.example.com", "OTHER", args, at),
		"too old":         loadPlanRecord("sql01.example.com", "REPORTING", args, at.Add(planRecordMaxAge+time.Second)),
	} {
		if r != nil {
			t.Errorf("%s: record %+v; want none", name, r)
		}
	}
	t.Chdir(t.TempDir()) // another working directory: another configuration
	if r := loadPlanRecord("sql01.example.com", "REPORTING", args, at); r != nil {
		t.Errorf("another directory finds %+v; want none", r)
	}
}

// Create removes the record: a later plan of the same instance starts afresh.
func TestPlanRecordDropped(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Chdir(t.TempDir())
	at := time.Now().UTC()
	savePlanRecord(planRecord{Host: "sql01", Instance: "MSSQLSERVER", Desired: "x", Action: ifi.ActionGrant, At: at})
	dropPlanRecord("sql01", "MSSQLSERVER")
	if r := loadPlanRecord("sql01", "MSSQLSERVER", "x", at); r != nil {
		t.Errorf("record %+v after drop; want none", r)
	}
}
