# A compliance report that changes nothing: read every production instance and let a
# check block warn about those whose running Engine does not verifiably have IFI.
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

check "ifi_on_in_production" {
  assert {
    condition = alltrue([
      for id, d in data.mssqlifi_instant_file_initialization.production : d.ifi_enabled == true
    ])
    error_message = format("IFI is not verifiably on for: %s (ifi_enabled false or unknown; see restart_pending and verified_by).", join(", ", sort([
      for id, d in data.mssqlifi_instant_file_initialization.production : id if d.ifi_enabled != true
    ])))
  }
}

output "ifi_compliance" {
  value = {
    for id, d in data.mssqlifi_instant_file_initialization.production : id => {
      ifi_enabled     = d.ifi_enabled
      verified_by     = d.verified_by
      restart_pending = d.restart_pending
      sql_version     = d.sql_version
    }
  }
}
