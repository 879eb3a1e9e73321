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
#      restart, seed, and the optional cluster stage against the two-node failover
#      cluster instance of sim.json, with MSSQLIFI_ACC_FCI_CHANGE=true), recorded,
#      the WinRM cut of stage 4 played by the control action restart_winrm
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
	# Every host of the rehearsal listens for WinRM on one port, as real cluster
	# nodes do (5985; the provider reaches each node at the resource's port): a
	# free one, written into a copy of sim.json.
	python3 - "$root/internal/hostsuite/testdata/sim.json" "$work/sim.json" <<'PY'
import json, socket, sys
cfg = json.load(open(sys.argv[1]))
addrs = [h["address"] for h in cfg["hosts"]]
for _ in range(20):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    try:
        for a in addrs:
            t = socket.socket(); t.bind((a, port)); t.close()
        break
    except OSError:
        continue
for h in cfg["hosts"]:
    h.setdefault("winrm", {})["http_port"] = port
json.dump(cfg, open(sys.argv[2], "w"), indent=1)
PY
	rc=0
	MSSQLIFI_PROVIDER="" "$root/scripts/winsim-test-env.sh" -c "$work/sim.json" -C "$work" \
		-- "$root/scripts/testacc-host-sim.sh" --inside "$tf" "$work" || rc=$?
	exit "$rc"
fi

# Inside winsim-test-env.sh: the simulator runs, its listener line is in WINSIM_VAR_FILE.
tf="$2" work="$3"
eval "$(python3 - "$WINSIM_VAR_FILE" <<'PY'
import json, shlex, sys
w = json.load(open(sys.argv[1]))["winsim"]
h = w["hosts"][0]
# The cluster stage: the first node, every node's address by its cluster name (the
# computer name), SQL Server on the role's virtual address.
c = w["clusters"][0]
addr = {x["name"]: x["address"] for x in w["hosts"]}
for k, v in (("MSSQLIFI_ACC_HOST", h["address"]), ("MSSQLIFI_ACC_PORT", h["winrm"].rsplit(":", 1)[1]),
             ("MSSQLIFI_ACC_FCI_NODE", addr[c["nodes"][0]]),
             ("MSSQLIFI_ACC_FCI_NODES", ",".join("%s=%s" % (n.upper(), addr[n]) for n in c["nodes"])),
             ("MSSQLIFI_ACC_FCI_SQL_HOST", c["roles"][0]["sql"].rsplit(":", 1)[0])):
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
export MSSQLIFI_ACC_STAGES=preflight,read,change,restart,seed,cluster
export MSSQLIFI_ACC_FCI_INSTANCE=MSSQLSERVER
export MSSQLIFI_ACC_FCI_CHANGE=true
export MSSQLIFI_ACC_DISPOSABLE_INSTANCE="$MSSQLIFI_ACC_HOST/MSSQLSERVER" # HOST/INSTANCE: both must match
unset MSSQLIFI_ACC_LOCAL MSSQLIFI_ACC_DRY_RUN
args=(-terraform "$tf" -provider-dir "$root/bin" -step-timeout 2m)

echo "==> the dry run (contacts nothing)"
"$root/bin/hostsuite" -dry-run "${args[@]}"

echo "==> every stage against the simulated host, recorded (MSSQLIFI_ACC_RECORD)"
MSSQLIFI_ACC_RECORD="$work/transcripts" "$root/bin/hostsuite" "${args[@]}" -summary-md "$work/summary.md"
ls "$work/transcripts"/*.json >/dev/null || die "no transcript was written"
echo "==> the Markdown summary (-summary-md)"
cat "$work/summary.md"
