#!/usr/bin/env bash
# winsim-test-env.sh: runs a command against a freshly started Windows host simulator,
# then stops the simulator. For `terraform test` / `tofu test` of modules that use
# this provider, without Windows (README: "Test your modules without Windows").
#
#   scripts/winsim-test-env.sh [-c CONFIG.json] [-C DIR] [--] COMMAND [ARG...]
#
#   -c CONFIG   winsim configuration (default: internal/winsim/examples/fleet.json)
#   -C DIR      run COMMAND in DIR (default: the current directory)
#
# COMMAND sees:
#   WINSIM_VAR_FILE      a variables file {"winsim": LINE}, LINE being winsim's
#                        listener line (JSON: control, ca_cert, hosts[] with name,
#                        address, winrm, winrm_https, instances[] with name, sql)
#   TF_CLI_ARGS_test     -var-file=$WINSIM_VAR_FILE added, so that in `terraform test`
#                        and `tofu test` a test file reads var.winsim.hosts[0].winrm
#                        (a variables file, not TF_VAR_winsim: OpenTofu reads an
#                        undeclared TF_VAR_ variable as a string, Terraform as HCL)
#   WINSIM_CONTROL       the control plane's address (host:port)
#   WINSIM_CA_CERT       the CA certificate that signed every simulated host's
#                        certificate: DIR/.winsim/ca.pem, so that a provider block in
#                        a test file can read it as file(".winsim/ca.pem") (OpenTofu
#                        does not let test-file provider blocks use test variables);
#                        DIR/.winsim is removed afterwards when the helper made it
#   MSSQLIFI_WINRM_USERNAME, MSSQLIFI_WINRM_PASSWORD
#                        the first WinRM user of the first host in CONFIG
#   MSSQLIFI_SQL_USERNAME, MSSQLIFI_SQL_PASSWORD
#                        the first SQL login of that host's first instance
#   TF_CLI_CONFIG_FILE   a CLI configuration whose filesystem mirror holds the local
#                        provider build, so `terraform init` works offline
#
# Binaries: WINSIM (default bin/winsim of this repository, else winsim on PATH) and
# MSSQLIFI_PROVIDER (default bin/terraform-provider-mssqlifi if built; "" or no build:
# no mirror, init installs the provider from the registry), put into the mirror as
# version MSSQLIFI_VERSION (default 0.1.0).
# The simulator's log goes to $WINSIM_LOG (default: a temporary file, printed on
# failure). Exit status: COMMAND's.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

config="$root/internal/winsim/examples/fleet.json"
dir="$PWD"
while getopts "c:C:h" opt; do
	case "$opt" in
	c) config="$(cd "$(dirname "$OPTARG")" && pwd)/$(basename "$OPTARG")" ;;
	C) dir="$OPTARG" ;;
	h) sed -n '2,30p' "${BASH_SOURCE[0]}"; exit 0 ;;
	*) echo "usage: $0 [-c CONFIG.json] [-C DIR] [--] COMMAND [ARG...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[[ "${1:-}" == "--" ]] && shift
[[ $# -gt 0 ]] || { echo "winsim-test-env: no command given; usage: $0 [-c CONFIG.json] [-C DIR] [--] COMMAND [ARG...]" >&2; exit 2; }
[[ -f "$config" ]] || { echo "winsim-test-env: the configuration $config does not exist" >&2; exit 2; }
command -v python3 >/dev/null || { echo "winsim-test-env: python3 is needed to read winsim's JSON: install it" >&2; exit 1; }

winsim="${WINSIM:-}"
if [[ -z "$winsim" ]]; then
	if [[ -x "$root/bin/winsim" ]]; then winsim="$root/bin/winsim"; else winsim="$(command -v winsim || true)"; fi
fi
[[ -n "$winsim" && -x "$winsim" ]] || {
	echo "winsim-test-env: no winsim binary: run make build, or go install github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/cmd/winsim@latest, or set WINSIM" >&2
	exit 1
}
if [[ -n "${MSSQLIFI_PROVIDER+set}" ]]; then
	provider="$MSSQLIFI_PROVIDER"
elif [[ -x "$root/bin/terraform-provider-mssqlifi" ]]; then
	provider="$root/bin/terraform-provider-mssqlifi"
else
	provider=""
	echo "winsim-test-env: no local provider build (bin/terraform-provider-mssqlifi, or MSSQLIFI_PROVIDER): terraform init installs the provider from the registry" >&2
fi
version="${MSSQLIFI_VERSION:-0.1.0}"

work="$(mktemp -d "${TMPDIR:-/tmp}/winsim-test-env.XXXXXX")"
log="${WINSIM_LOG:-$work/winsim.log}"
winsim_pid=""
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n "$winsim_pid" ]]; then
		kill -TERM "$winsim_pid" 2>/dev/null || true
		wait "$winsim_pid" 2>/dev/null || true
	fi
	exec 3<&- 2>/dev/null || true
	if [[ $rc -ne 0 && -f "$log" ]]; then
		echo "winsim-test-env: exit $rc; the simulator's last log lines ($log):" >&2
		tail -n 20 "$log" >&2 || true
	fi
	rm -rf "$work"
	if [[ "${made_certdir:-0}" -eq 1 ]]; then rm -rf "$certdir"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkfifo "$work/winsim.out"
certdir="$dir/.winsim"
made_certdir=0
if [[ ! -e "$certdir" ]]; then
	mkdir -p "$certdir"
	made_certdir=1
fi
"$winsim" --config "$config" --cert-dir "$certdir" --log "$log" >"$work/winsim.out" </dev/null &
winsim_pid=$!
exec 3<"$work/winsim.out"
info=""
if ! IFS= read -r -t 30 -u 3 info || [[ -z "$info" ]]; then
	echo "winsim-test-env: winsim printed no listener line within 30s (configuration $config)" >&2
	exit 1
fi

pyget() { python3 -c "$1" "$info" "$config"; }
export WINSIM_VAR_FILE="$work/winsim.tfvars.json"
printf '{"winsim": %s}\n' "$info" >"$WINSIM_VAR_FILE"
export TF_CLI_ARGS_test="${TF_CLI_ARGS_test:+$TF_CLI_ARGS_test }-var-file=$WINSIM_VAR_FILE"
WINSIM_CONTROL="$(pyget 'import json,sys; print(json.loads(sys.argv[1])["control"])')"
WINSIM_CA_CERT="$(pyget 'import json,sys; print(json.loads(sys.argv[1])["ca_cert"])')"
export WINSIM_CONTROL WINSIM_CA_CERT
# The configuration may carry "//" comment keys; credentials are the first ones given.
creds="$(pyget '
import json, sys
h = json.load(open(sys.argv[2]))["hosts"][0]
u = h["winrm"]["users"][0]
logins = (h.get("instances") or [{}])[0].get("logins") or [{}]
print(u["name"]); print(u["password"])
print(logins[0].get("name", "")); print(logins[0].get("password", ""))
')"
{ read -r MSSQLIFI_WINRM_USERNAME; read -r MSSQLIFI_WINRM_PASSWORD; read -r MSSQLIFI_SQL_USERNAME; read -r MSSQLIFI_SQL_PASSWORD; } <<<"$creds"
export MSSQLIFI_WINRM_USERNAME MSSQLIFI_WINRM_PASSWORD MSSQLIFI_SQL_USERNAME MSSQLIFI_SQL_PASSWORD

if [[ -n "$provider" ]]; then
	[[ -x "$provider" ]] || { echo "winsim-test-env: no provider binary at $provider: run make build, or set MSSQLIFI_PROVIDER" >&2; exit 1; }
	case "$(uname -m)" in x86_64 | amd64) arch=amd64 ;; aarch64 | arm64) arch=arm64 ;; *) arch="$(uname -m)" ;; esac
	os_arch="$(uname -s | tr '[:upper:]' '[:lower:]')_$arch"
	for registry in registry.terraform.io registry.opentofu.org; do
		d="$work/mirror/$registry/mssqlifi/mssqlifi/$version/$os_arch"
		mkdir -p "$d"
		cp "$provider" "$d/terraform-provider-mssqlifi_v$version"
	done
	cat >"$work/cli.tfrc" <<TFRC
provider_installation {
  filesystem_mirror {
    path    = "$work/mirror"
    include = ["registry.terraform.io/mssqlifi/mssqlifi", "registry.opentofu.org/mssqlifi/mssqlifi"]
  }
  direct {
    exclude = ["registry.terraform.io/mssqlifi/mssqlifi", "registry.opentofu.org/mssqlifi/mssqlifi"]
  }
}
TFRC
	export TF_CLI_CONFIG_FILE="$work/cli.tfrc"
fi
export CHECKPOINT_DISABLE=1

echo "winsim-test-env: winsim is up (control http://$WINSIM_CONTROL); running: $*" >&2
rc=0
(cd "$dir" && "$@") || rc=$?
exit "$rc"
