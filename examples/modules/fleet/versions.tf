terraform {
  required_version = ">= 1.5"
  required_providers {
    mssqlifi = {
      source = "mssqlifi/mssqlifi"
      # Any 0.x release from 0.1.0 (the current line) on, below 1.0: a shared
      # module states a range; the root module that calls it may narrow it.
      version = "~> 0.1"
    }
  }
}
