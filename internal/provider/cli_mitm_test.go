package provider

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/mitm"
)

// httpWinRM is the winrm arguments for the HTTP listener at port (negotiate, the
// default: NTLM for the bare user name, every message sealed).
func httpWinRM(port int) string {
	return fmt.Sprintf("    https = false\n    port  = %d", port)
}

// A host that knows no credentials answers the logon's first message, and every
// message after it, with forged successes in clear text: the apply fails naming a
// possible man-in-the-middle and the host, and the state records nothing.
func TestCLI_fakeHostApplyFails(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	addr := fmt.Sprintf("127.0.0.%d", 10+nextAddr.Add(1))
	fake := mitm.FakeHost(t, addr+":0")
	w.write(fmt.Sprintf("provider \"mssqlifi\" {\n  winrm {\n    username = %q\n    password = %q\n%s\n  }\n}\n",
		accUser, accPassword, httpWinRM(port(t, fake))) + resourceConfig(addr, ""))
	r := w.apply()
	if r.Exit == 0 {
		t.Fatalf("apply against a fake host succeeded:\n%s", r.describe())
	}
	r.wantDiag(t, "error", "", "man-in-the-middle[\\s\\S]*"+strings.ReplaceAll(addr, ".", "\\."))
	if a := w.attrs(); a != nil {
		t.Fatalf("the state records the resource after a refused answer: %v", a)
	}
}

// An on-path attacker in front of the real host forwards the logon and answers
// the sealed messages itself: the apply that would revoke fails, the state keeps
// what it had, the host is unchanged, and a plan without the attacker shows what
// the host really has (the right is still granted, so a revoke is planned).
func TestCLI_onPathProxyApplyFails(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	direct := e.winrmBlock(httpWinRM(e.httpPort), `    encrypt = "true"`)
	w.write(direct + resourceConfig(e.addr, ""))
	w.mustApply()
	before := w.attrs()
	if before["ifi_enabled"] != true || !e.holds(defaultSvcSID) {
		t.Fatalf("after the first apply: ifi_enabled %v, right held %v", before["ifi_enabled"], e.holds(defaultSvcSID))
	}
	opsBefore := len(e.operations())
	// The apply left its trace in the host's Application event log: the grant and the
	// restart, by the WinRM user, with the provider's User-Agent.
	events := e.host().EventLog()
	var changes []string
	for _, ev := range events {
		changes = append(changes, ev.Change)
		if ev.Instance != "MSSQLSERVER" || !strings.Contains(ev.Account, accUser) || !strings.HasPrefix(ev.Agent, "terraform-provider-mssqlifi/") {
			t.Errorf("event log entry %+v: want the instance, the WinRM user and the provider's User-Agent", ev)
		}
	}
	if strings.Join(changes, ",") != "grant,restart" {
		t.Fatalf("the host's event log after the apply holds %v, want a grant and a restart", changes)
	}

	p, proxy := mitm.StartProxy(t, e.addr+":0", fmt.Sprintf("%s:%d", e.addr, e.httpPort), mitm.Forge)
	w.write(e.winrmBlock(httpWinRM(port(t, proxy)), `    encrypt = "true"`) + resourceConfig(e.addr, "  enabled = false"))
	r := w.apply()
	if r.Exit == 0 {
		t.Fatalf("apply through an on-path attacker succeeded:\n%s", r.describe())
	}
	r.wantDiag(t, "error", "", "man-in-the-middle")
	if p.Sealed() == 0 {
		t.Fatal("no sealed message reached the attacker")
	}
	after := w.attrs()
	for _, k := range []string{"enabled", "ifi_enabled", "privilege_granted"} {
		if after[k] != before[k] {
			t.Errorf("the state's %s changed from %v to %v through a refused answer", k, before[k], after[k])
		}
	}
	if !e.holds(defaultSvcSID) || len(e.operations()) != opsBefore || len(e.host().EventLog()) != len(events) {
		t.Fatalf("the host changed: right held %v, operations %v (before: %d), event log %+v", e.holds(defaultSvcSID), e.operations(), opsBefore, e.host().EventLog())
	}

	w.write(direct + resourceConfig(e.addr, "  enabled = false"))
	plan := w.plan()
	plan.wantPlanExit(t, 2)
	if len(plan.Changes) != 1 || plan.Changes[0].Action != "update" {
		t.Fatalf("the plan without the attacker: changes %v, want one update (revoke)", plan.Changes)
	}
}

// negotiate when the KDC does not answer: the apply works over NTLM, and the
// apply and the plan each warn once, naming the host and the cause; INFO logs name
// the logon once per provider process; with allow_ntlm_fallback = false the plan fails.
func TestCLI_negotiateSilentKDC(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	logPath := w.dir + "/debug.log"
	w.env = append(w.env, "TF_LOG=DEBUG", "TF_LOG_PATH="+logPath)
	e, dc := adAccEnv(t)
	conf, _ := dc.Krb5ConfKDCDown(t)
	logon := fmt.Sprintf("    username = %q\n    password = %q", adAccount, adUserPass)
	cfg := e.winrmHTTPConfig(conf, "HTTP/"+e.addr, logon)
	w.write(cfg + resourceConfig(e.addr, ""))
	summary := "NTLM instead of Kerberos on " + strings.ReplaceAll(e.addr, ".", "\\.")
	apply := w.mustApply()
	// terraform apply plans and plans again before applying (the final plan, in
	// another provider process): each plan of this create says it once; the apply
	// itself does not repeat it.
	if n := len(apply.find("warning", summary, "the KDC did not answer")); n < 1 || n > 2 {
		t.Fatalf("apply: %d fallback warnings, want it from the plan (and its final plan) only:\n%s", n, apply.describe())
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	// Once per provider process: the plan's, which reads the host to predict the
	// create, and the apply's.
	if n := strings.Count(string(log), "WinRM logon mechanism of the host"); n != 2 || !strings.Contains(string(log), "the KDC did not answer") {
		t.Fatalf("the INFO log names the logon %d times (want 2, once by the plan and once by the apply, with the cause)", n)
	}
	// DEBUG names it for every operation.
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, "WinRM operation finished") && !strings.Contains(line, "logon=ntlm") {
			t.Fatalf("a DEBUG line of an operation does not name its logon: %s", line)
		}
	}
	if !strings.Contains(string(log), "WinRM operation finished") {
		t.Fatal("no DEBUG line for the operations")
	}
	// The apply recorded it: the next plan, which changes nothing, is quiet.
	plan := w.plan()
	plan.wantPlanExit(t, 0)
	plan.wantNoDiag(t, "warning", summary)

	// The hardened setting: the KDC still does not answer, so the plan fails; and a
	// bare user name has no realm, which fails at plan before any host is asked.
	hardened := replaceOnce(t, cfg, "    https     = false\n", "    https     = false\n    allow_ntlm_fallback = false\n")
	bare := replaceOnce(t, hardened, fmt.Sprintf("%q", adAccount), fmt.Sprintf("%q", adUser))
	for _, tc := range []struct{ cfg, summary, detail string }{
		{hardened, "", "did not fall back to NTLM[\\s\\S]*allow_ntlm_fallback"},
		{bare, "NTLM fallback refused", "no realm"},
	} {
		w.write(tc.cfg + resourceConfig(e.addr, ""))
		refused := w.plan()
		if refused.Exit != 1 {
			t.Fatalf("plan with allow_ntlm_fallback = false: exit %d, want 1:\n%s", refused.Exit, refused.describe())
		}
		refused.wantDiag(t, "error", tc.summary, tc.detail)
	}
}

// replaceOnce is s with old replaced by with once; old must be in s.
func replaceOnce(t *testing.T, s, old, with string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("the configuration has no %q", old)
	}
	return strings.Replace(s, old, with, 1)
}

// A host where the provider's event source cannot be registered still gets the
// change, and the apply warns that it left no trace in the event log.
func TestCLI_eventSourceDeniedWarns(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, func(hc *host.HostConfig) { hc.EventSourceDenied = true })
	w.write(e.winrmBlock(httpWinRM(e.httpPort), `    encrypt = "true"`) + resourceConfig(e.addr, ""))
	r := w.mustApply()
	r.wantDiag(t, "warning", "Change not recorded in the host's event log", "could not be written to the Application event log")
	if !e.holds(defaultSvcSID) || len(e.host().EventLog()) != 0 {
		t.Fatalf("right held %v, event log %+v; want the grant made without an entry", e.holds(defaultSvcSID), e.host().EventLog())
	}
}
