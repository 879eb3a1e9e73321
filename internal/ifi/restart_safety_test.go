package ifi

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

var (
	engineStart = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	beforeStart = engineStart.Add(-24 * time.Hour)
	afterStart  = engineStart.Add(time.Hour)
)

func intp(n int) *int { return &n }

// hadrKey sets what the registry says of Always On (HADR_Enabled nil: the value is
// absent) and the Engine's start.
func hadrKey(enabled *int, written time.Time) func(*contract.ReadInstanceResult) {
	return func(r *contract.ReadInstanceResult) {
		r.ProcessStartTime = &engineStart
		r.HADR = &contract.HADRInfo{KeyFound: true, Enabled: enabled, KeyWritten: &written}
	}
}

// hadrOff: HADR_Enabled 0 since before the Engine started (in no group).
var hadrOff = hadrKey(intp(0), beforeStart)

func clusterOwns(groups ...string) func(*contract.ReadInstanceResult) {
	return func(r *contract.ReadInstanceResult) {
		r.ProcessStartTime = &engineStart
		r.HADR = &contract.HADRInfo{KeyFound: true, Enabled: intp(1), KeyWritten: &beforeStart, ClusterKnown: true, OwnedGroups: groups}
	}
}

// clusterUntied: this node owns the groups' cluster resources, which Windows does not
// tie to an instance (a node with several instances); HADR_Enabled as mod says.
func clusterUntied(enabled *int, groups ...string) func(*contract.ReadInstanceResult) {
	return func(r *contract.ReadInstanceResult) {
		r.ProcessStartTime = &engineStart
		r.HADR = &contract.HADRInfo{KeyFound: true, Enabled: enabled, KeyWritten: &beforeStart, ClusterKnown: true, UntiedGroups: groups}
	}
}

// noSQL is what an observation without SQL Server has: the error log says IFI is off.
func noSQL(mod ...func(*contract.ReadInstanceResult)) Observed {
	return obs(Verification{Source: SourceErrorLog, Enabled: ptr(false)}, mod...)
}

func replica(role string, unhealthy ...string) Verification {
	v := dmv(false)
	v.AG = &AGMembership{Groups: []string{"AG1"}, Role: role, Unhealthy: unhealthy}
	return v
}

// Under if_needed an Engine restarts only when it is known not to be a primary
// replica, its group is healthy as far as it can see, and no backup is running;
// if_needed_including_primary also restarts a primary or an unknown role, saying so.
func TestRestartSafety(t *testing.T) {
	optIn := withRestart(enable, RestartIfNeededIncludingPrimary)
	withBackup := dmv(false)
	withBackup.RunningBackups = []string{"BACKUP DATABASE (session 57)"}
	for _, tc := range []struct {
		name     string
		desired  Desired
		observed Observed
		refusal  string   // a refusal's summary contains it; "" = the restart goes ahead
		detail   []string // the refusal's detail (or the warning's) contains each
		warnings []string // the plan's warnings
	}{
		{name: "SQL Server: in no group", desired: enable, observed: obs(dmv(false))},
		{name: "SQL Server: secondary", desired: enable, observed: obs(replica(RoleSecondary))},
		{name: "SQL Server: primary refused", desired: enable, observed: obs(replica(RolePrimary)),
			refusal: "Primary availability replica", detail: []string{"primary replica", "AG1", "FAILOVER", `"if_needed_including_primary"`}},
		{name: "SQL Server: resolving refused", desired: enable, observed: obs(replica(RoleResolving)),
			refusal: "Primary availability replica", detail: []string{"resolving replica", "AG1"}},
		{name: "SQL Server: primary opted in", desired: optIn, observed: obs(replica(RolePrimary)), warnings: []string{WarnPrimaryRestart}},
		{name: "no SQL, no registry report: unknown refused", desired: enable, observed: noSQL(),
			refusal: "role unknown", detail: []string{"VIEW SERVER STATE", "sql block", `"if_needed_including_primary"`, "Nothing was changed"}},
		// Two instances on one node, AG1's primary on the other one (issue 24): the
		// cluster does not say which instance holds AG1. One with Always On off since
		// its start is in no group and restarts; one with Always On on is refused, the
		// refusal naming the group, not calling it AG1's primary.
		{name: "no SQL, another instance's untied group, HADR off since the start", desired: enable, observed: noSQL(clusterUntied(intp(0), "AG1")),
			warnings: []string{WarnBackupsUnchecked}},
		{name: "no SQL, an untied group, HADR on: unknown refused", desired: enable, observed: noSQL(clusterUntied(intp(1), "AG1")),
			refusal: "role unknown", detail: []string{"cannot tell which instance group AG1 belongs to", "sql block", "Nothing was changed"}},
		{name: "no SQL, HADR_Enabled 0 since before the start", desired: enable, observed: noSQL(hadrOff),
			warnings: []string{WarnBackupsUnchecked}},
		{name: "no SQL, HADR_Enabled absent since before the start", desired: enable, observed: noSQL(hadrKey(nil, beforeStart)),
			warnings: []string{WarnBackupsUnchecked}},
		{name: "no SQL, HADR_Enabled 0 written since the start: unknown", desired: enable, observed: noSQL(hadrKey(intp(0), afterStart)),
			refusal: "role unknown", detail: []string{"after the running Engine started"}},
		{name: "no SQL, HADR_Enabled 1: unknown", desired: enable, observed: noSQL(hadrKey(intp(1), beforeStart)),
			refusal: "role unknown", detail: []string{"HADR_Enabled is 1"}},
		{name: "no SQL, HADR key missing: unknown", desired: enable, observed: noSQL(func(r *contract.ReadInstanceResult) {
			r.ProcessStartTime = &engineStart
			r.HADR = &contract.HADRInfo{}
		}), refusal: "role unknown", detail: []string{"missing"}},
		{name: "no SQL, SQL Server 2008 R2 (no Always On, no HADR key)", desired: enable, observed: noSQL(func(r *contract.ReadInstanceResult) {
			r.Version, r.HADR = "10.50.6000.34", &contract.HADRInfo{}
		}), warnings: []string{WarnBackupsUnchecked}},
		{name: "no SQL, the cluster says this node owns the group: primary", desired: enable, observed: noSQL(clusterOwns("AG7")),
			refusal: "Primary availability replica", detail: []string{"AG7", "failover cluster"}},
		{name: "no SQL, unknown, opted in", desired: optIn, observed: noSQL(), warnings: []string{WarnAGUnknown, WarnBackupsUnchecked}},
		{name: "SQL Server: a secondary that is not healthy", desired: enable,
			observed: obs(replica(RoleSecondary, "SQL02 (this replica): NOT_HEALTHY, DISCONNECTED")),
			refusal:  "not healthy", detail: []string{"SQL02 (this replica): NOT_HEALTHY", "AG1"}},
		{name: "SQL Server: a primary whose secondary is down, opted in", desired: optIn,
			observed: obs(replica(RolePrimary, "SQL02: NOT_HEALTHY, DISCONNECTED")), refusal: "not healthy"},
		{name: "SQL Server: a backup running", desired: enable, observed: obs(withBackup),
			refusal: "Backup or restore running", detail: []string{"BACKUP DATABASE (session 57)", `restart = "never"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p, err := PlanApply(tc.desired, tc.observed)
			if tc.refusal != "" {
				var r *Refusal
				if !errors.As(err, &r) {
					t.Fatalf("want a refusal %q, got err=%v plan=%+v", tc.refusal, err, p)
				}
				if !strings.Contains(r.Summary, tc.refusal) {
					t.Errorf("refusal %q, want one about %q", r.Summary, tc.refusal)
				}
				for _, s := range append(tc.detail, "sql01.corp.example", "MSSQLSERVER") {
					if !strings.Contains(r.Detail, s) {
						t.Errorf("refusal detail lacks %q: %s", s, r.Detail)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("PlanApply: %v", err)
			}
			if !p.Restart {
				t.Fatalf("no restart planned: %+v", p)
			}
			for _, code := range tc.warnings {
				if !HasWarning(p.Warnings, code) {
					t.Errorf("missing plan warning %q; got %+v", code, p.Warnings)
				}
			}
			if len(p.Warnings) != len(tc.warnings) {
				t.Errorf("plan warnings %+v, want %v", p.Warnings, tc.warnings)
			}
		})
	}
}
