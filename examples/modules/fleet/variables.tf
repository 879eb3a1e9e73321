variable "hosts" {
  description = <<-EOT
    The fleet: host name => its SQL Server instances. Each instance may override the
    SQL port the host reports and turn IFI off; each host may override the WinRM port.
  EOT
  type = map(object({
    port = optional(number)
    instances = map(object({
      enabled  = optional(bool, true)
      sql_port = optional(number)
    }))
  }))
}

variable "grantee" {
  description = "Who receives the right: \"service_sid\" (as SQL Server Setup does) or \"service_account\"."
  type        = string
  default     = "service_sid"
}

variable "restart" {
  description = "\"if_needed\" restarts an Engine whose running process does not have the asked IFI state yet; \"never\" leaves that to a maintenance window."
  type        = string
  default     = "if_needed"
}
