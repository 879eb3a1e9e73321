terraform {
  required_version = ">= 1.10"
  required_providers {
    mssqlifi = {
      source  = "mssqlifi/mssqlifi"
      version = "~> 0.1"
    }
  }
}

# Credentials that never reach the plan or the state: ephemeral input variables
# (Terraform 1.10+, OpenTofu 1.11+). Terraform keeps their values only while it runs,
# so a saved plan file holds no password and they must be given again at apply time.
# Set them from your secret store when you run Terraform, for example
#   export TF_VAR_winrm_password="$(vault kv get -field=password secret/sql/winrm)"
# or, with a secrets provider that has ephemeral resources (such as Vault's
# vault_kv_secret_v2), refer to one here instead of a variable:
#   password = ephemeral.vault_kv_secret_v2.winrm.data["password"]
# The provider only reads these values to log on; it never stores them.
variable "winrm_password" {
  description = "Password of the WinRM account (CONTOSO\\svc_terraform)."
  type        = string
  sensitive   = true
  ephemeral   = true
}

variable "sql_password" {
  description = "Password of the SQL login that verifies through sys.dm_server_services."
  type        = string
  sensitive   = true
  ephemeral   = true
}

provider "mssqlifi" {
  winrm {
    username = "CONTOSO\\svc_terraform"
    password = var.winrm_password
  }

  sql {
    username = "mssqlifi_verify"
    password = var.sql_password
  }
}
