terraform {
  required_version = ">= 1.5"
  required_providers {
    mssqlifi = {
      source = "mssqlifi/mssqlifi"
    }
  }
}
