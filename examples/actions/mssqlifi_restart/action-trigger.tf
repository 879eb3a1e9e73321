# Restart after every change of the resource, in the same apply, through the same
# gate: an action_trigger (Terraform 1.14 and later) invokes the action once the
# grant is made. A restart that is not needed (nothing pending) changes nothing.
resource "mssqlifi_instant_file_initialization" "sql04" {
  host    = "sql04.contoso.com"
  restart = "never"

  lifecycle {
    action_trigger {
      events  = [after_create, after_update]
      actions = [action.mssqlifi_restart.sql04]
    }
  }
}

action "mssqlifi_restart" "sql04" {
  config {
    host = "sql04.contoso.com"
  }
}
