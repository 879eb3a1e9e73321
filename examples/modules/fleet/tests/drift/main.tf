# Test helper for fleet.tftest.hcl: makes drift the way a person would, outside
# Terraform. It revokes a right on a simulated host through winsim's control plane
# (POST /v1/hosts/{host}/actions), as an administrator would in secpol.msc. It uses
# only the built-in terraform_data resource and curl, so it needs no registry.
terraform {
  required_version = ">= 1.6"
  required_providers {
    # Unused here, but the test file's provider block reaches every module it runs,
    # and OpenTofu would otherwise look for hashicorp/mssqlifi.
    mssqlifi = {
      source = "mssqlifi/mssqlifi"
    }
  }
}

variable "control" {
  description = "winsim's control plane address, host:port (the \"control\" of its JSON line)."
  type        = string
}

variable "host" {
  description = "The simulated host's name in winsim's configuration."
  type        = string
}

variable "sid" {
  description = "The SID whose SeManageVolumePrivilege is revoked."
  type        = string
}

resource "terraform_data" "revoke" {
  input = { host = var.host, sid = var.sid }

  provisioner "local-exec" {
    command = "curl --silent --show-error --fail-with-body -X POST -H \"Content-Type: application/json\" -d \"$BODY\" \"http://${var.control}/v1/hosts/${var.host}/actions\""
    environment = {
      BODY = jsonencode({ action = "revoke_right", right = "SeManageVolumePrivilege", sid = var.sid })
    }
  }
}
