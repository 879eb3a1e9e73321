package provider

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
)

// The mssqlifi_restart action at the protocol level (InvokeAction, as Terraform
// 1.14 calls it), against the simulator.

// grantOutside grants the right to the default instance's service SID on e's host
// as someone outside Terraform (or an apply with restart = "never") would: the
// running Engine does not have it until it restarts.
func grantOutside(t *testing.T, e *accEnv) {
	t.Helper()
	if err := e.sim.Do(e.name, winsim.Action{Action: winsim.ActionGrantRight, Right: contract.RightManageVolume, SID: defaultSvcSID}); err != nil {
		t.Fatal(err)
	}
}

func wantProgress(t *testing.T, progress []string, re string) {
	t.Helper()
	rx := regexp.MustCompile(re)
	for _, m := range progress {
		if rx.MatchString(m) {
			return
		}
	}
	t.Errorf("no progress message matches %s; the messages:\n%s", re, strings.Join(progress, "\n"))
}

// A grant pending its restart: the action restarts the Engine through the
// engine's restart path, saying what it does as it goes; asked again, it says no
// restart is needed and restarts nothing, unless force = true.
func TestRestartAction_restartsPendingGrant(t *testing.T) {
	t.Parallel()
	e := startSim(t, nil)
	grantOutside(t, e)
	p := newProtoProvider(t, e, true)
	before := e.engineStart()
	n := len(e.operations())

	progress, diags := p.invokeRestart(map[string]any{"host": e.addr})
	if errs := protoErrors(diags); errs != "" {
		t.Fatalf("the action failed: %s", errs)
	}
	if after := e.engineStart(); !after.After(before) {
		t.Fatalf("the Engine did not restart: started %v, was %v", after, before)
	}
	if ops := e.opsSince(n); countOp(ops, contract.OpRestartInstance) != 1 {
		t.Errorf("operations %v, want one restart_instance (the host-side restart and its guard)", ops)
	}
	wantProgress(t, progress, `^instance MSSQLSERVER on `+regexp.QuoteMeta(e.addr)+`: restart needed: the running Engine has IFI off and its next start gives it on$`)
	wantProgress(t, progress, `: restarting SQL Server$`)
	wantProgress(t, progress, `: restart done$`)

	// Nothing pending now: nothing is restarted, and the action says so.
	before = e.engineStart()
	progress, diags = p.invokeRestart(map[string]any{"host": e.addr, "instance": "MSSQLSERVER"})
	if errs := protoErrors(diags); errs != "" {
		t.Fatalf("the action failed: %s", errs)
	}
	if w := protoDiags(diags, tfprotov6.DiagnosticSeverityWarning); !regexp.MustCompile(`^No restart needed: No restart is needed on instance MSSQLSERVER on .*IFI on, as its next start gives it \(verified by sql_dmv\).*Nothing was changed; set force = true`).MatchString(w) {
		t.Errorf("warnings %q, want No restart needed", w)
	}
	wantProgress(t, progress, `^No restart is needed on instance MSSQLSERVER`)
	if after := e.engineStart(); !after.Equal(before) {
		t.Errorf("a restart not needed restarted the Engine: started %v, was %v", after, before)
	}

	// force = true restarts all the same.
	_, diags = p.invokeRestart(map[string]any{"host": e.addr, "force": true})
	if errs := protoErrors(diags); errs != "" {
		t.Fatalf("the forced action failed: %s", errs)
	}
	if after := e.engineStart(); !after.After(before) {
		t.Errorf("force = true did not restart the Engine")
	}
}

// The refusals of the resource's restart are the action's: a primary replica, a
// backup running. Each changes nothing, and names no resource argument as its
// way out.
func TestRestartAction_refusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		primary bool
		backup  bool
		summary string
		detail  string
	}{
		{name: "primary", primary: true, summary: `^Primary availability replica: refusing to restart it$`,
			detail: `(?s)primary replica of the Always On availability group AG1.*Nothing was changed.*FAILOVER`},
		{name: "backup", backup: true, summary: `^Backup or restore running: refusing to restart instance MSSQLSERVER on `,
			detail: `(?s)BACKUP DATABASE.*Nothing was changed.*invoke the action again \(terraform apply -invoke=action\.mssqlifi_restart\.NAME\) when it has finished`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var e *accEnv
			if tc.primary {
				e = startSim(t, agPrimaryHost())
			} else {
				e = startSim(t, nil)
			}
			grantOutside(t, e)
			if tc.backup {
				if err := e.sim.Do(e.name, winsim.Action{Action: winsim.ActionStartBackup, Instance: "MSSQLSERVER"}); err != nil {
					t.Fatal(err)
				}
			}
			p := newProtoProvider(t, e, true)
			before, n := e.engineStart(), len(e.operations())
			for _, force := range []bool{false, true} {
				_, diags := p.invokeRestart(map[string]any{"host": e.addr, "force": force})
				var refused *tfprotov6.Diagnostic
				for _, d := range diags {
					if d.Severity == tfprotov6.DiagnosticSeverityError && regexp.MustCompile(tc.summary).MatchString(d.Summary) {
						refused = d
					}
				}
				if refused == nil {
					t.Fatalf("force = %t: no error %s; diagnostics: %s", force, tc.summary, protoErrors(diags))
				}
				if !regexp.MustCompile(tc.detail).MatchString(refused.Detail) {
					t.Errorf("force = %t: detail %q, want %s", force, refused.Detail, tc.detail)
				}
				if strings.Contains(refused.Detail, "restart = ") {
					t.Errorf("force = %t: the refusal names the resource's restart argument, which the action does not read: %q", force, refused.Detail)
				}
			}
			if after := e.engineStart(); !after.Equal(before) {
				t.Errorf("the refused action restarted the Engine: started %v, was %v", after, before)
			}
			if ops := e.opsSince(n); countOp(ops, contract.OpRestartInstance) != 0 {
				t.Errorf("operations %v, want no restart_instance", ops)
			}
		})
	}
}
