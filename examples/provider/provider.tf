terraform {
  required_providers {
    mssqlifi = {
      source = "mssqlifi/mssqlifi"
    }
  }
}

# Credentials come from the environment when not set here:
# MSSQLIFI_WINRM_USERNAME, MSSQLIFI_WINRM_PASSWORD,
# MSSQLIFI_SQL_USERNAME and MSSQLIFI_SQL_PASSWORD.
provider "mssqlifi" {
  winrm {
    # username and password from MSSQLIFI_WINRM_USERNAME / MSSQLIFI_WINRM_PASSWORD
    auth  = "ntlm" # or "basic"
    https = true   # port 5986; TLS verification stays on
    # CA that signed the hosts' WinRM certificates, if not a public one.
    ca_cert = file("${path.module}/winrm-ca.pem")
    timeout = "60s"
  }

  # Optional: with SQL credentials the provider verifies IFI through
  # sys.dm_server_services; without them it reads the error log's startup line.
  sql {
    # username and password from MSSQLIFI_SQL_USERNAME / MSSQLIFI_SQL_PASSWORD
    encrypt = "strict"
    ca_cert = file("${path.module}/sql-ca.pem")
  }
}
