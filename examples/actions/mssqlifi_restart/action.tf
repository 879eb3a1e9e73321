# Grant now, restart in the maintenance window (Terraform 1.14 and later): the apply
# grants the right without restarting (restart_pending = true), and in the window
#
#   terraform apply -invoke=action.mssqlifi_restart.sql02_reporting
#
# restarts the Engine through the provider's gate (max_parallel_restarts, the
# availability group's restart lock, no restart of a primary replica or during a
# backup), saying what it does as it goes. The next plan reads restart_pending = false.
resource "mssqlifi_instant_file_initialization" "sql02_reporting" {
  host     = "sql02.contoso.com"
  instance = "REPORTING"
  restart  = "never"
}

action "mssqlifi_restart" "sql02_reporting" {
  config {
    host     = "sql02.contoso.com"
    instance = "REPORTING"
    timeout  = "30m"
  }
}
