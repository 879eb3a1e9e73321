package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

const dsName = "data.mssqlifi_instant_file_initialization.this"

func dataSourceConfig(addr, extra string) string {
	return fmt.Sprintf(`
data "mssqlifi_instant_file_initialization" "this" {
  host = %q
%s
}
`, addr, extra)
}

// expectDS checks one attribute of the data source in the state.
func expectDS(attr string, v knownvalue.Check) statecheck.StateCheck {
	return statecheck.ExpectKnownValue(dsName, tfjsonpath.New(attr), v)
}

// onlyReads fails when anything but a read ran on the host.
func onlyReads(e *accEnv) resource.TestCheckFunc {
	return check(func() error {
		for _, op := range e.operations() {
			if !isRead(op) {
				return fmt.Errorf("the data source ran %s", op)
			}
		}
		return nil
	})
}

// The data source reads an instance as SQL Server Setup left it (nobody holds the
// right) and changes nothing.
func TestAccDataSource(t *testing.T) {
	e := startSim(t, nil)
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{
			{
				Config: e.providerConfig(true) + dataSourceConfig(e.addr, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					expectDS("id", knownvalue.StringExact(e.addr+"/MSSQLSERVER")),
					expectDS("instance", knownvalue.StringExact("MSSQLSERVER")),
					expectDS("service_name", knownvalue.StringExact("MSSQLSERVER")),
					expectDS("service_sid", knownvalue.StringExact(defaultSvcSID)),
					expectDS("grantee_sid", knownvalue.StringExact(defaultSvcSID)),
					expectDS("privilege_granted", knownvalue.Bool(false)),
					expectDS("ifi_enabled", knownvalue.Bool(false)),
					expectDS("restart_pending", knownvalue.Bool(false)),
					expectDS("verified_by", knownvalue.StringExact("sql_dmv")),
					expectDS("tde_databases", knownvalue.ListExact([]knownvalue.Check{})),
					expectDS("clustered", knownvalue.Bool(false)),
				},
				Check: onlyReads(e),
			},
		},
	})
}

// Without SQL credentials, on a build whose error log has no IFI line, nothing can
// say whether the Engine runs with IFI: ifi_enabled and restart_pending are null,
// not false, and tde_databases is unknown (null).
func TestAccDataSource_unverified(t *testing.T) {
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Instances[0].Version = "12.0.4100.1" // 2014 SP1: no IFI line in the error log
	})
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{
			{
				Config: e.providerConfig(false) + dataSourceConfig(e.addr, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					expectDS("id", knownvalue.StringExact(e.addr+"/MSSQLSERVER")),
					expectDS("verified_by", knownvalue.StringExact("none")),
					expectDS("ifi_enabled", knownvalue.Null()),
					expectDS("restart_pending", knownvalue.Null()),
					expectDS("tde_databases", knownvalue.Null()),
					expectDS("privilege_granted", knownvalue.Bool(false)),
				},
				Check: onlyReads(e),
			},
		},
	})
}

// Reading an instance the host does not have fails and names what is installed.
func TestAccDataSource_instanceNotFound(t *testing.T) {
	e := startSim(t, nil)
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{
			{
				Config:      e.providerConfig(true) + dataSourceConfig(e.addr, `  instance = "NOPE"`),
				ExpectError: regexp.MustCompile(`(?s)SQL Server instance not found.*"NOPE" is not installed.*installed\s+instances:\s+MSSQLSERVER`),
			},
		},
	})
}

// A grant to the start account (grantee = "service_account" in the resource) shows
// in the data source only when it is asked about that grantee; by default it reports
// the service SID's grant, as SQL Server Setup makes it.
func TestAccDataSource_grantee(t *testing.T) {
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Instances[0].ServiceAccount = accSvcAcct
	})
	if _, err := e.host().GrantRight(contract.RightManageVolume, accSvcSID); err != nil {
		t.Fatal(err)
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{
			{
				Config: e.providerConfig(true) + dataSourceConfig(e.addr, `grantee = "service_account"`),
				ConfigStateChecks: []statecheck.StateCheck{
					expectDS("grantee", knownvalue.StringExact("service_account")),
					expectDS("grantee_sid", knownvalue.StringExact(accSvcSID)),
					expectDS("privilege_granted", knownvalue.Bool(true)),
				},
			},
			{
				Config: e.providerConfig(true) + dataSourceConfig(e.addr, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					expectDS("grantee", knownvalue.StringExact("service_sid")),
					expectDS("grantee_sid", knownvalue.StringExact(defaultSvcSID)),
					expectDS("privilege_granted", knownvalue.Bool(false)),
				},
			},
		},
	})
}
