package ifi

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// grammarCase is one refusal ifi can produce: the function whose call of refusal
// builds it, and what its summary says.
type grammarCase struct {
	builder string
	summary string
	r       func(t *testing.T) *Refusal
}

// everyRefusal produces each refusal ifi can produce: every call of refusal in the
// package has at least one case here (TestEveryRefusalIsProduced).
func everyRefusal() []grammarCase {
	clustered := func(r *contract.ReadInstanceResult) { r.Clustered = true }
	optIn := withRestart(enable, RestartIfNeededIncludingPrimary)
	failover := withRestart(enable, RestartFailover)
	withBackup := dmv(false)
	withBackup.RunningBackups = []string{"BACKUP DATABASE (session 57)"}
	plan := func(d Desired, o Observed) func(t *testing.T) *Refusal {
		return func(t *testing.T) *Refusal { return refusalOf(t, d, o) }
	}
	// now: a restart on its own (PlanRestartNow), whose refusals keep the grammar
	// without the resource's restart argument among their ways out.
	now := func(o Observed, force bool) func(t *testing.T) *Refusal {
		return func(t *testing.T) *Refusal {
			_, _, _, err := PlanRestartNow(o, force)
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("PlanRestartNow: %v, want a refusal", err)
			}
			return r
		}
	}
	cluster := func(d Desired, mod func(f *fci)) func(t *testing.T) *Refusal {
		return func(t *testing.T) *Refusal {
			f := newFCI()
			mod(f)
			return clusterRefusal(t, d, f)
		}
	}
	return []grammarCase{
		{"roleUnknown", "Availability group role unknown: refusing to restart instance MSSQLSERVER on sql01.corp.example", plan(enable, noSQL())},
		{"roleUnknown", "Availability group role unknown: refusing to restart instance MSSQLSERVER on sql01.corp.example (failover cluster instance", cluster(failover, func(f *fci) {
			f.v = Verification{Source: SourceNone}
			f.nodes["SQL01"].HADR = nil
		})},
		{"primary", "Primary availability replica: refusing to restart it", plan(enable, obs(replica(RolePrimary)))},
		{"primary", "Primary availability replica: refusing to restart instance MSSQLSERVER on sql01.corp.example (failover", cluster(withRestart(enable, RestartClusterRestart), func(f *fci) { f.v = replica(RolePrimary) })},
		{"restartSafety", "Backup or restore running", plan(enable, obs(withBackup))},
		{"restartSafety", "Running backups unknown", plan(enable, configured(noSQL(hadrOff)))},
		{"groupHealth", "Availability group not healthy", plan(optIn, obs(replica(RolePrimary, "SQL02: NOT_HEALTHY, DISCONNECTED")))},
		{"groupHealth", "Availability group not healthy", plan(enable, obs(replica(RoleSecondary, "SQL02 (this replica): NOT_HEALTHY, DISCONNECTED")))},
		{"groupHealth", "Availability group health unknown", plan(enable, obs(replica(RoleSecondary)))},
		{"groupHealth", "Availability group not healthy", plan(enable, obs(secondary("SQL03 of AG1: NOT_HEALTHY, DISCONNECTED")))},
		{"GroupLocked", "is restarting another replica", func(*testing.T) *Refusal { return GroupLocked("sql02", "MSSQLSERVER", "IFI changed", "AG1", "SQL03") }},
		{"GroupLockUnavailable", "restart lock unavailable", func(*testing.T) *Refusal {
			return GroupLockUnavailable("sql02", "MSSQLSERVER", "IFI changed", "AG1", "SQL01", "login failed")
		}},
		{"PlanCluster", "Possible owner SQL03 of", cluster(enable, func(f *fci) { f.errs["SQL03"] = errors.New("no such host") })},
		{"PlanCluster", "is not a possible owner that could be read", cluster(withRestart(enable, RestartNever), func(f *fci) {
			f.cluster.Group.OwnerNode = "SQL03"
			f.ownedBy("SQL01", "SQL02")
		})},
		{"PlanCluster", "No node to fail", cluster(failover, func(f *fci) {
			f.v = dmv(false)
			f.ownedBy("SQL01")
		})},
		{"serviceManagerRefusal", "refusing to restart it through the service manager", cluster(enable, func(f *fci) { f.v = dmv(false) })},
		{"restartRoute", "Clustered SQL Server instance", plan(enable, obs(dmv(false), holders(svcSID), clustered))},
		{"restartRoute", "Failover cluster not read", plan(failover, obs(dmv(false), holders(svcSID), clustered))},
		{"restartRoute", `restart = "failover" is for failover cluster instances`, plan(failover, obs(dmv(false), holders(svcSID)))},
		{"policyConflictFor", "Group Policy owns the right and does not grant it", plan(enable, obs(dmv(false), gp(acctSID)))},
		{"policyConflictFor", "Group Policy owns the right and grants it", plan(disable, obs(dmv(true), gp(svcSID), holders(svcSID)))},
		{"lockPagesSteps", "The host does not report Lock pages in memory", plan(withLockPages(enable, true), obs(dmv(true), holders(svcSID)))},
		{"lockPagesClustered", "Lock pages in memory is not managed on a failover cluster instance yet",
			plan(withLockPages(enable, true), obs(dmv(true), holders(svcSID), lpHolders(), clustered))},
		{"lockPagesClustered", "Lock pages in memory is not managed on a failover cluster instance yet",
			cluster(withLockPages(enable, true), func(*fci) {})},
		{"policyConflict", "Group Policy grants the previous grantee", func(t *testing.T) *Refusal {
			d := enable
			d.PriorGranteeSID = acctSID
			return refusalOf(t, d, obs(dmv(false), holders(acctSID), gp(svcSID, acctSID)))
		}},
		{"PlanChanged", "changed since the plan", func(t *testing.T) *Refusal {
			now, err := Predict(enable, obs(dmv(false)), false)
			if err != nil {
				t.Fatal(err)
			}
			return PlanChanged("sql01", "MSSQLSERVER", ActionGrant, now)
		}},
		{"PlanRestartNow", "SQL Server not running", now(obs(dmv(false), holders(svcSID), func(r *contract.ReadInstanceResult) {
			r.ServiceState = contract.StateStopped
		}), true)},
		{"PlanRestartNow", "Clustered SQL Server instance: refusing to restart it", now(obs(dmv(false), holders(svcSID), clustered), true)},
		{"PlanRestartNow", "Pending change unknown", now(obs(Verification{Source: SourceNone}, holders(svcSID)), false)},
		{"primary", "Primary availability replica: refusing to restart it", now(obs(replica(RolePrimary), holders(svcSID)), true)},
		{"RestartNowHeld", "Restarts held by allow_restarts = false", func(*testing.T) *Refusal { return RestartNowHeld("sql01", "MSSQLSERVER") }},
		{"TwoResources", "Two resources manage one SQL Server instance", func(*testing.T) *Refusal {
			return TwoResources(`host = "b"`, `host = "a"`, ManagedInstance("sql01", "MSSQLSERVER"))
		}},
		{"TwoResources", "Two resources manage one failover cluster instance", func(*testing.T) *Refusal {
			return TwoResources(`host = "b"`, `host = "a"`, ManagedRole("CL1", "SQL Server (MSSQLSERVER)", "MSSQLSERVER", "SQLVS1"))
		}},
	}
}

// Every refusal follows the one grammar: what was asked, why not, what was left
// unchanged, and at least one way out, written as one text in that order.
func TestEveryRefusalFollowsTheGrammar(t *testing.T) {
	for _, c := range everyRefusal() {
		t.Run(c.builder+" "+c.summary, func(t *testing.T) {
			r := c.r(t)
			if !strings.Contains(r.Summary, c.summary) {
				t.Errorf("summary %q, want the refusal %q", r.Summary, c.summary)
			}
			if r.Summary == "" || r.Asked == "" || r.WhyNot == "" || r.Unchanged == "" || len(r.WaysOut) == 0 {
				t.Fatalf("a part is missing: %#v", r)
			}
			for _, w := range r.WaysOut {
				if w == "" || strings.HasSuffix(w, ".") || strings.ToLower(w[:1]) != w[:1] {
					t.Errorf("way out %q is not a lower-case clause", w)
				}
			}
			if strings.ToUpper(r.Asked[:1]) != r.Asked[:1] || strings.HasSuffix(r.WhyNot, ".") || !strings.HasPrefix(r.Unchanged, "Nothing was") ||
				!strings.HasSuffix(r.Unchanged, ".") {
				t.Errorf("asked %q, why not %q, unchanged %q: want a capitalised clause, a clause and a sentence saying what was not done", r.Asked, r.WhyNot, r.Unchanged)
			}
			want := r.Asked + ", but " + r.WhyNot + ". " + r.Unchanged + " To go on: " + strings.Join(r.WaysOut, "; or ") + "."
			if r.Detail != want || r.Error() != r.Summary+": "+want {
				t.Errorf("detail is not its parts:\n got %q\nwant %q", r.Detail, want)
			}
		})
	}
}

// Every refusal ifi can produce is built by refusal (no Refusal is written by hand),
// and each call of refusal has a case in everyRefusal, so a new refusal is checked
// against the grammar.
func TestEveryRefusalIsProduced(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	calls := map[string]int{}
	{
		for _, f := range files {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.CallExpr:
						if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "refusal" {
							calls[fd.Name.Name]++
						}
					case *ast.CompositeLit:
						if id, ok := n.Type.(*ast.Ident); ok && id.Name == "Refusal" && fd.Name.Name != "refusal" {
							t.Errorf("%s: %s writes a Refusal by hand; build it with refusal", fset.Position(n.Pos()), fd.Name.Name)
						}
					}
					return true
				})
			}
		}
	}
	cases := map[string]int{}
	for _, c := range everyRefusal() {
		cases[c.builder]++
	}
	if len(calls) == 0 {
		t.Fatal("no call of refusal found")
	}
	for fn, n := range calls {
		if cases[fn] < n {
			t.Errorf("%s calls refusal %d times but everyRefusal has %d cases of it", fn, n, cases[fn])
		}
	}
	for fn := range cases {
		if calls[fn] == 0 {
			t.Errorf("everyRefusal names %s, which does not call refusal", fn)
		}
	}
}
