#!/usr/bin/env bash
# make testacc-host-sim: the staged real-host suite (internal/hostsuite) rehearsed
# against a simulated Windows host, exactly as a user runs it against Windows:
#
#   1. scripts/winsim-test-env.sh starts winsim with internal/hostsuite/testdata/sim.json
#      (a workgroup host shaped like the Windows CI runner: a local administrator over
#      NTLM, WinRM HTTP) and sets MSSQLIFI_WINRM_* and MSSQLIFI_SQL_* from it
#   2. this script sets the suite's other variables (MSSQLIFI_ACC_*) from the
#      simulator's listener line
#   3. it runs the suite's dry run, then every stage (preflight, read, change,
#      restart, seed), recorded, the WinRM cut of stage 4 played by the control
#      action restart_winrm
#
# Usage: scripts/testacc-host-sim.sh TERRAFORM_BINARY (make passes the CLI that
# scripts/ensure-terraform.sh chose). Needs bin/ built (make build, make
# bin/hostsuite) and python3.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { printf 'testacc-host-sim: %s\n' "$*" >&2; exit 1; }

if [[ "${1:-}" != --inside ]]; then
	tf="${1:?usage: scripts/testacc-host-sim.sh TERRAFORM_BINARY}"
	for b in winsim terraform-provider-mssqlifi hostsuite; do
		[[ -x "$root/bin/$b" ]] || die "bin/$b is missing: run make build bin/hostsuite first"
	done
	work="$(mktemp -d "${TMPDIR:-/tmp}/mssqlifi-hostsuite-sim.XXXXXX")"
	trap 'rm -rf "$work"' EXIT
	rc=0
	MSSQLIFI_PROVIDER="" "$root/scripts/winsim-test-env.sh" -c "$root/internal/hostsuite/testdata/sim.json" -C "$work" \
		-- "$root/scripts/testacc-host-sim.sh" --inside "$tf" "$work" || rc=$?
	exit "$rc"
fi

# Inside winsim-test-env.sh: the simulator runs, its listener line is in WINSIM_VAR_FILE.
tf="$2" work="$3"
eval "$(python3 - "$WINSIM_VAR_FILE" <<'PY'
import json, shlex, sys
h = json.load(open(sys.argv[1]))["winsim"]["hosts"][0]
for k, v in (("MSSQLIFI_ACC_HOST", h["address"]), ("MSSQLIFI_ACC_PORT", h["winrm"].rsplit(":", 1)[1])):
    print("export %s=%s" % (k, shlex.quote(v)))
PY
)"
# The same variables a user sets for a Windows host (README "Development").
export MSSQLIFI_ACC_SIM_CONTROL="http://$WINSIM_CONTROL"
export MSSQLIFI_ACC_SQL_CA_CERT="$WINSIM_CA_CERT"
export MSSQLIFI_ACC_SQL_ENCRYPT=strict
export MSSQLIFI_ACC_INSTANCE=MSSQLSERVER
export MSSQLIFI_ACC_AUTH=ntlm
export MSSQLIFI_ACC_HTTPS=false
export MSSQLIFI_ACC_SEED_SQL_USERNAME=mssqlifi_seed
export MSSQLIFI_ACC_SEED_SQL_PASSWORD='Rehearsal-Seed-Pa55!'
export MSSQLIFI_ACC_STAGES=preflight,read,change,restart,seed
export MSSQLIFI_ACC_DISPOSABLE_INSTANCE=MSSQLSERVER
unset MSSQLIFI_ACC_LOCAL MSSQLIFI_ACC_DRY_RUN
args=(-terraform "$tf" -provider-dir "$root/bin" -step-timeout 2m)

echo "==> the dry run (contacts nothing)"
"$root/bin/hostsuite" -dry-run "${args[@]}"

echo "==> every stage against the simulated host, recorded (MSSQLIFI_ACC_RECORD)"
MSSQLIFI_ACC_RECORD="$work/transcripts" "$root/bin/hostsuite" "${args[@]}" -summary-md "$work/summary.md"
ls "$work/transcripts"/*.json >/dev/null || die "no transcript was written"
echo "==> the Markdown summary (-summary-md)"
cat "$work/summary.md"
