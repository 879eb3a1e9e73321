# Bring an instance under Terraform as it is: the id is HOST/INSTANCE.
import {
  to = mssqlifi_instant_file_initialization.sql01
  id = "sql01.contoso.com/MSSQLSERVER"
}

# A host whose WinRM listens on another port than the provider's: HOST:PORT/INSTANCE
# ([2001:db8::10]:15986/VAULT for an IPv6 address). The resource sets the same port.
import {
  to = mssqlifi_instant_file_initialization.sql05_vault
  id = "sql05.contoso.com:15986/VAULT"
}

resource "mssqlifi_instant_file_initialization" "sql05_vault" {
  host     = "sql05.contoso.com"
  port     = 15986
  instance = "VAULT"
  enabled  = false
}

# A fleet at once (Terraform and OpenTofu 1.7+): one import and one resource per
# instance, keyed by the same HOST/INSTANCE id.
locals {
  existing = toset([
    "sql21.contoso.com/MSSQLSERVER",
    "sql22.contoso.com/MSSQLSERVER",
    "sql22.contoso.com/REPORTING",
  ])
}

import {
  for_each = local.existing
  to       = mssqlifi_instant_file_initialization.existing[each.key]
  id       = each.key
}

resource "mssqlifi_instant_file_initialization" "existing" {
  for_each = local.existing

  host     = split("/", each.key)[0]
  instance = split("/", each.key)[1]
  # No restart or grantee here: an import knows nothing of the configuration and
  # adopts their defaults, so another value would plan every import as an update
  # of that argument, though no host changes. An instance that already has IFI is
  # imported with an empty plan. To grant the others now and restart in the
  # maintenance window, apply with the provider's allow_restarts = false.
}
