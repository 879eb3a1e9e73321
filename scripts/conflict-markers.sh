#!/usr/bin/env bash
# conflict-markers.sh [DIR]: no file git tracks in DIR's repository (default: this
# one) holds a line that git writes for a merge conflict: a line that starts with
# seven '<', '|' or '>' followed by a space or its end, or a line of exactly seven
# '='. Binary files are skipped (git grep -I). It prints each such line as
# file:line: text and exits 1 when there is one (2 when git fails).
#
# No file of this repository holds such a line legitimately (the LICENSE's rule is
# longer than seven '='; Markdown's headings are written with '#'), so there is no
# exception list. The patterns are built from parts so that this file holds no
# marker of its own.
set -euo pipefail
dir="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"

seven() { local s; printf -v s '%7s' ''; printf '%s' "${s// /$1}"; }
lt="$(seven '<')" gt="$(seven '>')" eq="$(seven '=')" bar="$(seven '\|')"
pattern="^(${lt}|${bar}|${gt})( |\$)|^${eq}\$"

rc=0
out="$(git -C "$dir" grep -I -n -E -e "$pattern" -- . 2>&1)" || rc=$?
case "$rc" in
0)
	printf '%s\n' "$out"
	echo "conflict-markers: the lines above are left from a merge conflict: resolve them (keep one side), then make docs if a template held them"
	exit 1
	;;
1) echo "conflict-markers: no merge-conflict marker in the tracked files" ;;
*)
	printf '%s\n' "$out" >&2
	echo "conflict-markers: git grep failed (exit $rc)" >&2
	exit 2
	;;
esac
