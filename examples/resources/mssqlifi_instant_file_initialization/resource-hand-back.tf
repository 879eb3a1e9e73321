# Hand an instance back to manual care without revoking anything: delete its resource
# block and declare it removed (Terraform 1.7+). The apply forgets it; the right,
# the Engine and IFI stay exactly as they are, and nothing restarts. (A plain
# destroy would revoke the grant.)
removed {
  from = mssqlifi_instant_file_initialization.sql09

  lifecycle {
    destroy = false
  }
}
