# List every SQL Server instance of a host, with each one's IFI state, read with one
# PowerShell process for the host. Changes nothing.
data "mssqlifi_instances" "sql01" {
  host = "sql01.contoso.com"
}

output "sql01_instances" {
  value = {
    for i in data.mssqlifi_instances.sql01.instances : i.instance => {
      ifi_enabled       = i.ifi_enabled
      privilege_granted = i.privilege_granted
      service_account   = i.service_account
      sql_version       = i.sql_version
      tcp_port          = i.tcp_port
    }
  }
}
