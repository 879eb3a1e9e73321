# A root module that turns IFI on across a fleet with the module in ../modules/fleet.
terraform {
  required_version = ">= 1.5"
  required_providers {
    mssqlifi = {
      source  = "mssqlifi/mssqlifi"
      version = "~> 0.1"
    }
  }
}

# Domain hosts as `winrm quickconfig` leaves them: HTTP 5985 with Negotiate (Kerberos
# where krb5.conf names the realm's KDC, else NTLM with a plan warning), every message
# encrypted by the logon. Credentials from MSSQLIFI_WINRM_* and MSSQLIFI_SQL_*.
provider "mssqlifi" {
  winrm {
    https = false       # the default
    auth  = "negotiate" # the default
    # Hardened, once Kerberos works for every host: an error instead of NTLM.
    # allow_ntlm_fallback = false
    # HTTPS listeners instead (port 5986): https = true and
    # ca_cert = file("${path.module}/winrm-ca.pem")
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
      port = 15985
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
