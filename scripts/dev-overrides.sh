#!/usr/bin/env bash
# dev-overrides.sh: prints a Terraform CLI configuration that takes the provider
# mssqlifi/mssqlifi from this build's bin/ (dev_overrides) and every other provider
# from its registry. Use: scripts/dev-overrides.sh >"$dir/cli.tfrc" and point
# TF_CLI_CONFIG_FILE at it. terraform then warns "Provider development overrides are
# in effect": expected, it names where the provider comes from.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cat <<TFRC
provider_installation {
  dev_overrides {
    "mssqlifi/mssqlifi" = "$root/bin"
  }
  direct {}
}
TFRC
