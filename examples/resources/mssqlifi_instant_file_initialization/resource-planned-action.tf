# Act on what the apply will do before it does it: planned_action is known at plan
# time (none, grant, grant_and_restart, revoke, revoke_and_restart, restart, refuse,
# verify; unknown means "may restart").
variable "restarts_allowed" {
  description = "true in the maintenance window (terraform plan -var restarts_allowed=true): lets the apply restart SQL Server."
  type        = bool
  default     = false
}

resource "mssqlifi_instant_file_initialization" "reporting" {
  host     = "sql01.contoso.com"
  instance = "REPORTING"

  lifecycle {
    # Fails the plan itself, before anything changes, when the apply would restart
    # SQL Server outside the maintenance window.
    postcondition {
      condition     = var.restarts_allowed || !contains(["grant_and_restart", "revoke_and_restart", "restart"], self.planned_action)
      error_message = "The apply would restart SQL Server (planned_action = ${self.planned_action}): plan again with -var restarts_allowed=true in the maintenance window."
    }
  }
}

# A check only warns, at plan time and after the apply, and lets the run go on.
check "no_refusals" {
  assert {
    condition     = mssqlifi_instant_file_initialization.reporting.planned_action != "refuse"
    error_message = "The apply will refuse to change ${mssqlifi_instant_file_initialization.reporting.id}: the plan's warning says why."
  }
}
