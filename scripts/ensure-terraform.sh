#!/usr/bin/env bash
# Prints the path of a Terraform-compatible CLI on stdout; progress goes to stderr.
#
#   terraform on PATH, unless MSSQLIFI_TF=tofu asks for OpenTofu;
#   otherwise OpenTofu v1.12.6 built from the Go module proxy (Terraform itself cannot
#   be built from the proxy), cached under ${XDG_CACHE_HOME:-$HOME/.cache}/mssqlifi.
#
# The build takes 4 to 5 minutes on two cores (longer on a busy machine), once; later
# calls reuse it.
set -euo pipefail

TOFU_VERSION="${MSSQLIFI_TOFU_VERSION:-1.12.6}"
CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/mssqlifi/tofu-${TOFU_VERSION}"
TOFU_BIN="$CACHE_DIR/tofu"

log() { printf 'ensure-terraform: %s\n' "$*" >&2; }

if [[ "${MSSQLIFI_TF:-}" != "tofu" ]]; then
	if tf="$(command -v terraform 2>/dev/null)"; then
		printf '%s\n' "$tf"
		exit 0
	fi
	log "terraform is not on PATH; using OpenTofu v${TOFU_VERSION} instead"
fi

# A cached build counts only if it is the release version asked for (not a -dev build).
cached_ok() {
	[[ -x "$TOFU_BIN" ]] || return 1
	local v
	# The whole output first: `| head -n1` under pipefail fails when tofu dies of SIGPIPE.
	v="$(TF_CLI_CONFIG_FILE=/dev/null "$(dirname "${BASH_SOURCE[0]}")/tf-version.sh" "$TOFU_BIN" 2>/dev/null)" || return 1
	[[ "$v" == "OpenTofu v${TOFU_VERSION}" ]]
}

if cached_ok; then
	printf '%s\n' "$TOFU_BIN"
	exit 0
fi

if ! command -v go >/dev/null 2>&1; then
	log "go is not on PATH: install Go 1.26.8 (the version in go.mod) or put terraform on PATH, then run this again"
	exit 1
fi

mkdir -p "$CACHE_DIR"
# Serialise concurrent builds (two make targets at once) on a lock file.
exec 9>"$CACHE_DIR/.lock"
if command -v flock >/dev/null 2>&1; then
	flock 9
fi
if cached_ok; then
	printf '%s\n' "$TOFU_BIN"
	exit 0
fi

start=$SECONDS
log "downloading github.com/opentofu/opentofu@v${TOFU_VERSION} from the Go module proxy"
# Run outside any module so the download never touches a go.mod.
workdir="$(mktemp -d)"
trap 'rm -rf "$workdir"' EXIT
modinfo="$(cd "$workdir" && GO111MODULE=on GOFLAGS=-mod=mod go mod download -json "github.com/opentofu/opentofu@v${TOFU_VERSION}")" || {
	log "go mod download of OpenTofu v${TOFU_VERSION} failed: check that the Go module proxy is reachable (GOPROXY=$(go env GOPROXY))"
	exit 1
}
moddir="$(sed -n '/^[[:space:]]*"Dir": /{s/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p;q;}' <<<"$modinfo")"
if [[ -z "$moddir" || ! -d "$moddir" ]]; then
	log "could not find the OpenTofu module folder in go mod download's answer:"
	printf '%s\n' "$modinfo" >&2
	exit 1
fi

log "building tofu from $moddir into $CACHE_DIR: 4 to 5 minutes on 2 cores, once (a line every 30 s meanwhile)"
# The module folder is read-only; the build writes only to -o and the build cache.
# heartbeat.sh's lines go to stderr: this script's stdout is the CLI's path only.
heartbeat="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/heartbeat.sh"
if ! (cd "$moddir" && GOFLAGS=-buildvcs=false "$heartbeat" "building OpenTofu" go build -trimpath \
	-ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" \
	-o "$TOFU_BIN.tmp" ./cmd/tofu) >&2; then
	rm -f "$TOFU_BIN.tmp"
	log "building OpenTofu failed (see above); install terraform on PATH as an alternative"
	exit 1
fi
mv -f "$TOFU_BIN.tmp" "$TOFU_BIN"
log "built $(TF_CLI_CONFIG_FILE=/dev/null "$(dirname "${BASH_SOURCE[0]}")/tf-version.sh" "$TOFU_BIN") in $((SECONDS - start))s"
printf '%s\n' "$TOFU_BIN"
