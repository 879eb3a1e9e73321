package ifi

import (
	"errors"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// A restart on its own (the mssqlifi_restart action) restarts when a change is
// pending or force says so, by the rules of an apply's restart, and its refusals
// name no resource argument as a way out.
func TestPlanRestartNow(t *testing.T) {
	withBackup := dmv(false)
	withBackup.RunningBackups = []string{"BACKUP DATABASE (session 57)"}
	stopped := func(r *contract.ReadInstanceResult) { r.ServiceState = contract.StateStopped }
	clustered := func(r *contract.ReadInstanceResult) { r.Clustered = true }
	for _, tc := range []struct {
		name      string
		observed  Observed
		force     bool
		reason    string // the restart's reason contains it; "" = no restart
		notNeeded string // the not-needed message contains it
		refusal   string // a refusal's summary contains it
		again     string // the refusal's detail contains it
	}{
		{name: "a grant pending", observed: obs(dmv(false), holders(svcSID)),
			reason: "the running Engine has IFI off and its next start gives it on"},
		{name: "a revoke pending", observed: obs(dmv(true)),
			reason: "the running Engine has IFI on and its next start gives it off"},
		{name: "nothing pending", observed: obs(dmv(true), holders(svcSID)),
			notNeeded: "No restart is needed on instance MSSQLSERVER on sql01.corp.example: the running Engine has IFI on, as its next start gives it (verified by sql_dmv)"},
		{name: "nothing pending, forced", observed: obs(dmv(true), holders(svcSID)), force: true,
			reason: "force = true, although no change is pending"},
		{name: "pending unknown", observed: obs(Verification{Source: SourceNone}, holders(svcSID)),
			refusal: "Pending change unknown: refusing to restart instance MSSQLSERVER"},
		{name: "pending unknown, forced", observed: obs(Verification{Source: SourceNone}, holders(svcSID), hadrOff), force: true,
			reason: "force = true, although whether a change is pending is unknown"},
		{name: "a primary replica", observed: obs(replica(RolePrimary), holders(svcSID)), force: true,
			refusal: "Primary availability replica: refusing to restart it"},
		{name: "a group not healthy", observed: obs(secondary("SQL03: NOT_HEALTHY"), holders(svcSID)),
			refusal: "Availability group not healthy",
			again:   "HEALTHY (sys.dm_hadr_availability_replica_states on the primary), then invoke the action again"},
		{name: "a secondary whose primary was not asked", observed: obs(replica(RoleSecondary), holders(svcSID)),
			refusal: "Availability group health unknown"},
		{name: "a backup running", observed: obs(withBackup, holders(svcSID)), force: true,
			refusal: "Backup or restore running: refusing to restart",
			again:   "invoke the action again (terraform apply -invoke=action.mssqlifi_restart.NAME) when it has finished"},
		{name: "the role unknown", observed: noSQL(holders(svcSID)),
			refusal: "Availability group role unknown"},
		{name: "stopped", observed: obs(dmv(false), holders(svcSID), stopped), force: true,
			refusal: "SQL Server not running"},
		{name: "clustered", observed: obs(dmv(false), holders(svcSID), clustered), force: true,
			refusal: "Clustered SQL Server instance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p, notNeeded, err := PlanRestartNow(tc.observed, tc.force)
			if tc.refusal != "" {
				var r *Refusal
				if !errors.As(err, &r) || !strings.Contains(r.Summary, tc.refusal) {
					t.Fatalf("got %v, want a refusal %q", err, tc.refusal)
				}
				if strings.Contains(r.Detail, "restart = \"never\"") || strings.Contains(r.Detail, "if_needed_including_primary") ||
					!strings.Contains(r.Detail, "Nothing was changed") {
					t.Errorf("the refusal's detail %q names a resource argument as a way out, or not what stays unchanged", r.Detail)
				}
				// The action's next run is its own invocation, not an apply.
				if strings.Contains(r.Detail, "apply again") || tc.again != "" && !strings.Contains(r.Detail, tc.again) {
					t.Errorf("the refusal's detail %q says apply again, or not %q", r.Detail, tc.again)
				}
				return
			}
			if err != nil {
				t.Fatalf("PlanRestartNow: %v", err)
			}
			if len(p.Steps) != 0 {
				t.Errorf("steps %v, want none: a restart on its own changes no right", p.Steps)
			}
			if p.Restart != (tc.reason != "") || !strings.Contains(p.RestartReason, tc.reason) {
				t.Errorf("restart %t (%q), want %t (%q)", p.Restart, p.RestartReason, tc.reason != "", tc.reason)
			}
			if !strings.Contains(notNeeded, tc.notNeeded) || (notNeeded == "") != (tc.notNeeded == "") {
				t.Errorf("not needed %q, want %q", notNeeded, tc.notNeeded)
			}
		})
	}
}
