# A compliance report that changes nothing: read every production instance and let a
# check block warn about each instance that does not verifiably have IFI now, or will
# lose it at its next restart, with the reason.
# Check failures are warnings, so `terraform plan` reports them and still succeeds;
# run it on a schedule and read the warnings (or `terraform show -json`).
locals {
  production = {
    "sql11.contoso.com/MSSQLSERVER" = { host = "sql11.contoso.com", instance = "MSSQLSERVER" }
    "sql12.contoso.com/MSSQLSERVER" = { host = "sql12.contoso.com", instance = "MSSQLSERVER" }
    "sql12.contoso.com/REPORTING"   = { host = "sql12.contoso.com", instance = "REPORTING" }
  }
}

data "mssqlifi_instant_file_initialization" "production" {
  for_each = local.production

  host     = each.value.host
  instance = each.value.instance
}

# Compliant means two things, because each can be false alone: the running Engine
# has IFI (ifi_enabled), and it keeps IFI at its next restart (restart_pending is
# false: the Engine's token will hold the right then, whether through the service's
# own grant, Administrators or another holder). privilege_granted alone is no gap:
# an Engine whose start account is an administrator has IFI without it.
locals {
  ifi_gaps = {
    for id, d in data.mssqlifi_instant_file_initialization.production : id => compact([
      d.ifi_enabled == true ? "" : (d.ifi_enabled == false ? "the running Engine has IFI off" : "IFI could not be verified (see verified_by)"),
      d.restart_pending != true ? "" : (d.ifi_enabled == true ? "the Engine will not hold SeManageVolumePrivilege at its next start: IFI is lost at the next restart" : "a change waits for a restart of SQL Server"),
    ])
  }
}

check "ifi_on_in_production" {
  assert {
    condition = alltrue([for id, gaps in local.ifi_gaps : length(gaps) == 0])
    error_message = format("IFI is not compliant on: %s.", join("; ", sort([
      for id, gaps in local.ifi_gaps : format("%s: %s", id, join(", ", gaps)) if length(gaps) > 0
    ])))
  }
}

output "ifi_compliance" {
  value = {
    for id, d in data.mssqlifi_instant_file_initialization.production : id => {
      ifi_enabled       = d.ifi_enabled
      privilege_granted = d.privilege_granted
      restart_pending   = d.restart_pending
      verified_by       = d.verified_by
      sql_version       = d.sql_version
      gaps              = local.ifi_gaps[id]
    }
  }
}
