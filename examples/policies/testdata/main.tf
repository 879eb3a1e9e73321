# The configuration scripts/policy-test.sh plans against the simulator, to run
# planned_action.rego on a real plan's JSON. var.winsim is winsim's listener line
# (scripts/winsim-test-env.sh); the credentials come from MSSQLIFI_WINRM_* and
# MSSQLIFI_SQL_*.
terraform {
  required_version = ">= 1.5"
  required_providers {
    mssqlifi = {
      source  = "mssqlifi/mssqlifi"
      version = "~> 0.1"
    }
  }
}

variable "winsim" {
  description = "winsim's listener line."
  type        = any
}

# tflint-ignore: terraform_unused_declarations # planned_action.rego reads it from the plan
variable "restarts_allowed" {
  description = "The run is in the maintenance window (read by the policy, not here)."
  type        = bool
  default     = false
}

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

locals {
  hosts = { for h in var.winsim.hosts : h.name => h }
}

# The primary replica of AG1: restarted only when the configuration opts in.
resource "mssqlifi_instant_file_initialization" "primary" {
  host    = local.hosts["sql01"].address
  port    = tonumber(split(":", local.hosts["sql01"].winrm)[1])
  restart = "if_needed_including_primary"
}

resource "mssqlifi_instant_file_initialization" "standalone" {
  host = local.hosts["sql02"].address
  port = tonumber(split(":", local.hosts["sql02"].winrm)[1])
}

output "service_sid" {
  value = mssqlifi_instant_file_initialization.standalone.service_sid
}
