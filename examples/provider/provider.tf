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
    auth  = "negotiate" # the default; "ntlm", or "basic" for prepared hosts
    https = true        # port 5986; with false, HTTP 5985 and NTLM-encrypted messages
    # CA that signed the hosts' WinRM certificates, if not a public one.
    ca_cert = file("${path.module}/winrm-ca.pem")
    # The SPN the NTLM logon is bound to, when hosts are reached by IP or alias
    # (default "HTTP/<host>"; MSSQLIFI_WINRM_SPN).
    # spn = "HTTP/sql01.contoso.com"
    timeout = "60s"
  }

  # Optional: with SQL credentials the provider verifies IFI through
  # sys.dm_server_services; without them it reads the error log's startup line.
  sql {
    # username and password from MSSQLIFI_SQL_USERNAME / MSSQLIFI_SQL_PASSWORD
    auth    = "sql" # a SQL Server login; "ntlm" for DOMAIN\user (MSSQLIFI_SQL_AUTH)
    encrypt = "strict"
    ca_cert = file("${path.module}/sql-ca.pem")
  }
}
