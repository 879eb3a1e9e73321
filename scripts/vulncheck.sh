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
# Exit: 0 clean or skipped; 3 vulnerabilities found (printed in full), unless
# VULNCHECK_REPORT_ONLY=1, which prints them and exits 0; anything else: the tool
# failed.
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

echo "vulncheck: govulncheck $("$bin" -version 2>/dev/null | sed -n 's/^Scanner: //p') on ./... (reading and type-checking the code: 1 to 2 minutes on 2 cores)"
rc=0
"$bin" ${db:+-db "$db"} ./... || rc=$?
case "$rc" in
0) echo "vulncheck: no known vulnerability is reachable from this code" ;;
3)
	if [[ "${VULNCHECK_REPORT_ONLY:-0}" == 1 ]]; then
		echo "vulncheck: VULNERABILITIES FOUND (above). VULNCHECK_REPORT_ONLY=1: reported, not failing."
		echo "vulncheck: standard-library ones need a newer Go patch release; module ones a go get of the fixed version."
		rc=0
	else
		echo "vulncheck: vulnerabilities found (above): update the modules named to their fixed versions"
	fi
	;;
*) echo "vulncheck: govulncheck failed (exit $rc): see above" ;;
esac
exit "$rc"
