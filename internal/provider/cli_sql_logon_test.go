package provider

import (
	"regexp"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// A sql block whose login SQL Server refuses, through the real terraform CLI.

// wrongSQLPassword is the provider configuration of e with a sql block password
// SQL Server refuses, and more lines added to the block.
func wrongSQLPassword(e *accEnv, lines ...string) string {
	cfg := e.providerConfig(true)
	cfg = strings.Replace(cfg, "password = \""+accSQLPass+"\"", "password = \"not-the-password\"", 1)
	return strings.Replace(cfg, "  sql {\n", "  sql {\n"+strings.Join(append(lines, ""), "\n"), 1)
}

// A wrong sql password fails the plan, the create's (the plan-time read) and the
// refresh's, naming the login, the host and instance, what to check for a SQL
// login and the way to make it a warning; the failed apply changes nothing.
func TestCLI_sqlLogonRefusedFailsThePlan(t *testing.T) {
	t.Parallel()
	e := startSim(t, nil)
	w := newCLI(t)
	detail := `^SQL Server instance MSSQLSERVER at ` + regexp.QuoteMeta(e.addr) + `:\d+: login failed for ` + accSQLUser + ` \(error 18456\)\. `
	summary := `^The sql login cannot log on to SQL Server MSSQLSERVER on ` + regexp.QuoteMeta(e.addr) + `$`
	wantRefused := func(r *tfRun) {
		t.Helper()
		d := r.wantDiag(t, "error", summary, detail)
		for _, s := range []string{"mixed mode", `sql.auth = "ntlm"`, "sql.password", "sql.optional = true", "Nothing was changed"} {
			if !strings.Contains(d.Detail, s) {
				t.Errorf("the error does not say %q: %s", s, d.Detail)
			}
		}
		r.wantNoDiag(t, "warning", "^IFI could not be verified through SQL Server$")
	}

	w.write(wrongSQLPassword(e) + resourceConfig(e.addr, ""))
	p := w.plan()
	p.wantPlanExit(t, 1)
	wantRefused(p)
	a := w.apply()
	wantRefused(a)
	for _, op := range e.operations() {
		if op == string(contract.OpSetRight) || op == string(contract.OpRestartInstance) {
			t.Errorf("the apply with a refused sql login ran %s on the host", op)
		}
	}

	// In the state: the refresh fails the same way, and the state stays.
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	w.mustApply()
	w.write(wrongSQLPassword(e) + resourceConfig(e.addr, ""))
	p = w.plan()
	p.wantPlanExit(t, 1)
	wantRefused(p)
}

// With sql.optional = true a refused login is a warning saying SQL Server refused it,
// and the plan goes on without SQL Server's answer.
func TestCLI_sqlLogonRefusedOptionalWarns(t *testing.T) {
	t.Parallel()
	e := startSim(t, nil)
	w := newCLI(t)
	w.write(wrongSQLPassword(e, "    optional = true") + resourceConfig(e.addr, ""))
	p := w.plan()
	if p.Exit == 1 {
		t.Fatalf("plan with sql.optional = true failed:\n%s", p.describe())
	}
	d := p.wantDiag(t, "warning", `^IFI could not be verified through SQL Server$`,
		`SQL Server answered for instance MSSQLSERVER on `+regexp.QuoteMeta(e.addr)+` at `+regexp.QuoteMeta(e.addr)+`:\d+ and refused the SQL login; `+
			`as SQL verification is optional, verification falls back to the error log\.`)
	if !strings.Contains(d.Detail, "login failed for "+accSQLUser+" (error 18456)") || strings.Contains(d.Detail, "not-the-password") {
		t.Errorf("the warning does not give SQL Server's answer (or gives the password): %s", d.Detail)
	}
	p.wantNoDiag(t, "error", "")
}

// A wrong sql password on a host with three instances: each instance's plan fails,
// but the full error (what to check, the login kinds, sql.optional) is given once;
// the others give SQL Server's answer and name the instance whose error has it.
func TestCLI_sqlLogonRefusedOncePerHost(t *testing.T) {
	t.Parallel()
	e := startSim(t, fleetHost(3, 100, 100))
	w := newCLI(t)
	w.write(wrongSQLPassword(e) + fleetConfig(e.addr, 3, "if_needed", func(int) bool { return true }))
	p := w.plan()
	p.wantPlanExit(t, 1)
	refused := p.find("error", `^The sql login cannot log on to SQL Server I0\d on `+regexp.QuoteMeta(e.addr)+`$`,
		`login failed for `+accSQLUser+` \(error 18456\)`)
	full := p.find("error", "", `mixed mode(.|\n)*sql.optional = true`)
	if len(refused) != 3 || len(full) != 1 {
		t.Fatalf("%d refused-login errors (want 3), %d with the full advice (want 1):\n%s", len(refused), len(full), p.describe())
	}
	first := regexp.MustCompile(`SQL Server (I0\d) on`).FindStringSubmatch(full[0].Summary)[1]
	if n := len(p.find("error", "", regexp.QuoteMeta(sqlLogonAdviceGiven(first)))); n != 2 {
		t.Errorf("%d errors name %s's for the advice; want the other 2:\n%s", n, first, p.describe())
	}
	for _, d := range refused {
		if d != full[0] && (strings.Count(d.Detail, "\n") > 1 || len(d.Detail) > 400) {
			t.Errorf("a short error is %d characters: %s", len(d.Detail), d.Detail)
		}
	}
}
