package provider

import (
	"cmp"
	"fmt"
	"os"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// TestAccRealHost runs against a real Windows host with SQL Server. It is skipped
// unless MSSQLIFI_ACC_HOST is set; it also needs TF_ACC=1 and the credentials in
// MSSQLIFI_WINRM_USERNAME / MSSQLIFI_WINRM_PASSWORD (and optionally
// MSSQLIFI_SQL_USERNAME / MSSQLIFI_SQL_PASSWORD for DMV verification).
//
// Optional: MSSQLIFI_ACC_INSTANCE (default MSSQLSERVER), MSSQLIFI_ACC_HTTPS=false for
// the HTTP listener, MSSQLIFI_ACC_INSECURE=true to skip certificate checks,
// MSSQLIFI_ACC_CA_CERT=path of the CA's PEM. By default the test only reads (the
// data source). With MSSQLIFI_ACC_APPLY=1 it also creates the resource with
// restart = "never" and destroys it: that grants and then revokes the right for the
// service SID, so run it only on a test host.
func TestAccRealHost(t *testing.T) {
	h := realHostEnv(t, "MSSQLIFI_ACC_HOST", "a real Windows host")
	inst := os.Getenv("MSSQLIFI_ACC_INSTANCE")
	if inst == "" {
		inst = DefaultInstance
	}
	prov := realHostProvider()
	steps := []resource.TestStep{{
		Config: prov + fmt.Sprintf(`
data "mssqlifi_instant_file_initialization" "this" {
  host     = %q
  instance = %q
}`, h, inst),
		Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttrSet("data.mssqlifi_instant_file_initialization.this", "service_sid"),
			resource.TestCheckResourceAttrSet("data.mssqlifi_instant_file_initialization.this", "privilege_granted"),
			resource.TestCheckResourceAttrSet("data.mssqlifi_instant_file_initialization.this", "verified_by"),
		),
	}}
	if os.Getenv("MSSQLIFI_ACC_APPLY") == "1" {
		steps = append(steps, resource.TestStep{
			Config: prov + fmt.Sprintf(`
resource "mssqlifi_instant_file_initialization" "this" {
  host     = %q
  instance = %q
  restart  = "never"
}`, h, inst),
			Check: resource.TestCheckResourceAttr(resName, "privilege_granted", "true"),
		})
	}
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: protoV6Factories, Steps: steps})
}

// realHostProvider is the provider block of the real-host tests, from
// MSSQLIFI_ACC_HTTPS, MSSQLIFI_ACC_INSECURE and MSSQLIFI_ACC_CA_CERT.
func realHostProvider() string {
	winrm := ""
	if os.Getenv("MSSQLIFI_ACC_HTTPS") == "false" {
		winrm += "    https = false\n"
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
// one node (reached over WinRM with the settings of TestAccRealHost); optional:
// MSSQLIFI_ACC_FCI_INSTANCE (default MSSQLSERVER), MSSQLIFI_ACC_FCI_SQL_HOST (the
// virtual name's address, when the name the cluster reports does not resolve here).
// It reads the cluster with the data source; with MSSQLIFI_ACC_APPLY=1 it also
// creates the resource with restart = "never", which grants the right on every
// possible owner without restarting anything, and destroys it (revokes on every
// node): run it only on a test cluster.
func TestAccRealCluster(t *testing.T) {
	node := realHostEnv(t, "MSSQLIFI_ACC_FCI_NODE", "a node of a real failover cluster instance")
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

// realHostEnv is the host the environment variable name gives: the test skips
// without it, and fails when the WinRM credentials are not set with it.
func realHostEnv(t *testing.T, name, what string) string {
	t.Helper()
	h := os.Getenv(name)
	if h == "" {
		t.Skipf("set %s (and %s, %s) to test against %s", name, EnvWinRMUsername, EnvWinRMPassword, what)
	}
	if os.Getenv(EnvWinRMUsername) == "" || os.Getenv(EnvWinRMPassword) == "" {
		t.Fatalf("%s is set but %s / %s are not", name, EnvWinRMUsername, EnvWinRMPassword)
	}
	return h
}
