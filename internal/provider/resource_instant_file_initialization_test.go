package provider

import (
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

const resName = "mssqlifi_instant_file_initialization.this"

var defaultSvcSID = winsid.ServiceSID("MSSQLSERVER")

func resourceConfig(addr, extra string) string {
	return fmt.Sprintf(`
resource "mssqlifi_instant_file_initialization" "this" {
  host = %q
%s
}
`, addr, extra)
}

func emptyPlanAfterApply() resource.ConfigPlanChecks {
	return resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}
}

// The story of a resource: enable with a restart, nothing left to do, someone
// revokes the right, the plan shows it, apply repairs it without a restart, import,
// destroy revokes without restarting.
func TestAccResource_lifecycle(t *testing.T) {
	e := startSim(t, nil)
	cfg := e.providerConfig(true) + resourceConfig(e.addr, "")
	before := e.engineStart()
	var started time.Time
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{
			{
				Config:           cfg,
				ConfigPlanChecks: emptyPlanAfterApply(),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(resName, "id", e.addr+"/MSSQLSERVER"),
					resource.TestCheckResourceAttr(resName, "enabled", "true"),
					resource.TestCheckResourceAttr(resName, "ifi_enabled", "true"),
					resource.TestCheckResourceAttr(resName, "privilege_granted", "true"),
					resource.TestCheckResourceAttr(resName, "restart_pending", "false"),
					resource.TestCheckResourceAttr(resName, "verified_by", "sql_dmv"),
					resource.TestCheckResourceAttr(resName, "service_name", "MSSQLSERVER"),
					resource.TestCheckResourceAttr(resName, "service_sid", defaultSvcSID),
					resource.TestCheckResourceAttr(resName, "grantee_sid", defaultSvcSID),
					resource.TestCheckResourceAttr(resName, "clustered", "false"),
					resource.TestCheckResourceAttr(resName, "group_policy_managed", "false"),
					resource.TestCheckResourceAttr(resName, "tde_databases.#", "0"),
					check(func() error {
						in := e.instance("MSSQLSERVER")
						if in.InstantFileInitialization == nil || !*in.InstantFileInitialization {
							return fmt.Errorf("the running Engine does not have IFI: %+v", in)
						}
						if !e.holds(defaultSvcSID) {
							return fmt.Errorf("the service SID does not hold the right")
						}
						started = e.engineStart()
						if !started.After(before) {
							return fmt.Errorf("the Engine was not restarted: start time %v, before %v", started, before)
						}
						return nil
					}),
				),
			},
			{
				// Drift: the right is revoked outside Terraform.
				PreConfig: func() {
					if err := e.sim.Do(e.name, winsim.Action{Action: winsim.ActionRevokeRight, Right: contract.RightManageVolume, SID: defaultSvcSID}); err != nil {
						t.Fatalf("revoking through the control API: %v", err)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(resName, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(resName, "privilege_granted", "true"),
					resource.TestCheckResourceAttr(resName, "ifi_enabled", "true"),
					check(func() error {
						if !e.holds(defaultSvcSID) {
							return fmt.Errorf("the grant was not repaired")
						}
						// The running Engine kept IFI: repairing the grant needs no restart.
						if s := e.engineStart(); !s.Equal(started) {
							return fmt.Errorf("the Engine restarted needlessly: %v, was %v", s, started)
						}
						return nil
					}),
				),
			},
			{
				ResourceName:      resName,
				ImportState:       true,
				ImportStateId:     e.addr + "/MSSQLSERVER",
				ImportStateVerify: true,
				// What the last plan said the apply does; an import had no plan.
				ImportStateVerifyIgnore: []string{"planned_action"},
			},
		},
		CheckDestroy: check(func() error {
			if e.holds(defaultSvcSID) {
				return fmt.Errorf("destroy left the grant in place")
			}
			if s := e.engineStart(); !s.Equal(started) {
				return fmt.Errorf("destroy restarted the Engine: start time %v, was %v", s, started)
			}
			return nil
		}),
	})
}

// restart = "never": the grant is made, the plan stays empty, restart_pending says
// what is left; switching to if_needed restarts.
func TestAccResource_restartNever(t *testing.T) {
	e := startSim(t, nil)
	before := e.engineStart()
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{
			{
				Config:           e.providerConfig(true) + resourceConfig(e.addr, `restart = "never"`),
				ConfigPlanChecks: emptyPlanAfterApply(),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(resName, "privilege_granted", "true"),
					resource.TestCheckResourceAttr(resName, "ifi_enabled", "false"),
					resource.TestCheckResourceAttr(resName, "restart_pending", "true"),
					check(func() error {
						if s := e.engineStart(); !s.Equal(before) {
							return fmt.Errorf("restart = never restarted the Engine")
						}
						return nil
					}),
				),
			},
			{
				Config:           e.providerConfig(true) + resourceConfig(e.addr, `restart = "if_needed"`),
				ConfigPlanChecks: emptyPlanAfterApply(),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(resName, "ifi_enabled", "true"),
					resource.TestCheckResourceAttr(resName, "restart_pending", "false"),
					check(func() error {
						if s := e.engineStart(); !s.After(before) {
							return fmt.Errorf("if_needed did not restart the pending Engine")
						}
						return nil
					}),
				),
			},
		},
	})
}

// A grant made outside Terraform and not yet effective: with if_needed the plan
// shows an update of enabled, and apply restarts.
func TestAccResource_pendingRestartIfNeeded(t *testing.T) {
	e := startSim(t, nil)
	cfg := e.providerConfig(true) + resourceConfig(e.addr, "enabled = false")
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check:  resource.TestCheckResourceAttr(resName, "ifi_enabled", "false"),
			},
			{
				PreConfig: func() {
					if err := e.sim.Do(e.name, winsim.Action{Action: winsim.ActionGrantRight, Right: contract.RightManageVolume, SID: defaultSvcSID}); err != nil {
						t.Fatalf("granting through the control API: %v", err)
					}
				},
				Config:             cfg,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config:           cfg,
				ConfigPlanChecks: emptyPlanAfterApply(),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(resName, "privilege_granted", "false"),
					resource.TestCheckResourceAttr(resName, "ifi_enabled", "false"),
				),
			},
		},
	})
}

func TestAccResource_disable(t *testing.T) {
	e := startSim(t, nil)
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{
			{
				Config: e.providerConfig(true) + resourceConfig(e.addr, ""),
				Check:  resource.TestCheckResourceAttr(resName, "ifi_enabled", "true"),
			},
			{
				Config:           e.providerConfig(true) + resourceConfig(e.addr, "enabled = false"),
				ConfigPlanChecks: emptyPlanAfterApply(),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(resName, "enabled", "false"),
					resource.TestCheckResourceAttr(resName, "privilege_granted", "false"),
					resource.TestCheckResourceAttr(resName, "ifi_enabled", "false"),
					check(func() error {
						if e.holds(defaultSvcSID) {
							return fmt.Errorf("the right is still granted")
						}
						if in := e.instance("MSSQLSERVER"); in.InstantFileInitialization == nil || *in.InstantFileInitialization {
							return fmt.Errorf("the running Engine still has IFI")
						}
						return nil
					}),
				),
			},
		},
	})
}

// An Engine started as an administrator keeps IFI through Administrators: enabled =
// false applies once and then the plan stays empty.
func TestAccResource_administratorAccount(t *testing.T) {
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Administrators = []string{accSvcAcct}
		hc.Instances[0].ServiceAccount = accSvcAcct
	})
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{
			{
				Config:           e.providerConfig(true) + resourceConfig(e.addr, "enabled = false"),
				ConfigPlanChecks: emptyPlanAfterApply(),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(resName, "enabled", "false"),
					resource.TestCheckResourceAttr(resName, "privilege_granted", "false"),
					resource.TestCheckResourceAttr(resName, "ifi_enabled", "true"),
					resource.TestCheckResourceAttr(resName, "restart_pending", "false"),
					resource.TestCheckResourceAttr(resName, "service_account", accSvcAcct),
				),
			},
			{
				Config:   e.providerConfig(true) + resourceConfig(e.addr, "enabled = false"),
				PlanOnly: true,
			},
		},
	})
}

// Group Policy defines the right without the service SID: the apply refuses before
// changing anything.
func TestAccResource_groupPolicy(t *testing.T) {
	e := startSim(t, func(hc *host.HostConfig) {
		hc.GroupPolicy.Rights = map[string][]string{contract.RightManageVolume: {`BUILTIN\Administrators`}}
	})
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{
			{
				Config:      e.providerConfig(true) + resourceConfig(e.addr, ""),
				ExpectError: regexp.MustCompile(`Group Policy owns the right(.|\n)*Perform volume maintenance tasks`),
			},
			{
				Config: e.providerConfig(true) + fmt.Sprintf(`
data "mssqlifi_instant_file_initialization" "this" {
  host = %q
}`, e.addr),
				Check: resource.TestCheckResourceAttr("data.mssqlifi_instant_file_initialization.this", "group_policy_managed", "true"),
			},
		},
	})
	if slices.Contains(e.operations(), string(contract.OpSetRight)) {
		t.Errorf("the provider changed a policy-owned right: %v", e.operations())
	}
	if e.holds(defaultSvcSID) {
		t.Error("the service SID holds the right although the policy does not list it")
	}
}

// A named instance with a TDE database.
func TestAccResource_namedInstanceTDE(t *testing.T) {
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Instances = []host.InstanceConfig{{
			Name:         "REPORTING",
			Version:      "15.0.4355.3",
			TDEDatabases: []string{"ReportServer"},
			Logins:       []host.LoginConfig{{Name: accSQLUser, Password: accSQLPass}},
		}}
	})
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{
			{
				Config:           e.providerConfig(true) + resourceConfig(e.addr, `instance = "REPORTING"`),
				ConfigPlanChecks: emptyPlanAfterApply(),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(resName, "id", e.addr+"/REPORTING"),
					resource.TestCheckResourceAttr(resName, "service_name", "MSSQL$REPORTING"),
					resource.TestCheckResourceAttr(resName, "service_sid", winsid.ServiceSID("MSSQL$REPORTING")),
					resource.TestCheckResourceAttr(resName, "sql_version", "15.0.4355.3"),
					resource.TestCheckResourceAttr(resName, "ifi_enabled", "true"),
					resource.TestCheckResourceAttr(resName, "tde_databases.#", "1"),
					resource.TestCheckResourceAttr(resName, "tde_databases.0", "ReportServer"),
				),
			},
		},
	})
}

// Two instances on one host, applied in parallel by terraform.
func TestAccResource_twoInstancesInParallel(t *testing.T) {
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Instances = append(hc.Instances, host.InstanceConfig{
			Name:   "REPORTING",
			Logins: []host.LoginConfig{{Name: accSQLUser, Password: accSQLPass}},
		})
	})
	cfg := e.providerConfig(true) + fmt.Sprintf(`
resource "mssqlifi_instant_file_initialization" "default" {
  host = %[1]q
}
resource "mssqlifi_instant_file_initialization" "reporting" {
  host     = %[1]q
  instance = "REPORTING"
}
`, e.addr)
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{
			{
				Config:           cfg,
				ConfigPlanChecks: emptyPlanAfterApply(),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("mssqlifi_instant_file_initialization.default", "ifi_enabled", "true"),
					resource.TestCheckResourceAttr("mssqlifi_instant_file_initialization.reporting", "ifi_enabled", "true"),
					check(func() error {
						for _, sid := range []string{defaultSvcSID, winsid.ServiceSID("MSSQL$REPORTING")} {
							if !e.holds(sid) {
								return fmt.Errorf("%s does not hold the right", sid)
							}
						}
						n := 0
						for _, op := range e.operations() {
							if op == string(contract.OpRestartInstance) {
								n++
							}
						}
						if n != 2 {
							return fmt.Errorf("want 2 restarts, the host ran %d: %v", n, e.operations())
						}
						return nil
					}),
				),
			},
		},
	})
}

// Without SQL credentials, the error log verifies.
func TestAccResource_errorLogVerification(t *testing.T) {
	e := startSim(t, nil)
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{
			{
				Config:           e.providerConfig(false) + resourceConfig(e.addr, ""),
				ConfigPlanChecks: emptyPlanAfterApply(),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(resName, "verified_by", "errorlog"),
					resource.TestCheckResourceAttr(resName, "ifi_enabled", "true"),
					resource.TestCheckNoResourceAttr(resName, "tde_databases"),
				),
			},
		},
	})
}

// Hostile strings never reach a host: rejected at plan time, nothing in the audit log.
func TestAccResource_hostileInputRejected(t *testing.T) {
	e := startSim(t, nil)
	steps := []resource.TestStep{}
	for _, extra := range []string{
		`instance = "X';Stop-Computer -Force;'"`,
		`instance = "$(Restart-Computer)"`,
		`instance = "DEFAULT"`,
		`grantee = "Everyone"`,
		`restart = "always"`,
	} {
		steps = append(steps, resource.TestStep{
			Config:      e.providerConfig(true) + resourceConfig(e.addr, extra),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`Invalid (value|Attribute Value)`),
		})
	}
	steps = append(steps, resource.TestStep{
		Config: e.providerConfig(true) + `
resource "mssqlifi_instant_file_initialization" "this" {
  host = "sql01; Invoke-Expression calc"
}`,
		PlanOnly:    true,
		ExpectError: regexp.MustCompile(`not a DNS name`),
	})
	resource.ParallelTest(t, resource.TestCase{ProtoV6ProviderFactories: protoV6Factories, Steps: steps})
	if ops := e.operations(); len(ops) != 0 {
		t.Errorf("hostile input reached the host: %v", ops)
	}
}

func TestAccResource_wrongPassword(t *testing.T) {
	e := startSim(t, nil)
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{
			{
				Config:      e.providerConfigWith("not-the-password", true) + resourceConfig(e.addr, ""),
				ExpectError: regexp.MustCompile(`(?i)authentication failed`),
			},
		},
	})
}

// The host cannot be reached: the plan fails with an error naming the host, and the
// state stays as it was (the next plan with the right settings is empty).
func TestAccResource_hostUnreachableKeepsState(t *testing.T) {
	e := startSim(t, nil)
	good := e.providerConfig(true) + resourceConfig(e.addr, "")
	// A port nothing listens on: the simulator's listener port plus a closed one.
	closed := *e
	closed.httpsPort = freePort(t, e.addr)
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{
			{Config: good},
			{
				Config:      closed.providerConfig(true) + resourceConfig(e.addr, ""),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`Cannot read SQL Server instance MSSQLSERVER on ` + regexp.QuoteMeta(e.addr)),
			},
			{Config: good, PlanOnly: true},
		},
	})
}

// Importing an instance the host does not have fails and names what is installed.
func TestAccResource_importMissingInstance(t *testing.T) {
	e := startSim(t, nil)
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{
			{
				Config:        e.providerConfig(true) + resourceConfig(e.addr, `instance = "NOPE"`),
				ResourceName:  resName,
				ImportState:   true,
				ImportStateId: e.addr + "/NOPE",
				ExpectError:   regexp.MustCompile(`(?i)non-existent|not installed`),
			},
		},
	})
}
