#!/usr/bin/env bash
# vulncheck.sh: govulncheck on ./... (GOVULNCHECK names the binary; make vulncheck
# builds it from tools/go.mod).
#
# The database: govulncheck's own (vuln.go.dev) when it answers; otherwise the same
# reports as the Go module proxy serves them, in the module golang.org/x/vulndb
# (data/osv/*.json, one OSV file per report, updated as reports land), which
# govulncheck reads as a local database. When neither can be had, the check is
# reported as a labelled SKIP and exits 0: a missing network is not a failure.
#
# Exit: 0 clean or skipped; 3 vulnerabilities found (printed in full; CI fails on
# them); anything else: the tool failed. The standard library's findings are those of
# the Go release the go command runs (go.mod's toolchain line under the GNUmakefile's
# GOTOOLCHAIN=auto), named on the line before the scan.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bin="${GOVULNCHECK:?GOVULNCHECK must name the govulncheck binary (make vulncheck sets it)}"

db=""
if command -v curl >/dev/null 2>&1 &&
	curl -fsS -m 10 -o /dev/null https://vuln.go.dev/index/db.json 2>/dev/null; then
	echo "vulncheck: database: vuln.go.dev"
else
	echo "vulncheck: vuln.go.dev is unreachable; fetching golang.org/x/vulndb@latest from the Go module proxy"
	work="$(mktemp -d)"
	trap 'rm -rf "$work"' EXIT
	# Outside any module, so the download never touches a go.mod.
	if info="$(cd "$work" && GO111MODULE=on GOFLAGS=-mod=mod go mod download -json golang.org/x/vulndb@latest 2>"$work/err")" ||
		{ printf '%s\n' "$info" >>"$work/err"; false; }; then
		dir="$(sed -n '/^[[:space:]]*"Dir": /{s/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p;q;}' <<<"$info")"
		version="$(sed -n '/^[[:space:]]*"Version": /{s/^[[:space:]]*"Version": "\(.*\)",\{0,1\}$/\1/p;q;}' <<<"$info")"
		if [[ -n "$dir" && -d "$dir/data/osv" ]]; then
			db="file://$dir/data/osv"
			echo "vulncheck: database: golang.org/x/vulndb $version ($(find "$dir/data/osv" -name '*.json' | wc -l) reports)"
		fi
	fi
	if [[ -z "$db" ]]; then
		echo "vulncheck: SKIP: vulnerability database unreachable (vuln.go.dev does not answer, and"
		echo "vulncheck: SKIP: golang.org/x/vulndb could not be fetched from the Go module proxy:"
		sed 's/^/vulncheck: SKIP:   /' "$work/err" 2>/dev/null || true
		echo "vulncheck: SKIP: no vulnerability check was made; this is not a pass."
		exit 0
	fi
fi

echo "vulncheck: govulncheck $("$bin" -version 2>/dev/null | sed -n 's/^Scanner: //p') on ./... with $(go env GOVERSION) (GOTOOLCHAIN=${GOTOOLCHAIN:-unset}; reading and type-checking the code: 1 to 2 minutes on 2 cores)"
rc=0
"$bin" ${db:+-db "$db"} ./... || rc=$?
case "$rc" in
0) echo "vulncheck: no known vulnerability is reachable from this code" ;;
3)
	echo "vulncheck: vulnerabilities found (above): a module's, go get it at the fixed version, then go mod tidy;"
	echo "vulncheck: the standard library's, raise the toolchain line of go.mod and of each tools/*/go.mod to the fixed release"
	;;
*) echo "vulncheck: govulncheck failed (exit $rc): see above" ;;
esac
exit "$rc"
