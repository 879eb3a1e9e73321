#!/usr/bin/env bash
# check-winsim-install.sh: proves that module authors can install the simulator with
#   go install github.com/mssqlifi/terraform-provider-mssqlifi/cmd/winsim@VERSION
# from outside this module (the command sits at cmd/winsim; the packages it imports
# stay under internal/, which Go's internal rule allows within one module).
# It serves the committed HEAD as a module version from a file-based GOPROXY (the
# dependencies come from the module cache, nothing from the network) and runs that
# go install in an empty folder. The dependencies must already be in the module
# cache (make build does that); they were verified against the checksum database when
# first downloaded, so this offline install does not ask it again (GOSUMDB=off).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mod="github.com/mssqlifi/terraform-provider-mssqlifi"
# A pseudo-version of HEAD (its commit time and hash), as go install ...@<commit>
# would resolve: one version name per content, so no build or module cache entry of
# another commit can stand in for it.
ver="v0.0.0-$(cd "$root" && TZ=UTC git show -s --date=format-local:%Y%m%d%H%M%S --format=%cd HEAD)-$(cd "$root" && git rev-parse --short=12 HEAD)"
work="$(mktemp -d)"
# The module cache keeps what it downloaded: drop this check's version before and
# after, so each run installs the HEAD it was given.
modcache="$(go env GOMODCACHE)"
forget() {
	local d
	for d in "$modcache/$mod@$ver" "$modcache/cache/download/$mod/@v"; do
		[[ -e "$d" ]] || continue
		chmod -R u+w "$d"
		if [[ "$d" == */@v ]]; then rm -f "$d/$ver".*; else rm -rf "$d"; fi
	done
}
forget
trap 'rm -rf "$work"; forget' EXIT
at="$work/proxy/$mod/@v"
mkdir -p "$at" "$work/bin" "$work/elsewhere"
(cd "$root" && git archive --format=zip --prefix="$mod@$ver/" -o "$at/$ver.zip" HEAD -- ':!tools')
(cd "$root" && git show HEAD:go.mod) >"$at/$ver.mod"
printf '{"Version":"%s","Time":"2026-01-01T00:00:00Z"}\n' "$ver" >"$at/$ver.info"
printf '%s\n' "$ver" >"$at/list"
if ! (cd "$work/elsewhere" && env GOPROXY="file://$work/proxy,off" GOSUMDB=off GOFLAGS=-mod=mod GOBIN="$work/bin" \
	go install "$mod/cmd/winsim@$ver"); then
	echo "check-winsim-install: FAIL: go install $mod/cmd/winsim@VERSION does not work from outside the module (the error above says why)" >&2
	exit 1
fi
# The whole usage first: `winsim --help | grep -q` under pipefail fails whenever grep
# exits at its first match and winsim dies of SIGPIPE writing the rest (7 runs in 200).
usage="$("$work/bin/winsim" --help 2>&1)" || true
[[ "$usage" == *--config* ]] || { echo "check-winsim-install: FAIL: the installed winsim does not print its usage" >&2; exit 1; }
echo "check-winsim-install: ok: go install $mod/cmd/winsim@<version> works from outside the module"
