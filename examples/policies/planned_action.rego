# OPA policy on a Terraform plan: no SQL Server restart unless the run says it is in
# the maintenance window. Feed it the plan's JSON:
#
#   terraform plan -out=tfplan && terraform show -json tfplan > plan.json
#   opa eval --format pretty --input plan.json --data planned_action.rego 'data.mssqlifi.restarts.deny'
#
# planned_action_test.rego holds its unit tests (opa test examples/policies); make
# policy-test runs them, and evaluates the policy on a real plan of testdata/ against
# the simulator (scripts/policy-test.sh).
# planned_action is the only machine-readable prediction in the plan's JSON (the
# plan's warnings are not in it). Unknown at plan time means "may restart".
package mssqlifi.restarts

import rego.v1

restart_actions := {"grant_and_restart", "revoke_and_restart", "restart"}

# Only what the apply changes: in a resource without a change ("no-op"),
# planned_action is what the last apply did, which this plan does not repeat.
ifi_changes contains rc if {
	some rc in input.resource_changes
	rc.type == "mssqlifi_instant_file_initialization"
	some action in rc.change.actions
	action in {"create", "update"}
}

# The plan's JSON holds a variable as it was given: -var restarts_allowed=true is the
# string "true" there, a tfvars file's true the boolean.
in_window if input.variables.restarts_allowed.value in {true, "true"}

deny contains msg if {
	some rc in ifi_changes
	rc.change.after.planned_action in restart_actions
	not in_window
	msg := sprintf("%s: planned_action = %q restarts SQL Server on %s outside the maintenance window",
		[rc.address, rc.change.after.planned_action, rc.change.after.host])
}

# A primary replica is never restarted by a plan, maintenance window or not: fail
# the group over first. The role is the state's (the refresh's read), so this applies
# to instances already under Terraform; a create's plan does not know it.
deny contains msg if {
	some rc in ifi_changes
	rc.change.after.planned_action in restart_actions
	rc.change.before.availability_role == "primary"
	msg := sprintf("%s: planned_action = %q restarts the primary replica of %s on %s: fail the group over first",
		[rc.address, rc.change.after.planned_action, concat(", ", rc.change.before.availability_groups), rc.change.before.host])
}

deny contains msg if {
	some rc in ifi_changes
	rc.change.after_unknown.planned_action
	not in_window
	msg := sprintf("%s: what the apply does is not known at plan time, so it may restart SQL Server", [rc.address])
}
