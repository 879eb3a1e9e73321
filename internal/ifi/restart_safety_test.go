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
	v.SQLConfigured = true
	v.AG = &AGMembership{Groups: []string{"AG1"}, Role: role, Unhealthy: unhealthy}
	return v
}

// secondary is a secondary of AG1 whose primary SQL01 answered, seeing unhealthy.
func secondary(unhealthy ...string) Verification {
	v := replica(RoleSecondary)
	v.AG.FromPrimary = []GroupView{{Group: "AG1", Primary: `SQL01`, Address: "sql01:1433", Unhealthy: unhealthy}}
	return v
}

// withView is v whose group's primary answered view.
func withView(v Verification, view GroupView) Verification {
	v.AG.FromPrimary = []GroupView{view}
	return v
}

// configured is v (SQL Server did not answer) from a provider with a sql block.
func configured(o Observed) Observed {
	o.Verification.SQLConfigured = true
	return o
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
		{name: "SQL Server: a secondary whose primary sees every replica HEALTHY", desired: enable, observed: obs(secondary())},
		{name: "SQL Server: a secondary whose primary was not asked", desired: enable, observed: obs(replica(RoleSecondary)),
			refusal: "Availability group health unknown", detail: []string{"AG1", "only the primary replica sees", "availability_replica_addresses",
				"Nothing was changed", `restart = "never"`}},
		{name: "SQL Server: a secondary whose primary could not be asked", desired: enable,
			observed: obs(withView(replica(RoleSecondary), GroupView{Group: "AG1", Primary: "SQL01", Address: "sql01:1433", Err: "login timed out at sql01:1433"})),
			refusal:  "Availability group health unknown", detail: []string{"login timed out at sql01:1433"}},
		{name: "SQL Server: a secondary whose primary sees another secondary down", desired: enable,
			observed: obs(secondary("SQL03 of AG1: NOT_HEALTHY, DISCONNECTED")),
			refusal:  "Availability group not healthy", detail: []string{"as its primary SQL01 sees it", "SQL03 of AG1: NOT_HEALTHY, DISCONNECTED"}},
		{name: "SQL Server: a secondary of a group another view is of", desired: enable,
			observed: obs(withView(replica(RoleSecondary), GroupView{Group: "AG2", Primary: "SQL09"})),
			refusal:  "Availability group health unknown", detail: []string{"did not ask the group's primary"}},
		{name: "a sql block whose answer is missing: backups unknown", desired: enable, observed: configured(noSQL(hadrOff)),
			refusal: "Running backups unknown", detail: []string{"VIEW SERVER STATE", "sys.dm_exec_requests", "Nothing was changed", `restart = "never"`}},
		{name: "a sql block whose answer is missing, opted in: backups unknown", desired: optIn, observed: configured(noSQL(hadrOff)),
			refusal: "Running backups unknown"},
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
			refusal:  "not healthy", detail: []string{"SQL02 (this replica): NOT_HEALTHY", "AG1", "as this replica sees it"}},
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

// The group lock's refusals name the group and the replica being restarted, and
// follow the one grammar: what was asked, why not, what was left, the ways out.
func TestGroupLockRefusals(t *testing.T) {
	for _, tc := range []struct {
		r    *Refusal
		want []string
	}{
		{GroupLocked("sql02", "MSSQLSERVER", "IFI changed", "AG1", `SQL03`),
			[]string{"Availability group AG1 is restarting another replica", "instance MSSQLSERVER on sql02", "IFI changed", "its replica SQL03",
				"another run", "one replica of a group restarts at a time", "Nothing was stopped", "To go on: apply again", `restart = "never"`}},
		{GroupLocked("sql02", "MSSQLSERVER", "IFI changed", "AG1", ""), []string{"another of its replicas"}},
		{GroupLockUnavailable("sql02", "MSSQLSERVER", "IFI changed", "AG1", `SQL01`, "login failed"),
			[]string{"restart lock unavailable", "primary SQL01", "login failed", "availability_replica_addresses", "Nothing was stopped"}},
	} {
		text := tc.r.Summary + ": " + tc.r.Detail
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%q lacks %q", text, w)
			}
		}
		if !strings.Contains(tc.r.Detail, ", but ") {
			t.Errorf("%q does not say why not", tc.r.Detail)
		}
	}
}

// The refusal of a primary names the group to fail over; without a group name, "group".
func TestPrimaryRefusalNamesTheGroupToFailOver(t *testing.T) {
	for _, c := range []struct {
		groups []string
		want   string
	}{{[]string{"AG1"}, "ALTER AVAILABILITY GROUP [AG1]"}, {[]string{"AG1", "AG2"}, "[AG1]"}, {[]string{}, "ALTER AVAILABILITY GROUP [group]"}} {
		v := replica(RolePrimary)
		v.AG.Groups = c.groups
		if r := refusalOf(t, enable, obs(v)); !strings.Contains(r.Detail, c.want) {
			t.Errorf("groups %v: detail lacks %q: %s", c.groups, c.want, r.Detail)
		}
	}
}

func TestRoleUnknownSaysWhy(t *testing.T) {
	for name, c := range map[string]struct {
		mod  func(*contract.ReadInstanceResult)
		says string
	}{
		"no write time": {func(r *contract.ReadInstanceResult) {
			r.ProcessStartTime = &engineStart
			r.HADR = &contract.HADRInfo{KeyFound: true, Enabled: intp(0)}
		}, "the time HADR_Enabled was written, or the Engine's start, is unknown"},
		"no Engine start": {func(r *contract.ReadInstanceResult) {
			r.ProcessStartTime = nil
			r.HADR = &contract.HADRInfo{KeyFound: true, Enabled: intp(0), KeyWritten: &beforeStart}
		}, "the time HADR_Enabled was written, or the Engine's start, is unknown"},
		"the host's detail": {func(r *contract.ReadInstanceResult) {
			r.ProcessStartTime = &engineStart
			r.HADR = &contract.HADRInfo{KeyFound: true, Enabled: intp(1), KeyWritten: &beforeStart, Detail: "cluster WMI: access denied"}
		}, "HADR_Enabled is 1 (Always On is enabled); cluster WMI: access denied"},
	} {
		r := refusalOf(t, enable, noSQL(c.mod))
		if !strings.Contains(r.Detail, c.says) {
			t.Errorf("%s: detail lacks %q: %s", name, c.says, r.Detail)
		}
	}
}

// Health counts only for a replica of a group.
func TestUnhealthyCountsOnlyInAGroup(t *testing.T) {
	v := dmv(false)
	v.AG = &AGMembership{Groups: []string{}, Unhealthy: []string{"stale"}}
	if _, p := planOf(t, enable, obs(v)); !p.Restart {
		t.Error("an instance in no group is refused for health")
	}
}

func TestBeforeAlwaysOn(t *testing.T) {
	for v, want := range map[string]bool{"10.50.6000.34": true, "9.0.5000": true, "1.0": true, "11.0.2100.60": false,
		"16.0.4135.4": false, "0.1": false, "": false, "x.1": false, "-5.0": false} {
		if got := beforeAlwaysOn(v); got != want {
			t.Errorf("beforeAlwaysOn(%q) = %v", v, got)
		}
	}
}
