#!/usr/bin/env bash
# validate-examples.sh: `terraform validate` on every example against the local build
# (bin/terraform-provider-mssqlifi through dev_overrides, no registry), so examples/
# cannot drift from the schema. The examples read CA certificates with file(): each
# copy gets a throwaway self-signed certificate under those names.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
tf="${1:-$(scripts/ensure-terraform.sh)}"
[[ -x bin/terraform-provider-mssqlifi ]] || { echo "validate-examples: run make build first" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
scripts/dev-overrides.sh >"$work/cli.tfrc"
export TF_CLI_CONFIG_FILE="$work/cli.tfrc" CHECKPOINT_DISABLE=1
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
	-subj "/CN=validate-examples" -keyout "$work/key.pem" -out "$work/ca.pem" 2>/dev/null

cp -r examples "$work/examples"
fail=0
check() { # DIR [extra .tf files to add]
	local dir="$1"; shift
	for f in "$@"; do cp "$f" "$dir/"; done
	cp "$work/ca.pem" "$dir/winrm-ca.pem"
	cp "$work/ca.pem" "$dir/sql-ca.pem"
	local out
	if out="$("$tf" -chdir="$dir" get -no-color 2>&1)" && out="$("$tf" -chdir="$dir" validate -no-color 2>&1)"; then
		echo "ok    ${dir#"$work"/}"
	else
		echo "FAIL  ${dir#"$work"/}"
		printf '%s\n' "$out" | grep -v -e 'Provider development overrides' -e '^ *$' >&2
		fail=1
	fi
}
# Each provider*.tf is a complete configuration of its own (the registry page shows
# them one after the other): validate each alone.
for f in "$work"/examples/provider/provider*.tf; do
	d="$work/examples/provider-${f##*/}"
	d="${d%.tf}"
	mkdir -p "$d"
	cp "$f" "$d/"
	check "$d"
done
for d in "$work"/examples/resources/* "$work"/examples/data-sources/*; do
	check "$d" "$root/examples/provider/provider.tf"
done
# Actions are Terraform 1.14 syntax: checked where the CLI knows them.
if [[ "$(scripts/tf-version.sh "$tf")" =~ ^Terraform\ v1\.(1[4-9]|[2-9][0-9])\. ]]; then
	for d in "$work"/examples/actions/*; do
		check "$d" "$root/examples/provider/provider.tf"
	done
else
	echo "skip  examples/actions: $(scripts/tf-version.sh "$tf") does not know actions (Terraform 1.14 and later do)"
fi
check "$work/examples/fleet"
check "$work/examples/failover-cluster-instance"
exit "$fail"
