#!/usr/bin/env bash
# provider-schema.sh TF OUT.json — writes the provider's schema as `providers schema
# -json` prints it, for tfplugindocs --providers-schema.
#
# tfplugindocs does this itself with terraform, but its temporary configuration has no
# required_providers block, so OpenTofu looks for registry.opentofu.org/hashicorp/...
# and misses the plugin. Here the source address is spelled out, which both CLIs
# understand, and the key in the JSON is the one tfplugindocs looks for.
set -euo pipefail
tf="$1"
out="$2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
os_arch="$(go env GOOS)_$(go env GOARCH)"
plugdir="$work/plugins/registry.terraform.io/hashicorp/mssqlifi/0.0.1/$os_arch"
mkdir -p "$plugdir"
(cd "$root" && go build -o "$plugdir/terraform-provider-mssqlifi" .)
cat >"$work/main.tf" <<'TF'
terraform {
  required_providers {
    mssqlifi = {
      source = "registry.terraform.io/hashicorp/mssqlifi"
    }
  }
}
TF
empty="$work/empty.tfrc"
: >"$empty"
TF_CLI_CONFIG_FILE="$empty" "$tf" -chdir="$work" init -input=false -no-color -plugin-dir="$work/plugins" >"$work/init.log" 2>&1 || {
	echo "provider-schema: $tf init failed in $work:" >&2
	cat "$work/init.log" >&2
	exit 1
}
TF_CLI_CONFIG_FILE="$empty" "$tf" -chdir="$work" providers schema -json >"$out"
