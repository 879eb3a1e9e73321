#!/usr/bin/env bash
# test-conflict-markers.sh: scripts/conflict-markers.sh fails on each kind of marker
# line git writes (in a tracked file of a scratch repository, as templates/index.md.tmpl
# held them), passes on lines that only look alike (a longer rule of '=', a marker
# inside a line, a binary file), and passes on this repository. The marker lines are
# built from parts so that this file holds none.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
check="$root/scripts/conflict-markers.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

seven() { local s; printf -v s '%7s' ''; printf '%s' "${s// /$1}"; }
lt="$(seven '<')" gt="$(seven '>')" eq="$(seven '=')" bar="$(seven '|')"

fails=0
expect() { # WANT(0|1) NAME CONTENT: the check on a repository whose one file holds CONTENT
	local want="$1" name="$2" content="$3" repo rc=0 out
	repo="$work/$name"
	mkdir -p "$repo"
	git -C "$repo" init -q
	printf '%s\n' "$content" >"$repo/page.md"
	git -C "$repo" add page.md
	out="$("$check" "$repo" 2>&1)" || rc=$?
	if [[ "$rc" != "$want" ]]; then
		echo "FAIL: $name: exit $rc, want $want:"
		printf '%s\n' "$out" | sed 's/^/  /'
		fails=$((fails + 1))
	elif [[ "$want" == 1 && "$out" != *"page.md:"* ]]; then
		echo "FAIL: $name: the report does not name page.md:line: $out"
		fails=$((fails + 1))
	else
		echo "ok: $name (exit $rc)"
	fi
}

expect 1 ours "text
$lt HEAD
old"
expect 1 theirs "new
$gt h/docs25"
expect 1 separator "old
$eq
new"
expect 1 base "$bar merged common ancestors"
expect 1 bare-marker "$lt"
expect 0 clean "# Title

Text."
expect 0 longer-rule "Title
$eq=="
expect 0 inside-a-line "a line that mentions $lt HEAD in passing"
expect 0 indented " $eq"

# A binary file with a marker is not text to resolve.
repo="$work/binary"
mkdir -p "$repo"
git -C "$repo" init -q
printf '\0%s\n' "$lt HEAD" >"$repo/blob.bin"
git -C "$repo" add blob.bin
if "$check" "$repo" >/dev/null 2>&1; then echo "ok: binary (exit 0)"; else echo "FAIL: binary: a binary file was reported"; fails=$((fails + 1)); fi

# An untracked file is not the repository's.
repo="$work/untracked"
mkdir -p "$repo"
git -C "$repo" init -q
printf '%s\n' "$lt HEAD" >"$repo/scratch.md"
if "$check" "$repo" >/dev/null 2>&1; then echo "ok: untracked (exit 0)"; else echo "FAIL: untracked: an untracked file was reported"; fails=$((fails + 1)); fi

# And this repository, this file included.
if out="$("$check" "$root" 2>&1)"; then echo "ok: this repository"; else echo "FAIL: this repository:"; printf '%s\n' "$out"; fails=$((fails + 1)); fi

if [[ "$fails" != 0 ]]; then
	echo "test-conflict-markers: $fails failed"
	exit 1
fi
echo "test-conflict-markers: all passed"
