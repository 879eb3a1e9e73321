#!/usr/bin/env bash
# make testacc-host-sim: the staged real-host suite (internal/hostsuite) rehearsed
# against a simulated Windows host, exactly as a user runs it against Windows:
#
#   1. start winsim with internal/hostsuite/testdata/sim.json (a workgroup host shaped
#      like the Windows CI runner: a local administrator over NTLM, WinRM HTTP)
#   2. set the suite's variables (MSSQLIFI_ACC_*, MSSQLIFI_WINRM_*, MSSQLIFI_SQL_*)
#      from the simulator's listener line
#   3. run the suite's dry run, then every stage (preflight, read, change, restart,
#      seed), the WinRM cut of stage 4 played by the control action restart_winrm
#
# Usage: scripts/testacc-host-sim.sh TERRAFORM_BINARY (make passes the CLI that
# scripts/ensure-terraform.sh chose). Needs bin/ built (make build) and python3.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
tf="${1:?usage: scripts/testacc-host-sim.sh TERRAFORM_BINARY}"
die() { printf 'testacc-host-sim: %s\n' "$*" >&2; exit 1; }
command -v python3 >/dev/null || die "python3 is needed to read the simulator's JSON line: apt-get install python3"
[[ -x bin/winsim && -x bin/terraform-provider-mssqlifi && -x bin/hostsuite ]] || die "bin/ lacks winsim, the provider or hostsuite: run make build first"

work="$(mktemp -d "${TMPDIR:-/tmp}/mssqlifi-hostsuite-sim.XXXXXX")"
winsim_pid=""
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n "$winsim_pid" ]]; then
		kill -TERM "$winsim_pid" 2>/dev/null || true
		wait "$winsim_pid" 2>/dev/null || true
	fi
	exec 3<&- 2>/dev/null || true
	if [[ $rc -ne 0 && -f "$work/winsim.log" ]]; then
		echo "testacc-host-sim: failed (exit $rc); the simulator's last log lines:" >&2
		tail -n 30 "$work/winsim.log" >&2 || true
	fi
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkfifo "$work/winsim.out"
bin/winsim --config internal/hostsuite/testdata/sim.json --cert-dir "$work/certs" --log "$work/winsim.log" \
	>"$work/winsim.out" </dev/null &
winsim_pid=$!
exec 3<"$work/winsim.out"
info=""
if ! IFS= read -r -t 30 -u 3 info || [[ -z "$info" ]]; then
	die "the simulator printed no listener line within 30s"
fi
printf '%s\n' "$info" >"$work/winsim.json"
# shellcheck disable=SC2046 # python prints KEY=value words, each shell-quoted
eval "$(python3 - "$work/winsim.json" <<'PY'
import json, shlex, sys
info = json.load(open(sys.argv[1]))
h = info["hosts"][0]
env = {
    "MSSQLIFI_ACC_HOST": h["address"],
    "MSSQLIFI_ACC_PORT": h["winrm"].rsplit(":", 1)[1],
    "MSSQLIFI_ACC_SIM_CONTROL": "http://" + info["control"],
    "MSSQLIFI_ACC_SQL_CA_CERT": info["ca_cert"],
}
for k, v in env.items():
    print("export %s=%s" % (k, shlex.quote(v)))
PY
)"

# The same variables a user sets for a Windows host (README "Development").
export MSSQLIFI_ACC_INSTANCE=MSSQLSERVER
export MSSQLIFI_ACC_AUTH=ntlm
export MSSQLIFI_ACC_HTTPS=false
export MSSQLIFI_WINRM_USERNAME=mssqlifi_admin
export MSSQLIFI_WINRM_PASSWORD='Rehearsal-WinRM-Pa55!'
export MSSQLIFI_SQL_USERNAME=mssqlifi_verify
export MSSQLIFI_SQL_PASSWORD='Rehearsal-SQL-Pa55!'
export MSSQLIFI_ACC_SQL_ENCRYPT=strict
export MSSQLIFI_ACC_SEED_SQL_USERNAME=mssqlifi_seed
export MSSQLIFI_ACC_SEED_SQL_PASSWORD='Rehearsal-Seed-Pa55!'
export MSSQLIFI_ACC_STAGES=preflight,read,change,restart,seed
export MSSQLIFI_ACC_DISPOSABLE_INSTANCE=MSSQLSERVER
unset MSSQLIFI_ACC_LOCAL MSSQLIFI_ACC_DRY_RUN TF_CLI_CONFIG_FILE

echo "==> the dry run (contacts nothing)"
bin/hostsuite -dry-run -terraform "$tf" -provider-dir bin -step-timeout 2m

echo "==> every stage against the simulated host, recorded (MSSQLIFI_ACC_RECORD)"
MSSQLIFI_ACC_RECORD="$work/transcripts" \
	bin/hostsuite -terraform "$tf" -provider-dir bin -step-timeout 2m -summary-md "$work/summary.md"
ls "$work/transcripts"/*.json >/dev/null || die "no transcript was written"
echo "==> the Markdown summary (-summary-md)"
cat "$work/summary.md"
