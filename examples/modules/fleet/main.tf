# One mssqlifi_instant_file_initialization per instance of every host, keyed
# "HOST/INSTANCE" like the resource's id.
locals {
  instances = merge([
    for host, h in var.hosts : {
      for name, i in h.instances : "${host}/${name}" => {
        host     = host
        port     = h.port
        instance = name
        enabled  = i.enabled
        sql_port = i.sql_port
      }
    }
  ]...)
}

resource "mssqlifi_instant_file_initialization" "this" {
  for_each = local.instances

  host     = each.value.host
  port     = each.value.port
  instance = each.value.instance
  sql_port = each.value.sql_port
  enabled  = each.value.enabled
  grantee  = var.grantee
  restart  = var.restart
}
