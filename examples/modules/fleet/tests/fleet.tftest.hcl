# `terraform test` (or `tofu test`) of the fleet module against winsim, the Windows
# host simulator: no Windows, no SQL Server, no registry. Run it through the helper,
# which starts winsim with tests/winsim.json, sets the credentials, a provider mirror
# for an offline `init`, and var.winsim (winsim's listener line, through
# TF_CLI_ARGS_test="-var-file=..."), then stops winsim:
#
#   scripts/winsim-test-env.sh -c tests/winsim.json -- sh -c 'terraform init && terraform test'

# The fleet as the module takes it, from the simulator's listener line: each host by
# its loopback address, WinRM over HTTP on the port winsim picked.
variables {
  hosts = {
    for h in var.winsim.hosts : h.address => {
      port      = tonumber(split(":", h.winrm)[1])
      instances = { for i in h.instances : i.name => {} }
    }
  }
}

# The recommended configuration: HTTP with Negotiate, every message encrypted by the
# logon, as the simulated hosts' WinRM defaults require (AllowUnencrypted false).
# They have no KDC, so negotiate uses NTLM and the run warns "NTLM instead of
# Kerberos on <host>: no realm". Credentials come from MSSQLIFI_WINRM_* and
# MSSQLIFI_SQL_* (set by the helper); SQL Server's certificates are verified against
# the simulator's CA, which the helper writes to .winsim/ca.pem (a provider block here
# cannot use var.winsim under OpenTofu).
provider "mssqlifi" {
  winrm {
    https = false
    auth  = "negotiate"
  }
  sql {
    encrypt = "strict"
    ca_cert = file(".winsim/ca.pem")
  }
}

# Before any apply, the plan says what the apply will do on each instance: the
# simulated instances run without the right, so each is granted and restarted.
run "plan_predicts_restarts" {
  command = plan

  assert {
    condition     = alltrue([for id, r in mssqlifi_instant_file_initialization.this : r.planned_action == "grant_and_restart"])
    error_message = "the plan does not predict a grant and a restart everywhere: ${jsonencode({ for id, r in mssqlifi_instant_file_initialization.this : id => r.planned_action })}"
  }
}

run "apply_turns_ifi_on" {
  assert {
    condition     = length(output.instances) == 3
    error_message = "expected the 3 simulated instances, got ${jsonencode(keys(output.instances))}"
  }
  assert {
    condition     = alltrue([for id, i in output.instances : i.ifi_enabled == true && i.verified_by == "sql_dmv"])
    error_message = "IFI is not verifiably on everywhere after apply: ${jsonencode(output.instances)}"
  }
  assert {
    condition     = length(output.not_as_asked) == 0
    error_message = "instances not as asked after apply: ${jsonencode(output.not_as_asked)}"
  }
}

# Someone revokes the right on one instance behind Terraform's back.
run "revoke_outside_terraform" {
  module {
    source = "./tests/drift"
  }
  variables {
    control = var.winsim.control
    host    = var.winsim.hosts[0].name
    sid     = run.apply_turns_ifi_on.instances["${var.winsim.hosts[0].address}/MSSQLSERVER"].service_sid
  }
}

# A plan sees it: refreshing reads the grant as gone, while the running Engine keeps
# IFI until it restarts.
run "plan_catches_drift" {
  command = plan

  plan_options {
    mode = refresh-only
  }

  assert {
    condition     = mssqlifi_instant_file_initialization.this["${var.winsim.hosts[0].address}/MSSQLSERVER"].privilege_granted == false
    error_message = "the plan did not notice that the right was revoked outside Terraform"
  }
  assert {
    condition     = mssqlifi_instant_file_initialization.this["${var.winsim.hosts[0].address}/MSSQLSERVER"].ifi_enabled == true
    error_message = "the running Engine lost IFI without a restart"
  }
  assert {
    condition     = mssqlifi_instant_file_initialization.this["${var.winsim.hosts[0].address}/REPORTING"].privilege_granted == true
    error_message = "the plan reports drift on an instance nobody touched"
  }
}

# A normal plan then says that the apply only grants again, without a restart (the
# running Engine kept IFI), and leaves the other instances alone.
run "plan_predicts_the_repair" {
  command = plan

  assert {
    condition     = mssqlifi_instant_file_initialization.this["${var.winsim.hosts[0].address}/MSSQLSERVER"].planned_action == "grant"
    error_message = "the plan does not predict a grant without restart for the revoked right: ${mssqlifi_instant_file_initialization.this["${var.winsim.hosts[0].address}/MSSQLSERVER"].planned_action}"
  }
  # An instance nobody touched has no change: it keeps what its last apply did.
  assert {
    condition     = mssqlifi_instant_file_initialization.this["${var.winsim.hosts[0].address}/REPORTING"].planned_action == "grant_and_restart"
    error_message = "the plan changes planned_action on an instance nobody touched: ${mssqlifi_instant_file_initialization.this["${var.winsim.hosts[0].address}/REPORTING"].planned_action}"
  }
}

run "apply_repairs_drift" {
  assert {
    condition     = alltrue([for id, i in output.instances : i.privilege_granted == true && i.ifi_enabled == true])
    error_message = "the apply did not repair the revoked grant: ${jsonencode(output.instances)}"
  }
}
