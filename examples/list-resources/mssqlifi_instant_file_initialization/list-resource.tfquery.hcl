# Find every SQL Server instance of the hosts (Terraform 1.14 and later), one read per
# host, in a file such as fleet.tfquery.hcl:
#
#   terraform query
#   terraform query -generate-config-out=generated.tf
#
# The second writes an import block and a resource for each instance; the apply
# imports them, changing nothing, and the next plan is empty. A host on another WinRM
# port than the provider's is named HOST:PORT.
list "mssqlifi_instant_file_initialization" "fleet" {
  provider         = mssqlifi
  include_resource = true

  config {
    hosts = ["sql01.contoso.com", "sql02.contoso.com", "sql03.contoso.com:15985"]
  }
}
