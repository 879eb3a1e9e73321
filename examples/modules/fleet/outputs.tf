output "instances" {
  description = "The verified state of every instance, keyed HOST/INSTANCE."
  value = {
    for id, r in mssqlifi_instant_file_initialization.this : id => {
      ifi_enabled          = r.ifi_enabled
      verified_by          = r.verified_by
      privilege_granted    = r.privilege_granted
      restart_pending      = r.restart_pending
      service_sid          = r.service_sid
      sql_version          = r.sql_version
      group_policy_managed = r.group_policy_managed
      tde_databases        = r.tde_databases
    }
  }
}

output "not_as_asked" {
  description = "Instances whose running Engine does not (verifiably) have the IFI state asked for: restart pending, Group Policy, or no way to verify."
  value = sort([
    for id, r in mssqlifi_instant_file_initialization.this : id
    if r.ifi_enabled != r.enabled
  ])
}

output "tde_warnings" {
  description = "Instances with TDE-encrypted databases, whose data files never use IFI."
  value = {
    for id, r in mssqlifi_instant_file_initialization.this : id => r.tde_databases
    if length(coalesce(r.tde_databases, [])) > 0
  }
}

output "planned_actions" {
  description = "What the last plan said each instance's apply does (planned_action), keyed HOST/INSTANCE: after an apply, what it did, until a plan changes the instance again."
  value       = { for id, r in mssqlifi_instant_file_initialization.this : id => r.planned_action }
}
