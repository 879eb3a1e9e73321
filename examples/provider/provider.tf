terraform {
  required_version = ">= 1.5"
  required_providers {
    mssqlifi = {
      source  = "mssqlifi/mssqlifi"
      version = "~> 0.1"
    }
  }
}

# The recommended configuration for domain-joined hosts as `winrm quickconfig` leaves
# them: their HTTP listener on 5985, the Negotiate logon (Kerberos when krb5.conf lists
# the realm's KDC, else NTLM), and every message encrypted by that logon.
# Credentials come from the environment when not set here:
# MSSQLIFI_WINRM_USERNAME, MSSQLIFI_WINRM_PASSWORD,
# MSSQLIFI_SQL_USERNAME and MSSQLIFI_SQL_PASSWORD.
provider "mssqlifi" {
  winrm {
    # username and password from MSSQLIFI_WINRM_USERNAME / MSSQLIFI_WINRM_PASSWORD:
    # CONTOSO\svc_terraform or svc_terraform@CONTOSO.COM (a domain account);
    # SQL01\Administrator would be a local account of one host.
    https = false       # the default: HTTP 5985; every message is encrypted by the logon
    auth  = "negotiate" # the default: Kerberos if it can be had, else NTLM (a plan warning says why)
    # Hardened, where krb5.conf names the realm's KDCs: Kerberos or an error, never a
    # silent NTLM.
    # allow_ntlm_fallback = false
    # The SPN Kerberos asks a ticket for and the NTLM logon is bound to, when hosts
    # are reached by IP or alias (default "HTTP/<host>"; MSSQLIFI_WINRM_SPN).
    # spn = "HTTP/sql01.contoso.com"
    timeout = "60s"

    # Alternatives: an HTTPS listener (port 5986) with its CA, its certificate verified,
    #   https   = true
    #   ca_cert = file("${path.module}/winrm-ca.pem")
    # or auth = "ntlm" to choose NTLM knowingly (no Kerberos attempt, no warning).
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
