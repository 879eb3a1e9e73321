# Act on what the apply will do before it does it: planned_action is known at plan
# time (none, grant, grant_and_restart, revoke, revoke_and_restart, restart, refuse,
# verify; unknown means "may restart").

# The maintenance window, set in the provider block (the provider page's example):
# outside the window the apply changes the right only (planned_action "grant", the
# plan says the restart is held); the next run with -var restarts_allowed=true plans
# and does the restart (planned_action "restart"). A provider setting changes no
# resource: a converged plan stays empty either way.
#
#   variable "restarts_allowed" {
#     description = "true in the maintenance window: lets the apply restart SQL Server."
#     type        = bool
#     default     = false
#   }
#
#   provider "mssqlifi" {
#     allow_restarts = var.restarts_allowed
#     # winrm { ... }
#   }

resource "mssqlifi_instant_file_initialization" "reporting" {
  host     = "sql01.contoso.com"
  instance = "REPORTING"

  lifecycle {
    # Fails the plan itself, before anything changes, when the apply would refuse.
    postcondition {
      condition     = self.planned_action != "refuse"
      error_message = "The apply would refuse to change ${self.id}: the plan's warning says why."
    }
  }
}

# After an apply, planned_action keeps what that apply did: the next plan of a
# converged instance is empty, this output included.
output "reporting_action" {
  value = mssqlifi_instant_file_initialization.reporting.planned_action
}
