package ifi

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// What a DBA reads in the plan: one warning per instance that the apply changes,
// naming the host and the instance in its summary (Terraform folds warnings with
// equal summaries), and the action planned_action reports.
func TestPredict(t *testing.T) {
	running := func(r *contract.ReadInstanceResult) {
		r.Dependents = []contract.ServiceInfo{{Name: "SQLSERVERAGENT", State: contract.StateRunning}, {Name: "MSSQLFDLauncher", State: "Stopped"}}
	}
	tests := []struct {
		name    string
		d       Desired
		o       Observed
		drift   bool
		action  Action
		summary string // regexp; "" = no warning
		detail  string // regexp
	}{
		{"nothing to do", enable, obs(dmv(true), holders(svcSID)), false, ActionNone, "", ""},
		{"grant and restart, with the running dependents", enable, obs(dmv(false), running), false, ActionGrantAndRestart,
			`^instance MSSQLSERVER on sql01\.corp\.example: apply grants the right and restarts SQL Server \(MSSQLSERVER\): ` +
				`unavailable for typically at least 30 s$`,
			`grants "Perform volume maintenance tasks" to NT SERVICE\\MSSQLSERVER .*restarts the service MSSQLSERVER with SQLSERVERAGENT \(the running Engine has IFI off` +
				`.*unavailable while it restarts: typically at least 30 s, longer while SQL Server recovers large databases \(this provider has not timed a restart`},
		{"grant and restart, timed by the last restart", withLastRestart(enable, 42), obs(dmv(false)), false, ActionGrantAndRestart,
			`: apply grants the right and restarts SQL Server \(MSSQLSERVER\): unavailable for about 42 s$`,
			`unavailable for about 42 s: its last restart by this provider \(2026-11-30T22:15:00Z\) took 42 s from the restart request to SQL Server accepting connections`},
		{"grant again, no restart: the running Engine still has IFI", enable, obs(dmv(true)), true, ActionGrant,
			`^Changed outside Terraform: instance MSSQLSERVER on sql01\.corp\.example: apply grants the right, no restart$`,
			`NT SERVICE\\MSSQLSERVER no longer holds the right \(revoked outside Terraform\).*with no restart: the running Engine already has IFI on, as asked`},
		{"restart only: pending", enable, obs(dmv(false), holders(svcSID)), true, ActionRestart,
			`: apply restarts SQL Server \(MSSQLSERVER\): unavailable for typically at least 30 s$`, `a restart is pending: the running Engine has IFI off and its next start gives it on`},
		{"revoke and restart", disable, obs(dmv(true), holders(svcSID)), false, ActionRevokeAndRestart,
			`apply revokes the right and restarts SQL Server`, `revokes "Perform volume maintenance tasks" from NT SERVICE\\MSSQLSERVER`},
		{"revoke, restart never", withRestart(disable, RestartNever), obs(dmv(true), holders(svcSID)), false, ActionRevoke,
			`apply revokes the right, no restart$`, `restart = "never"; the running Engine keeps IFI on until its next restart`},
		{"refuse: primary replica", enable, obs(Verification{Source: SourceSQLDMV, Enabled: ptr(false), AG: &AGMembership{Groups: []string{"AG1"}, Role: RolePrimary},
			RunningBackups: []string{}}), false, ActionRefuse,
			`apply will refuse: Primary availability replica: refusing to restart it$`, `primary replica of the Always On availability group AG1`},
		{"refuse: role unknown", enable, obs(Verification{Source: SourceErrorLog, Enabled: ptr(false)}), false, ActionRefuse,
			`apply will refuse: Availability group role unknown`, `cannot tell whether it is the primary replica.*To go on`},
		{"refuse: Group Policy", enable, obs(dmv(false), gp(acctSID)), true, ActionRefuse,
			`^Changed outside Terraform: .*apply will refuse: Group Policy owns the right and does not grant it$`,
			`a Group Policy defines the right.*at least every 16 hours`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Predict(tc.d, tc.o, tc.drift)
			if err != nil {
				t.Fatal(err)
			}
			if p.Action != tc.action {
				t.Errorf("Action = %q; want %q", p.Action, tc.action)
			}
			// The prediction is the apply's decision: ActionOf(PlanApply) on the same observation.
			if a, pl, err := PlanApply(tc.d, tc.o); ActionOf(a, pl, err) != p.Action {
				t.Errorf("PlanApply's action %q differs from the prediction %q", ActionOf(a, pl, err), p.Action)
			}
			if tc.summary == "" {
				if p.Warning != (Warning{}) {
					t.Errorf("warning %+v; want none", p.Warning)
				}
				return
			}
			if !regexp.MustCompile(tc.summary).MatchString(p.Warning.Summary) {
				t.Errorf("summary %q; want %s", p.Warning.Summary, tc.summary)
			}
			if !regexp.MustCompile(tc.detail).MatchString(p.Warning.Detail) {
				t.Errorf("detail %q; want %s", p.Warning.Detail, tc.detail)
			}
			if strings.Contains(p.Warning.Detail, "90 minutes") {
				t.Errorf("detail %q: Group Policy's security settings refresh at a policy change and at least every 16 hours", p.Warning.Detail)
			}
		})
	}
}

// The apply refuses a host that changed since the plan, saying what it would do
// now and what to do next.
func TestPlanChanged(t *testing.T) {
	now, err := Predict(enable, obs(dmv(false)), false)
	if err != nil {
		t.Fatal(err)
	}
	r := PlanChanged("sql01", "MSSQLSERVER", ActionGrant, now)
	if !strings.Contains(r.Summary, "instance MSSQLSERVER on sql01 changed since the plan: apply would grant_and_restart, the plan said grant") {
		t.Errorf("summary %q", r.Summary)
	}
	for _, want := range []string{"Nothing was changed", "run terraform plan again", "restarts the service MSSQLSERVER"} {
		if !strings.Contains(r.Detail, want) {
			t.Errorf("detail %q lacks %q", r.Detail, want)
		}
	}
}

// Every action is documented and named once.
func TestActionsAreDistinct(t *testing.T) {
	seen := map[Action]bool{}
	for _, a := range Actions {
		if seen[a] || !regexp.MustCompile(`^[a-z_]+$`).MatchString(string(a)) {
			t.Errorf("action %q repeated or not a lower-case word", a)
		}
		seen[a] = true
	}
	for _, a := range []Action{ActionGrantAndRestart, ActionRevokeAndRestart, ActionRestart} {
		if !a.Restarts() {
			t.Errorf("%q.Restarts() = false", a)
		}
	}
}

func withLastRestart(d Desired, seconds int) Desired {
	d.LastRestart = &MeasuredRestart{At: time.Date(2026, 11, 30, 22, 15, 0, 0, time.UTC), Seconds: seconds}
	return d
}

// The timing the plan quotes is the restart's, rounded to whole seconds, never 0.
func TestMeasureRestart(t *testing.T) {
	at := time.Date(2026, 11, 30, 22, 15, 0, 0, time.UTC)
	for _, tc := range []struct {
		took time.Duration
		want int // 0: nil
	}{{0, 0}, {-time.Second, 0}, {200 * time.Millisecond, 1}, {41600 * time.Millisecond, 42}, {42 * time.Second, 42}} {
		m := MeasureRestart(at, at.Add(tc.took))
		switch {
		case tc.want == 0 && m != nil:
			t.Errorf("%s: %+v; want none", tc.took, m)
		case tc.want != 0 && (m == nil || m.Seconds != tc.want || !m.At.Equal(at)):
			t.Errorf("%s: %+v; want %d s at %s", tc.took, m, tc.want, at)
		}
	}
}

// The prediction's detail in a DBA's words: the steps, joined to the restart with
// ", and " only when there are steps; the grantee by name; no dependents' phrase
// when no dependent runs.
func TestPredictDetailWords(t *testing.T) {
	account := Desired{Enabled: true, Grantee: GranteeServiceAccount, Restart: RestartIfNeeded}
	for _, tc := range []struct {
		name   string
		d      Desired
		o      Observed
		detail string // the start of the detail
	}{
		{"restart only", enable, obs(dmv(false), holders(svcSID)),
			"The apply restarts the service MSSQLSERVER (the running Engine has IFI off"},
		{"grant and restart", enable, obs(dmv(false)),
			"The apply grants \"Perform volume maintenance tasks\" to NT SERVICE\\MSSQLSERVER (enabled = true and the grantee lacks the right), " +
				"and restarts the service MSSQLSERVER (the running Engine has IFI off"},
		{"the start account by name", account, obs(dmv(false)),
			"The apply grants \"Perform volume maintenance tasks\" to CORP\\svc-sql (" + acctSID + ") (enabled = true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Predict(tc.d, tc.o, false)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(p.Warning.Detail, tc.detail) {
				t.Errorf("detail %q; want it to start %q", p.Warning.Detail, tc.detail)
			}
		})
	}
}

// With no plan, nothing is done; only a refusal is ActionRefuse.
func TestActionOfNoPlan(t *testing.T) {
	if got := ActionOf(nil, nil, nil); got != ActionNone {
		t.Errorf("ActionOf(no plan) = %q; want %q", got, ActionNone)
	}
	if got := ActionOf(nil, nil, &Refusal{Summary: "no"}); got != ActionRefuse {
		t.Errorf("ActionOf(refusal) = %q; want %q", got, ActionRefuse)
	}
}

// An observation that cannot be assessed is an error, not a prediction of nothing.
func TestPredictFailsWhenTheInstanceCannotBeAssessed(t *testing.T) {
	o := obs(dmv(true), func(r *contract.ReadInstanceResult) { r.StartAccount, r.StartAccountSID = `CORP\gone`, "" })
	p, err := Predict(Desired{Enabled: true, Grantee: GranteeServiceAccount, Restart: RestartIfNeeded}, o, false)
	if err == nil || !strings.Contains(err.Error(), `grantee = "service_sid"`) || p.Action != "" {
		t.Fatalf("Predict = %+v, %v; want the assessment's error", p, err)
	}
}

// The plan's own warnings (here: a restart whose availability group role is
// unknown, backups not checked) come with the prediction.
func TestPredictCarriesThePlanWarnings(t *testing.T) {
	p, err := Predict(withRestart(enable, RestartIfNeededIncludingPrimary), obs(Verification{Source: SourceErrorLog, Enabled: ptr(false)}), false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Action != ActionGrantAndRestart || !HasWarning(p.PlanWarnings, WarnAGUnknown) || !HasWarning(p.PlanWarnings, WarnBackupsUnchecked) {
		t.Errorf("action %q, plan warnings %+v; want grant_and_restart with %s and %s", p.Action, p.PlanWarnings, WarnAGUnknown, WarnBackupsUnchecked)
	}
}

// A drift's "why" names what changed outside Terraform: the right granted again,
// a restart pending only when no grant or revoke explains the change, and the start
// account only when the grantee is the service account.
func TestPredictDriftFacts(t *testing.T) {
	account := Desired{Enabled: true, Grantee: GranteeServiceAccount, Restart: RestartIfNeeded}
	for _, tc := range []struct {
		name    string
		d       Desired
		o       Observed
		want    []string
		wantNot []string
	}{
		{"granted outside Terraform, the Engine still without", disable, obs(dmv(false), holders(svcSID)),
			[]string{`changed the instance: NT SERVICE\MSSQLSERVER holds the right again (granted outside Terraform). The apply revokes`},
			[]string{"a restart is pending", "the service starts as"}},
		{"revoked outside Terraform", enable, obs(dmv(true), holders(adminSID)),
			[]string{`changed the instance: NT SERVICE\MSSQLSERVER no longer holds the right (revoked outside Terraform). The apply grants`},
			[]string{"a restart is pending", "the service starts as"}},
		{"a restart pending", disable, obs(dmv(true)),
			[]string{"changed the instance: a restart is pending: the running Engine has IFI on and its next start gives it off. The apply restarts"},
			[]string{"the service starts as"}},
		{"the service account", account, obs(dmv(true)),
			[]string{`changed the instance: CORP\svc-sql (` + acctSID + `) no longer holds the right (revoked outside Terraform); the service starts as CORP\svc-sql. The apply grants`},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Predict(tc.d, tc.o, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(p.Warning.Detail, w) {
					t.Errorf("detail %q lacks %q", p.Warning.Detail, w)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(p.Warning.Detail, w) {
					t.Errorf("detail %q has %q", p.Warning.Detail, w)
				}
			}
		})
	}
}
