# OPA policy on a Terraform plan: no SQL Server restart unless the run says it is in
# the maintenance window. Feed it the plan's JSON:
#
#   terraform plan -out=tfplan && terraform show -json tfplan > plan.json
#   opa eval --format pretty --input plan.json --data planned_action.rego 'data.mssqlifi.restarts.deny'
#
# planned_action is the only machine-readable prediction in the plan's JSON (the
# plan's warnings are not in it). Unknown at plan time means "may restart".
package mssqlifi.restarts

import rego.v1

restart_actions := {"grant_and_restart", "revoke_and_restart", "restart"}

ifi_changes contains rc if {
	some rc in input.resource_changes
	rc.type == "mssqlifi_instant_file_initialization"
	not "delete" in rc.change.actions
}

in_window if input.variables.restarts_allowed.value == true

deny contains msg if {
	some rc in ifi_changes
	rc.change.after.planned_action in restart_actions
	not in_window
	msg := sprintf("%s: planned_action = %q restarts SQL Server on %s outside the maintenance window",
		[rc.address, rc.change.after.planned_action, rc.change.after.host])
}

deny contains msg if {
	some rc in ifi_changes
	rc.change.after_unknown.planned_action
	not in_window
	msg := sprintf("%s: what the apply does is not known at plan time, so it may restart SQL Server", [rc.address])
}
