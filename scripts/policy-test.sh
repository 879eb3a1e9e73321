#!/usr/bin/env bash
# policy-test.sh OPA TF: tests examples/policies/planned_action.rego.
#   1. opa test: the policy's unit tests (planned_action_test.rego);
#   2. opa eval on a real plan: TF plans examples/policies/testdata against winsim
#      (scripts/winsim-test-env.sh). The first apply turns IFI on everywhere; then
#      the right is revoked outside Terraform on both hosts, and the primary
#      replica's Engine restarts without it. The plan then restarts the primary
#      (grant_and_restart) and only grants on the standalone instance (grant): the
#      policy must deny the first, inside the maintenance window too, and allow the
#      second.
# Needs make build (bin/winsim and the provider).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ $# -eq 2 ]] || { echo "usage: $0 OPA TF" >&2; exit 2; }
opa="$1" tf="$2"
policies="$root/examples/policies"

echo "policy-test: opa test $policies"
"$opa" test "$policies"

work="$(mktemp -d "${TMPDIR:-/tmp}/policy-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cp "$policies/testdata/main.tf" "$work/"
echo "policy-test: opa eval on a plan of $tf against winsim (examples/policies/testdata)"
"$root/scripts/winsim-test-env.sh" -c "$policies/testdata/winsim.json" -C "$work" -- \
	bash "$root/scripts/policy-test-plan.sh" "$tf" "$opa" "$policies/planned_action.rego"
