# Unit tests of planned_action.rego: opa test examples/policies
package mssqlifi.restarts_test

import rego.v1

import data.mssqlifi.restarts

change(action, before) := {
	"address": sprintf("mssqlifi_instant_file_initialization.this[%q]", [action]),
	"type": "mssqlifi_instant_file_initialization",
	"change": {
		"actions": ["update"],
		"before": before,
		"after": {"planned_action": action, "host": "sql01"},
		"after_unknown": {},
	},
}

plan(changes, window) := {
	"variables": {"restarts_allowed": {"value": window}},
	"resource_changes": changes,
}

secondary := {"host": "sql01", "availability_role": "secondary", "availability_groups": ["AG1"]}

primary := {"host": "sql01", "availability_role": "primary", "availability_groups": ["AG1"]}

test_restart_outside_the_window_denied if {
	count(restarts.deny) == 1 with input as plan([change("grant_and_restart", secondary)], false)
}

test_restart_inside_the_window_allowed if {
	count(restarts.deny) == 0 with input as plan([change("grant_and_restart", secondary)], true)
}

test_restart_inside_the_window_given_on_the_command_line if {
	count(restarts.deny) == 0 with input as plan([change("grant_and_restart", secondary)], "true")
}

test_grant_without_restart_allowed if {
	count(restarts.deny) == 0 with input as plan([change("grant", secondary), change("none", secondary)], false)
}

test_primary_restart_denied_inside_the_window if {
	some msg in restarts.deny with input as plan([change("restart", primary)], true)
	contains(msg, "restarts the primary replica of AG1 on sql01")
}

test_primary_of_two_groups_names_both if {
	two := object.union(primary, {"availability_groups": ["AG1", "AG2"]})
	some msg in restarts.deny with input as plan([change("restart", two)], true)
	contains(msg, "restarts the primary replica of AG1, AG2 on sql01")
}

test_unknown_action_may_restart if {
	c := object.union(change("grant", secondary), {"change": {"after": {"host": "sql01"}, "after_unknown": {"planned_action": true}}})
	some msg in restarts.deny with input as plan([c], false)
	contains(msg, "may restart SQL Server")
}

test_destroy_ignored if {
	c := object.union(change("grant_and_restart", secondary), {"change": {"actions": ["delete"]}})
	count(restarts.deny) == 0 with input as plan([c], false)
}

# A resource without a change keeps the last apply's planned_action: not a restart of this plan.
test_no_op_with_last_restart_allowed if {
	c := object.union(change("grant_and_restart", secondary), {"change": {"actions": ["no-op"]}})
	count(restarts.deny) == 0 with input as plan([c], false)
}
