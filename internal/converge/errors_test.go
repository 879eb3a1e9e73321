package converge

import (
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// What a failed cluster action's error tells the DBA to do depends on who can still
// bring the role online: a refusal left it where it was; while the action's guard
// may still be at work, wait for it and look again; once the guard has ended without
// the role Online, bring it online by hand.
func TestClusterActionErrorAdvice(t *testing.T) {
	at := Target{Host: "sql01.corp.example", Instance: "MSSQLSERVER"}
	base := MoveResult{Mode: ifi.RestartClusterRestart, Group: "SQL Server (MSSQLSERVER)", From: "SQL01", Target: "SQL01", To: "SQL01", State: contract.ClusterOffline}
	for _, tc := range []struct {
		name    string
		move    func(m *MoveResult)
		want    []string
		mustNot []string
	}{
		{name: "refused", move: func(m *MoveResult) { m.Refused, m.To, m.State = true, "", "" },
			want:    []string{"the cluster refused the cluster restart of", "before anything was taken offline", `the role "SQL Server (MSSQLSERVER)" stays on SQL01`},
			mustNot: []string{"unknown", "Failover Cluster Manager"}},
		{name: "the guard may be at work", move: func(m *MoveResult) {},
			want: []string{"is Offline on SQL01", "The guard the action started on sql01.corp.example", "tries again a few times, for up to 2 hours", "run terraform plan in a few minutes"}},
		{name: "the guard is still at work", move: func(m *MoveResult) { m.Guard = &contract.ClusterGuardRecord{Group: m.Group} },
			want: []string{"The guard the action started on sql01.corp.example", "run terraform plan in a few minutes"}},
		{name: "the guard ended without the role Online", move: func(m *MoveResult) {
			m.Guard = &contract.ClusterGuardRecord{Finished: true, Group: m.Group, BroughtOnline: 3, Error: "the resource failed"}
		},
			want:    []string{"the guard the action started on sql01.corp.example has ended without seeing it Online (its last error: the resource failed)", "bring it online in Failover Cluster Manager"},
			mustNot: []string{"in a few minutes"}},
	} {
		m := base
		tc.move(&m)
		msg := (&Error{Kind: KindClusterActionFailed, Target: at, Move: &m}).Error()
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q; want it to say %q", tc.name, msg, w)
			}
		}
		for _, w := range tc.mustNot {
			if strings.Contains(msg, w) {
				t.Errorf("%s: %q; must not say %q", tc.name, msg, w)
			}
		}
	}
}

// An error whose kind was never set passes for no kind: the first kind is 1.
func TestErrorKindZeroIsNoKind(t *testing.T) {
	if KindHostSetup == 0 || Kind(0).String() != "kind(0)" {
		t.Errorf("KindHostSetup is %d and kind 0 reads %q; want the zero kind to be none", KindHostSetup, Kind(0).String())
	}
	msg := (&Error{Target: Target{Host: "sql01", Instance: "MSSQLSERVER"}}).Error()
	if strings.Contains(msg, "WinRM") {
		t.Errorf("an error of no kind says %q", msg)
	}
}

// The messages of the cluster's errors say what failed, and a failed cluster
// action whose outcome is unknown says so.
func TestClusterErrorMessages(t *testing.T) {
	at := Target{Host: "sql01.corp.example", Instance: "MSSQLSERVER"}
	for _, tc := range []struct {
		name string
		err  *Error
		want string
		not  string
	}{
		{"read failed", &Error{Kind: KindClusterReadFailed, Target: at}, "cannot read the failover cluster of " + at.String(), ""},
		{"no move result", &Error{Kind: KindClusterActionFailed, Target: at}, "the cluster action on " + at.String() + " failed", ""},
		{"where the role is unknown", &Error{Kind: KindClusterActionFailed, Target: at,
			Move: &MoveResult{Group: "SQL Server (MSSQLSERVER)", From: "SQL01", Target: "SQL02"}},
			`where the role "SQL Server (MSSQLSERVER)" is now is unknown; check it in Failover Cluster Manager`, "is  on"},
		{"the state known, the node not", &Error{Kind: KindClusterActionFailed, Target: at,
			Move: &MoveResult{Group: "SQL Server (MSSQLSERVER)", From: "SQL01", Target: "SQL02", State: contract.ClusterOffline}},
			`the role "SQL Server (MSSQLSERVER)" is Offline on`, "is unknown"},
		{"the node known, the state not", &Error{Kind: KindClusterActionFailed, Target: at,
			Move: &MoveResult{Group: "SQL Server (MSSQLSERVER)", From: "SQL01", Target: "SQL02", To: "SQL01"}},
			"on SQL01. The guard", "is unknown"},
	} {
		msg := tc.err.Error()
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %q; want it to say %q", tc.name, msg, tc.want)
		}
		if tc.not != "" && strings.Contains(msg, tc.not) {
			t.Errorf("%s: %q; must not say %q", tc.name, msg, tc.not)
		}
	}
}
