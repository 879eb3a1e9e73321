# A root module that turns IFI on across a fleet with the module in ../modules/fleet.
terraform {
  required_providers {
    mssqlifi = {
      source = "mssqlifi/mssqlifi"
    }
  }
}

provider "mssqlifi" {
  winrm {
    auth    = "ntlm"
    ca_cert = file("${path.module}/winrm-ca.pem")
  }
  sql {
    encrypt = "strict"
    ca_cert = file("${path.module}/sql-ca.pem")
  }
}

module "sql_fleet" {
  source = "../modules/fleet"

  hosts = {
    "sql01.contoso.com" = {
      instances = {
        MSSQLSERVER = {}
        REPORTING   = {}
      }
    }
    "sql02.contoso.com" = {
      instances = {
        MSSQLSERVER = {}
      }
    }
    # A host whose WinRM listens on a non-default port; its instance sits on storage
    # shared with other tenants, so IFI stays off there.
    "sql03.contoso.com" = {
      port = 15986
      instances = {
        VAULT = { enabled = false }
      }
    }
  }
}

output "ifi" {
  value = module.sql_fleet.instances
}

output "not_as_asked" {
  value = module.sql_fleet.not_as_asked
}
