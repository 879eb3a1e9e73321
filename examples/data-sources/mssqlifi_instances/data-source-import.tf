# Bring every instance of a host under management in one plan: one import block per
# instance the host has (Terraform 1.7 and later; OpenTofu), and a resource for each.
# Instances that already have IFI are imported without a change and never restarted.
data "mssqlifi_instances" "sql02" {
  host = "sql02.contoso.com"
}

locals {
  sql02 = { for i in data.mssqlifi_instances.sql02.instances : i.instance => i }
}

import {
  for_each = local.sql02
  to       = mssqlifi_instant_file_initialization.sql02[each.key]
  id       = each.value.import_id
}

resource "mssqlifi_instant_file_initialization" "sql02" {
  for_each = local.sql02
  host     = "sql02.contoso.com"
  instance = each.key
}
