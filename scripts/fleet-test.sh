#!/usr/bin/env bash
# fleet-test.sh TF...: `init` and `test` of examples/modules/fleet against winsim with
# each CLI given (terraform, tofu), on a copy of the module so the repository gets no
# .terraform directory or lock file. Needs make build (bin/winsim and the provider).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ $# -gt 0 ]] || { echo "usage: $0 TF [TF...]" >&2; exit 2; }
seen=()
for tf in "$@"; do
	[[ " ${seen[*]-} " == *" $tf "* ]] && continue
	seen+=("$tf")
	name="$(TF_CLI_CONFIG_FILE=/dev/null "$(dirname "$0")/tf-version.sh" "$tf")"
	echo "==> fleet module: init and test with $name ($tf)"
	work="$(mktemp -d "${TMPDIR:-/tmp}/fleet-test.XXXXXX")"
	cp -r "$root/examples/modules/fleet" "$work/fleet"
	rc=0
	"$root/scripts/winsim-test-env.sh" -c "$root/examples/modules/fleet/tests/winsim.json" -C "$work/fleet" -- \
		bash -c '"$1" init -input=false -no-color >init.log 2>&1 || { cat init.log >&2; exit 1; }; "$1" test -no-color' _ "$tf" || rc=$?
	rm -rf "$work"
	if [[ $rc -ne 0 ]]; then
		echo "fleet-test: $name: the fleet module's test failed (exit $rc, see above)" >&2
		exit "$rc"
	fi
done
