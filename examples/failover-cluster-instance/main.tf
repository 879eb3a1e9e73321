# IFI on a two-node failover cluster instance (FCI): one resource for the instance,
# addressed by one node and the instance name. WinRM goes to each node by its own
# name; SQL Server is asked through the virtual network name.
terraform {
  required_version = ">= 1.5"
  required_providers {
    mssqlifi = {
      source  = "mssqlifi/mssqlifi"
      version = "~> 0.1"
    }
  }
}

# The nodes' own WinRM listeners (HTTP 5985, Negotiate): with Kerberos, each node's
# SPN is HTTP/<node>, never the virtual name's. Credentials from MSSQLIFI_WINRM_* and
# MSSQLIFI_SQL_*; the same settings reach every node.
provider "mssqlifi" {
  winrm {
    https = false
  }
  sql {
    encrypt = "strict"
    ca_cert = file("${path.module}/sql-ca.pem")
  }
}

resource "mssqlifi_instant_file_initialization" "sqlfci1" {
  host     = "node1.contoso.com" # any node of the cluster
  instance = "MSSQLSERVER"

  # Once every possible owner holds the right, move the role to the best other
  # possible owner: about a restart's downtime, and the old node is then free to be
  # patched. "cluster_restart" restarts it where it runs instead; "never" only grants.
  restart = "failover"

  # Only where the cluster's node names do not resolve from here.
  nodes = {
    NODE1 = "node1.contoso.com"
    NODE2 = "10.0.20.12"
  }

  timeouts {
    create = "30m"
    update = "30m"
  }
}

# The possible owners still without the right (empty after an apply), and whether IFI
# survives a failover to any of them.
output "sqlfci1" {
  value = {
    ifi_enabled           = mssqlifi_instant_file_initialization.sqlfci1.ifi_enabled
    ifi_survives_failover = mssqlifi_instant_file_initialization.sqlfci1.ifi_survives_failover
    owner                 = one([for n in mssqlifi_instant_file_initialization.sqlfci1.cluster_nodes : n.name if n.current_owner])
    nodes_lacking_right = [
      for n in mssqlifi_instant_file_initialization.sqlfci1.cluster_nodes : n.name
      if n.possible_owner && n.privilege_granted != true
    ]
  }
}

# Warns (at plan time and after the apply) when a failover would lose IFI, for
# example after a node was added or rebuilt without the grant.
check "sqlfci1_survives_failover" {
  assert {
    condition     = mssqlifi_instant_file_initialization.sqlfci1.ifi_survives_failover != false
    error_message = "A possible owner of ${mssqlifi_instant_file_initialization.sqlfci1.id} lacks the right: a failover to it loses IFI. The plan names the node."
  }
}
