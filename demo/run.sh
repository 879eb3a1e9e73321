#!/usr/bin/env bash
# make demo: the provider against a simulated fleet, no Windows needed.
#
#   1. start internal/winsim with demo/fleet.json (two hosts, three instances, and a
#      two-node failover cluster instance whose second node lacks the right)
#   2. show each instance as the simulator sees it
#   3. terraform apply over WinRM HTTP with negotiate (the recommended configuration):
#      grant the right, restart, verify through SQL Server; before and after it, the
#      seed measurement (CREATE DATABASE with a 1 GB data file, then DROP) with the
#      times the simulator's zeroing model charged and their ratio, beside the same
#      model's at the article's 10 GB and the article's: modelled, not measured
#   4. revoke the right behind Terraform's back; terraform plan catches it
#   5. apply again; the next plan is empty
#   6. destroy and clean up
#
# Uses the terraform on PATH (or OpenTofu built by scripts/ensure-terraform.sh; set
# MSSQLIFI_TF=tofu to prefer it) and a CLI config with dev_overrides, so no registry
# and no terraform init. Needs python3 for the small JSON helper in demo/fleetctl.py.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
started=$SECONDS

bold=""; dim=""; reset=""
if [[ -t 1 ]]; then bold=$'\e[1m'; dim=$'\e[2m'; reset=$'\e[0m'; fi
step() { printf '\n%s==> %s%s %s(%ss)%s\n' "$bold" "$*" "$reset" "$dim" "$((SECONDS - started))" "$reset"; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }

command -v python3 >/dev/null || die "python3 is needed to read the simulator's JSON: install it (apt-get install python3) and run make demo again"

tf="$(scripts/ensure-terraform.sh)" || die "no terraform or OpenTofu available (see the messages above)"
tfname="$(basename "$tf")"

if [[ ! -x bin/terraform-provider-mssqlifi || ! -x bin/winsim || ! -x bin/demo-seedsql ]]; then
	step "Building the provider and the simulator"
	make --no-print-directory build bin/demo-seedsql
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/mssqlifi-demo.XXXXXX")"
winsim_pid=""
applied=0
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ $applied -eq 1 && -n "$winsim_pid" ]] && kill -0 "$winsim_pid" 2>/dev/null; then
		echo "demo: cleaning up after a failure: terraform destroy" >&2
		"$tf" -chdir="$work" destroy -auto-approve -no-color >"$work/destroy-on-failure.log" 2>&1 || true
	fi
	if [[ -n "$winsim_pid" ]]; then
		kill -TERM "$winsim_pid" 2>/dev/null || true
		wait "$winsim_pid" 2>/dev/null || true
	fi
	exec 3<&-
	if [[ $rc -ne 0 && -f "$work/winsim.log" ]]; then
		# Keep the evidence: demo/failed-run/ is ignored by git.
		rm -rf "$root/demo/failed-run"
		mkdir -p "$root/demo/failed-run"
		cp -r "$work"/*.log "$work"/*.json "$work"/*.tf "$root/demo/failed-run/" 2>/dev/null || true
		echo "demo: failed (exit $rc); logs kept in demo/failed-run/. Last lines of the simulator's log:" >&2
		tail -n 20 "$work/winsim.log" >&2 || true
	fi
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- 1. the simulator -------------------------------------------------------------
step "Starting the simulated fleet (internal/winsim, demo/fleet.json)"
mkfifo "$work/winsim.out"
bin/winsim --config demo/fleet.json --cert-dir "$work/certs" --log "$work/winsim.log" \
	>"$work/winsim.out" </dev/null &
winsim_pid=$!
# Keep the read end open for the simulator's whole life.
exec 3<"$work/winsim.out"
info=""
if ! IFS= read -r -t 30 -u 3 info || [[ -z "$info" ]]; then
	die "the simulator printed no listener line within 30s (see its log above)"
fi
printf '%s\n' "$info" >"$work/winsim.json"
control="$(python3 demo/fleetctl.py control "$work/winsim.json")"
echo "control plane: http://$control"
python3 demo/fleetctl.py listeners "$work/winsim.json"

# --- the working directory: config, variables, CLI config ---------------------------
cp demo/main.tf "$work/main.tf"
python3 demo/fleetctl.py tfvars "$work/winsim.json" demo/fleet.json >"$work/terraform.tfvars.json"
scripts/dev-overrides.sh >"$work/cli.tfrc"
export TF_CLI_CONFIG_FILE="$work/cli.tfrc"
echo "$tfname will warn \"Provider development overrides are in effect\": expected here, it means the provider comes from this build (bin/) instead of a registry."
echo "The provider logs on over WinRM HTTP with auth = \"negotiate\", every message encrypted: the recommended configuration."
echo "The simulated domain has no KDC, so negotiate uses NTLM and warns \"NTLM instead of Kerberos on <host>: no realm\" once per host and run: expected here, as for any host reached without a Kerberos realm."
export TF_IN_AUTOMATION=1
export CHECKPOINT_DISABLE=1
unset TF_LOG TF_CLI_ARGS TF_DATA_DIR
# Credentials through the environment, as a pipeline would pass them.
eval "$(python3 demo/fleetctl.py credentials demo/fleet.json)"
export MSSQLIFI_WINRM_USERNAME MSSQLIFI_WINRM_PASSWORD MSSQLIFI_SQL_USERNAME MSSQLIFI_SQL_PASSWORD
export MSSQLIFI_ACC_SEED_SQL_USERNAME MSSQLIFI_ACC_SEED_SQL_PASSWORD
seed_addr="$(python3 demo/fleetctl.py sql-addr "$work/winsim.json" sql01 MSSQLSERVER)"
# seed: the seed measurement on sql01/MSSQLSERVER (1 GB data file, 8 MB log), then
# the times the simulator's zeroing model charged, the ratio at this size, and the
# model's and the article's at the article's size.
seed() {
	timeout --kill-after=15 "$step_timeout" bin/demo-seedsql -server "$seed_addr" -data-mb 1024 \
		|| die "the seed measurement's CREATE DATABASE / DROP DATABASE on sql01/MSSQLSERVER failed"
	python3 demo/fleetctl.py seed-report "$control" sql01 MSSQLSERVER
}

# Every step is bounded, so a hung step fails the demo instead of stalling it.
step_timeout="${MSSQLIFI_DEMO_STEP_TIMEOUT:-150}"
run_tf() {
	local rc=0
	timeout --kill-after=15 "$step_timeout" "$tf" -chdir="$work" "$@" -no-color || rc=$?
	if [[ $rc -eq 124 || $rc -eq 137 ]]; then
		die "$tfname $1 did not finish within ${step_timeout}s"
	fi
	return "$rc"
}

# expect_plan CODE WHEN MEANING: plan with -detailed-exitcode and insist on CODE
# (0 = no changes, 2 = changes).
expect_plan() {
	local want=$1 when=$2 meaning=$3 rc
	set +e
	run_tf plan -detailed-exitcode -compact-warnings
	rc=$?
	set -e
	[[ $rc -eq $want ]] || die "$tfname plan exited $rc $when; expected $want ($meaning)"
	echo "plan exit code: $rc ($meaning)"
}

# --- 2. before ---------------------------------------------------------------------
step "Before: what each host's service control manager and LSA say"
python3 demo/fleetctl.py show "$control"

step "What IFI would save, before: CREATE DATABASE (1 GB data, 8 MB log) and DROP on sql01/MSSQLSERVER, IFI off"
seed

# --- 3. apply ----------------------------------------------------------------------
step "$tfname apply: grant SeManageVolumePrivilege to each Engine's service SID, restart, verify"
applied=1
run_tf apply -auto-approve

step "After: what the hosts say"
python3 demo/fleetctl.py show "$control"

step "The same CREATE DATABASE after the apply: IFI on (times modelled by the simulator, not measured)"
seed

step "Discovery: each host's instances as the host lists them (data.mssqlifi_instances), against the inventory"
run_tf output -json discovered | python3 demo/fleetctl.py check-discovered "$work/terraform.tfvars.json" \
	|| die "the hosts' instances differ from the inventory (see above)"

# --- 4. drift ----------------------------------------------------------------------
drift_key="$(python3 demo/fleetctl.py first-key "$work/terraform.tfvars.json")"
drift_host="${drift_key%%/*}"
drift_sid="$(run_tf output -json grantee_sids | python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$drift_key")"
step "Someone revokes the right on $drift_key behind Terraform's back (control API)"
python3 demo/fleetctl.py revoke "$control" "$drift_host" "$drift_sid"
python3 demo/fleetctl.py show "$control"

step "$tfname plan notices (exit code 2 = changes)"
expect_plan 2 "after the revoke" "drift detected"

# --- 5. repair ---------------------------------------------------------------------
step "$tfname apply puts it back"
run_tf apply -auto-approve -compact-warnings

step "$tfname plan is empty again (exit code 0)"
expect_plan 0 "after the repair" "no changes"
python3 demo/fleetctl.py show "$control"

# --- 6. destroy --------------------------------------------------------------------
step "$tfname destroy: revokes the grants, never restarts (IFI stays on until the next restart)"
run_tf destroy -auto-approve
applied=0
python3 demo/fleetctl.py show "$control"

step "Done in $((SECONDS - started))s"
