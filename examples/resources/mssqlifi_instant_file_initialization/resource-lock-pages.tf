# IFI and Lock Pages in Memory together: both rights go to the service SID, and when
# one apply grants both, SQL Server restarts once, after both are in place (the plan
# says "grants two rights and restarts once"). Set max server memory first: the plan
# that grants Lock pages in memory warns when it is SQL Server's default (no limit).
resource "mssqlifi_instant_file_initialization" "sql05" {
  host                 = "sql05.contoso.com"
  lock_pages_in_memory = true
}

output "sql05_memory" {
  value = {
    lock_pages_granted = mssqlifi_instant_file_initialization.sql05.lock_pages_in_memory_granted
    memory_model       = mssqlifi_instant_file_initialization.sql05.memory_model # LOCK_PAGES once in effect
  }
}
