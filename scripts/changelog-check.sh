#!/usr/bin/env bash
# changelog-check.sh: every changie entry in .changes/unreleased/ has a kind that
# .changie.yaml lists, a non-empty body and a time, so `changie batch` at release
# time takes them all. Prints one line per entry.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mapfile -t kinds < <(sed -n 's/^  - label: //p' .changie.yaml)
[[ ${#kinds[@]} -gt 0 ]] || { echo "changelog-check: no kinds found in .changie.yaml" >&2; exit 1; }
is_kind() { local k; for k in "${kinds[@]}"; do [[ "$k" == "$1" ]] && return 0; done; return 1; }
fail=0 n=0
shopt -s nullglob
for f in .changes/unreleased/*.yaml; do
	n=$((n + 1))
	kind="$(sed -n 's/^kind: //p' "$f")"
	body="$(sed -n 's/^body: //p' "$f")"
	time="$(sed -n 's/^time: //p' "$f")"
	if ! is_kind "$kind"; then
		echo "changelog-check: $f: kind \"$kind\" is not one of: ${kinds[*]}" >&2; fail=1
	elif [[ -z "${body//[\' ]/}" ]]; then
		echo "changelog-check: $f: the body is empty: say what changed for users" >&2; fail=1
	elif [[ ! "$time" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T ]]; then
		echo "changelog-check: $f: no RFC 3339 time: line" >&2; fail=1
	else
		echo "changelog-check: ok: $kind: ${body:0:70}..."
	fi
done
[[ $n -gt 0 ]] || echo "changelog-check: no unreleased entries"
exit "$fail"
