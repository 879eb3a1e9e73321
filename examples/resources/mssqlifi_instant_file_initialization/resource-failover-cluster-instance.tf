# A failover cluster instance: one resource for the instance, addressed by any node.
# It grants the right on every possible owner (WinRM to each node by its own name)
# and verifies through SQL Server on the virtual name. A restart, when one is needed,
# moves the role to a node that holds the right: about a restart's downtime, and a
# second outage if the role's failback settings move it back (the plan warns).
resource "mssqlifi_instant_file_initialization" "sqlfci1" {
  host     = "node1.contoso.com"
  instance = "MSSQLSERVER"
  restart  = "failover" # or "cluster_restart" (restart on its node), or "never"

  # Only where the cluster's names do not resolve from where Terraform runs.
  nodes = {
    NODE1 = "10.0.20.11"
    NODE2 = "10.0.20.12"
  }
  sql_host = "10.0.20.50" # the virtual network name's address
}

output "sqlfci1_nodes_lacking_the_right" {
  value = [
    for n in mssqlifi_instant_file_initialization.sqlfci1.cluster_nodes : n.name
    if n.possible_owner && n.privilege_granted != true
  ]
}
