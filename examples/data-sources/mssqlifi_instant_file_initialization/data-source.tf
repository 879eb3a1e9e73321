# Read an instance's IFI state without changing anything, for example to report on
# servers that another team owns.
data "mssqlifi_instant_file_initialization" "sql05" {
  host     = "sql05.contoso.com"
  instance = "MSSQLSERVER"
}

output "sql05_ifi" {
  value = {
    ifi_enabled          = data.mssqlifi_instant_file_initialization.sql05.ifi_enabled
    verified_by          = data.mssqlifi_instant_file_initialization.sql05.verified_by
    privilege_granted    = data.mssqlifi_instant_file_initialization.sql05.privilege_granted
    group_policy_managed = data.mssqlifi_instant_file_initialization.sql05.group_policy_managed
    tde_databases        = data.mssqlifi_instant_file_initialization.sql05.tde_databases
  }
}
