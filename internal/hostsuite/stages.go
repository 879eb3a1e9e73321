package hostsuite

import (
	"context"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

func (s *Suite) planRead() []string {
	return []string{
		"terraform plan (real CLI, provider from -provider-dir through dev_overrides) of the data source " + dataAddr + " and the resource " + resAddr + " (restart = \"if_needed\"): reads only, applies nothing",
		"check the data source's service_sid and privilege_granted against the preflight's LSA read, and show the resource's planned_action",
	}
}

// read: the data source and a plan for the resource, with the real terraform CLI.
func (s *Suite) read(ctx context.Context) {
	tf, err := s.terraformCLI()
	if err != nil {
		s.p.fail("terraform", "%v", err)
		return
	}
	if err := tf.write(s.config(&resourceSpec{restart: "if_needed", enabled: true})); err != nil {
		s.p.fail("terraform", "%v", err)
		return
	}
	s.p.about("terraform plan of %s and %s (restart = \"if_needed\"); nothing is applied", dataAddr, resAddr)
	p, code, out, err := s.tf.plan(ctx)
	if err != nil || p == nil {
		s.p.fail("plan", "terraform plan %s", tfOutcome(code, err, out))
		return
	}
	d := p.data(dataAddr)
	if d == nil {
		s.p.fail("data source", "the plan holds no %s", dataAddr)
		return
	}
	sid, _ := d["service_sid"].(string)
	granted, _ := d["privilege_granted"].(bool)
	switch {
	case !strings.EqualFold(sid, s.serviceSID):
		s.p.fail("data source", "service_sid %q, but the service %s has SID %s", sid, s.before.ServiceName, s.serviceSID)
	case granted != s.initialHolds():
		s.p.fail("data source", "privilege_granted %t, but the LSA read %t", granted, s.initialHolds())
	default:
		s.p.pass("data source", "service_sid %s, privilege_granted %t, ifi_enabled %v (verified_by %v), sql_version %v",
			sid, granted, d["ifi_enabled"], d["verified_by"], d["sql_version"])
	}
	actions, after := p.change(resAddr)
	if len(actions) != 1 || actions[0] != "create" {
		s.p.fail("resource plan", "terraform plans %v for %s; expected create", actions, resAddr)
		return
	}
	s.p.pass("resource plan", "create, planned_action %v (what an apply with restart = \"if_needed\" would do)", after["planned_action"])
}

func (s *Suite) planChange() []string {
	return []string{
		"terraform apply with restart = \"never\": grant " + contract.RightManageVolume + " to the service SID (revoke it instead when the preflight found it held); nothing restarts",
		"check the holders through the LSA (read_instance) and that the next plan is empty",
		"terraform apply with restart = \"never\": the opposite change, leaving the right as the preflight found it; check the LSA and the plan again",
		"terraform state rm: forget the resource (a destroy would change the right once more)",
	}
}

// change: grant and revoke with restart = "never", checked through the LSA and the
// plan; the right ends as the preflight found it.
func (s *Suite) change(ctx context.Context) {
	if _, err := s.terraformCLI(); err != nil {
		s.p.fail("terraform", "%v", err)
		return
	}
	orig := s.initialHolds()
	for _, want := range []bool{!orig, orig} {
		if !s.applyAndCheck(ctx, resourceSpec{restart: "never", enabled: want}) {
			return
		}
	}
	s.forget(ctx)
}

func grantWord(grant bool) string {
	if grant {
		return "grant"
	}
	return "revoke"
}

// applyAndCheck applies the resource, then checks the LSA and the next plan.
func (s *Suite) applyAndCheck(ctx context.Context, spec resourceSpec) bool {
	word := grantWord(spec.enabled)
	if err := s.tf.write(s.config(&spec)); err != nil {
		s.p.fail(word, "%v", err)
		return false
	}
	s.p.about("terraform apply: %s %s for %s with restart = %q", word, contract.RightManageVolume, s.serviceSID, spec.restart)
	out, code, err := s.tf.run(ctx, "apply", "-auto-approve", "-no-color", "-input=false")
	if err != nil || code != 0 {
		s.p.fail(word, "terraform apply %s", tfOutcome(code, err, out))
		return false
	}
	s.p.pass(word, "terraform apply with restart = %q finished", spec.restart)
	return s.checkLSA(ctx, word+" (lsa)", spec.enabled) && s.checkEmptyPlan(ctx, word+" (plan)")
}

// checkLSA reads the holders back through read_instance.
func (s *Suite) checkLSA(ctx context.Context, check string, want bool) bool {
	s.p.about("read the holders through the LSA (read_instance)")
	r, err := s.readInstance(ctx)
	if err != nil {
		s.p.fail(check, "%v", err)
		return false
	}
	if holds(r, s.serviceSID) != want {
		s.p.fail(check, "the LSA says the service SID holds the right: %s; expected %s", yesNo(!want), yesNo(want))
		return false
	}
	s.p.pass(check, "the LSA says the service SID holds the right: %s", yesNo(want))
	return true
}

// checkEmptyPlan: the next plan shows no changes (exit code 0).
func (s *Suite) checkEmptyPlan(ctx context.Context, check string) bool {
	s.p.about("terraform plan: expect no changes")
	out, code, err := s.tf.run(ctx, "plan", "-no-color", "-input=false", "-detailed-exitcode")
	if err != nil || code != 0 {
		s.p.fail(check, "terraform plan (0 = no changes) %s", tfOutcome(code, err, out))
		return false
	}
	s.p.pass(check, "the next plan is empty")
	return true
}

// forget removes the resource from the state, leaving the host as it is.
func (s *Suite) forget(ctx context.Context) {
	s.p.about("terraform state rm %s (the host keeps the right as the preflight found it)", resAddr)
	out, code, err := s.tf.run(ctx, "state", "rm", "-no-color", resAddr)
	if err != nil || code != 0 {
		s.p.fail("state rm", "terraform state rm %s", tfOutcome(code, err, out))
		return
	}
	s.p.pass("state rm", "the resource is forgotten; the right is as the preflight found it")
}
