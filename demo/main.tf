# The demo fleet: one mssqlifi_instant_file_initialization per simulated instance.
# demo/run.sh writes terraform.tfvars.json from the simulator's listener addresses and
# sets the credentials through MSSQLIFI_WINRM_* and MSSQLIFI_SQL_* variables.
terraform {
  required_providers {
    mssqlifi = {
      source = "mssqlifi/mssqlifi"
    }
  }
}

variable "ca_cert_file" {
  description = "PEM file of the CA that signed the simulated SQL Servers' certificates."
  type        = string
}

variable "hosts" {
  description = "host => its address, WinRM HTTP port and SQL Server instances."
  type = map(object({
    address    = string
    winrm_port = number
    instances  = list(string)
  }))
}

variable "fcis" {
  description = "Failover cluster instance (by virtual name) => the node it is addressed by, its instance, where SQL Server answers, and every node's address by its cluster name."
  type = map(object({
    host       = string
    winrm_port = number
    instance   = string
    sql_host   = string
    nodes      = map(string)
  }))
  default = {}
}

# The recommended configuration for domain hosts as `winrm quickconfig` leaves them:
# the HTTP listener (5985 on a real host), Negotiate, every message encrypted by the
# logon. The simulated domain has no KDC, so negotiate logs on with NTLM and the plan
# warns "NTLM instead of Kerberos on <host>: no realm": expected here. With a realm
# and a reachable KDC it would use Kerberos, and allow_ntlm_fallback = false would
# make any fallback an error.
provider "mssqlifi" {
  winrm {
    https = false
    auth  = "negotiate" # the default
  }
  sql {
    encrypt = "strict" # TDS 8: TLS from the first byte, verified against the same CA
    ca_cert = file(var.ca_cert_file)
  }
}

locals {
  instances = merge([
    for name, h in var.hosts : {
      for inst in h.instances : "${name}/${inst}" => {
        address    = h.address
        winrm_port = h.winrm_port
        instance   = inst
      }
    }
  ]...)
}

resource "mssqlifi_instant_file_initialization" "fleet" {
  for_each = local.instances

  host     = each.value.address
  port     = each.value.winrm_port
  instance = each.value.instance

  # The simulated Engines restart in about two seconds; real ones may take minutes.
  timeouts {
    create = "2m"
    update = "2m"
  }
}

# One resource per failover cluster instance: it grants on every possible owner node
# (WinRM to each node by its own address) and verifies through the virtual name.
# restart = "failover" would move the role to a node that holds the right if the
# running Engine lacked IFI; here the owner has it, so nothing restarts.
resource "mssqlifi_instant_file_initialization" "fci" {
  for_each = var.fcis

  host     = each.value.host
  port     = each.value.winrm_port
  instance = each.value.instance
  sql_host = each.value.sql_host
  nodes    = each.value.nodes
  restart  = "failover"

  timeouts {
    create = "2m"
    update = "2m"
  }
}

output "fci" {
  description = "Each failover cluster instance: the running Engine's IFI, whether it survives a failover, and every node."
  value = {
    for k, r in mssqlifi_instant_file_initialization.fci : k => {
      ifi_enabled           = r.ifi_enabled
      ifi_survives_failover = r.ifi_survives_failover
      nodes = {
        for n in r.cluster_nodes : n.name => {
          current_owner     = n.current_owner
          possible_owner    = n.possible_owner
          privilege_granted = n.privilege_granted
        }
      }
    }
  }
}

output "ifi" {
  description = "What each running Engine really has, as SQL Server reports it."
  value = {
    for k, r in mssqlifi_instant_file_initialization.fleet : k => {
      ifi_enabled       = r.ifi_enabled
      verified_by       = r.verified_by
      privilege_granted = r.privilege_granted
      restart_pending   = r.restart_pending
      tde_databases     = r.tde_databases
    }
  }
}

output "grantee_sids" {
  description = "The SID each instance's right was granted to (the per-service SID)."
  value       = { for k, r in mssqlifi_instant_file_initialization.fleet : k => r.grantee_sid }
}

# What each host has installed, found by the provider itself (one PowerShell process
# per host, shared with the resources' reads of the same run): demo/run.sh checks the
# inventory in var.hosts against it. A fleet without an inventory would for_each over
# it, and bring existing instances in with import blocks (the fleet guide).
data "mssqlifi_instances" "host" {
  for_each = var.hosts

  host = each.value.address
  port = each.value.winrm_port
}

output "discovered" {
  description = "Each host's SQL Server instances as the host lists them (read at plan time), and which are failover cluster instances."
  value = {
    for name, d in data.mssqlifi_instances.host : name => {
      for i in d.instances : i.instance => i.clustered
    }
  }
}
