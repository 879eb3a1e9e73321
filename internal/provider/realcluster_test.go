package provider

import (
	"cmp"
	"fmt"
	"os"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// realHostProvider is the provider block of the real-cluster test, from the staged
// suite's variables (internal/hostsuite): MSSQLIFI_ACC_HTTPS (default false: HTTP
// 5985, every message sealed), MSSQLIFI_ACC_AUTH, MSSQLIFI_ACC_INSECURE and
// MSSQLIFI_ACC_CA_CERT.
func realHostProvider() string {
	winrm := "    https = false\n"
	if os.Getenv("MSSQLIFI_ACC_HTTPS") == "true" {
		winrm = "    https = true\n"
	}
	if a := os.Getenv("MSSQLIFI_ACC_AUTH"); a != "" {
		winrm += fmt.Sprintf("    auth = %q\n", a)
	}
	if os.Getenv("MSSQLIFI_ACC_INSECURE") == "true" {
		winrm += "    insecure = true\n"
	}
	if p := os.Getenv("MSSQLIFI_ACC_CA_CERT"); p != "" {
		winrm += fmt.Sprintf("    ca_cert = file(%q)\n", p)
	}
	return fmt.Sprintf("provider \"mssqlifi\" {\n  winrm {\n%s  }\n}\n", winrm)
}

// TestAccRealCluster is the real-host suite's optional cluster stage: a node of a
// real failover cluster instance. It is skipped unless MSSQLIFI_ACC_FCI_NODE names
// one node (reached over WinRM with the staged suite's MSSQLIFI_ACC_* settings); optional:
// MSSQLIFI_ACC_FCI_INSTANCE (default MSSQLSERVER), MSSQLIFI_ACC_FCI_SQL_HOST (the
// virtual name's address, when the name the cluster reports does not resolve here).
// It reads the cluster with the data source; with MSSQLIFI_ACC_APPLY=1 it also
// creates the resource with restart = "never", which grants the right on every
// possible owner without restarting anything, and destroys it (revokes on every
// node): run it only on a test cluster.
func TestAccRealCluster(t *testing.T) {
	node := os.Getenv("MSSQLIFI_ACC_FCI_NODE")
	if node == "" {
		t.Skip("set MSSQLIFI_ACC_FCI_NODE to a node of a failover cluster instance (and MSSQLIFI_WINRM_USERNAME / MSSQLIFI_WINRM_PASSWORD) to test against a real cluster")
	}
	if os.Getenv(EnvWinRMUsername) == "" || os.Getenv(EnvWinRMPassword) == "" {
		t.Fatalf("MSSQLIFI_ACC_FCI_NODE is set but %s / %s are not", EnvWinRMUsername, EnvWinRMPassword)
	}
	args := fmt.Sprintf("  host     = %q\n  instance = %q\n", node, cmp.Or(os.Getenv("MSSQLIFI_ACC_FCI_INSTANCE"), DefaultInstance))
	if sh := os.Getenv("MSSQLIFI_ACC_FCI_SQL_HOST"); sh != "" {
		args += fmt.Sprintf("  sql_host = %q\n", sh)
	}
	const ds = "data.mssqlifi_instant_file_initialization.fci"
	steps := []resource.TestStep{{
		Config: realHostProvider() + "data \"mssqlifi_instant_file_initialization\" \"fci\" {\n" + args + "}\n",
		Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(ds, "clustered", "true"),
			resource.TestCheckResourceAttrSet(ds, "cluster_nodes.0.name"),
			resource.TestCheckResourceAttrSet(ds, "cluster_nodes.1.possible_owner"),
		),
	}}
	if os.Getenv("MSSQLIFI_ACC_APPLY") == "1" {
		steps = append(steps, resource.TestStep{
			Config: realHostProvider() + "resource \"mssqlifi_instant_file_initialization\" \"this\" {\n" + args + "  restart  = \"never\"\n}\n",
			Check:  resource.TestCheckResourceAttr(resName, "ifi_survives_failover", "true"),
		})
	}
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: protoV6Factories, Steps: steps})
}
