# Turn Instant File Initialization on for the default instance: grant
# "Perform volume maintenance tasks" (SeManageVolumePrivilege) to the per-service SID
# NT SERVICE\MSSQLSERVER, as SQL Server Setup does, and restart the Engine if needed.
resource "mssqlifi_instant_file_initialization" "sql01" {
  host = "sql01.contoso.com"
}

# A named instance whose restart is left to a maintenance window: the right is granted
# now, restart_pending shows true and a warning says so until the service restarts.
resource "mssqlifi_instant_file_initialization" "sql02_reporting" {
  host     = "sql02.contoso.com"
  instance = "REPORTING"
  restart  = "never"

  timeouts {
    create = "15m"
    update = "15m"
  }
}

# Grant to the start account instead of the service SID, and reach SQL Server on a
# port the host does not report (for example through a port mapping).
resource "mssqlifi_instant_file_initialization" "sql03" {
  host     = "sql03.contoso.com"
  grantee  = "service_account"
  sql_port = 14330
}

# Turn IFI off where un-zeroed allocations are not acceptable, for example volumes
# shared with other tenants or a compliance rule that requires zeroed allocation:
# revokes the grant and restarts, so the running Engine zeroes new space again.
resource "mssqlifi_instant_file_initialization" "sql04" {
  host    = "sql04.contoso.com"
  enabled = false
}

output "sql01_ifi" {
  value = {
    ifi_enabled     = mssqlifi_instant_file_initialization.sql01.ifi_enabled
    verified_by     = mssqlifi_instant_file_initialization.sql01.verified_by
    restart_pending = mssqlifi_instant_file_initialization.sql01.restart_pending
  }
}
