#!/usr/bin/env bash
# test-pipe-readers.sh [FILE ...]: no script of the build pipes a command into a reader
# that may stop reading early (`grep -q`, `grep -m`, `grep -l`, also after other options, `head`, `sed …q`,
# `awk …exit`).
# Under `set -o pipefail` such a pipeline fails whenever the reader exits first and
# the writer dies of SIGPIPE (exit 141): `winsim --help | grep -q` failed
# `make release-check` in 7 runs of 200. Capture the whole output first, then match.
#
# With no arguments it checks every shell script the build runs: scripts/*.sh,
# .ci/run, demo/*.sh and the GNUmakefile's recipes. A line may opt out with the
# comment `pipe-reader: ok` and a reason (for a writer that can never fill a pipe).
# The checker first proves on a planted line that it can fail.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# A pipe, then an early-closing reader. Comment lines are skipped.
# Built from parts so that this file holds no pipe into a reader of its own.
bar='\|'
# grep's early-closing option may follow others (`grep -E -q`, `grep -i --quiet`);
# awk stops early at an `exit`.
pattern="$bar"'[[:space:]]*(grep([[:space:]]+-[^[:space:]|]+)*[[:space:]]+(-[[:alnum:]]*[qml][[:alnum:]]*|--quiet|--silent|--max-count|--files-with-matches)|head([[:space:]]|$)|sed[[:space:]][^|]*[;[:space:]'"'"'"]q([[:space:]'"'"'";]|$)|awk[[:space:]][^|]*exit)'

scan() { # FILE...: prints FILE:LINE: TEXT for each offending line; status 1 if any
	local f n line bad=0
	for f in "$@"; do
		n=0
		while IFS= read -r line || [[ -n "$line" ]]; do
			n=$((n + 1))
			[[ "$line" =~ ^[[:space:]]*# ]] && continue
			[[ "$line" == *"pipe-reader: ok"* ]] && continue
			if [[ "$line" =~ $pattern ]]; then
				printf '%s:%d: %s\n' "${f#"$root"/}" "$n" "${line#"${line%%[![:space:]]*}"}"
				bad=1
			fi
		done <"$f"
	done
	return "$bad"
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The planted lines spell the pipe PIPE, turned into one here.
sed 's/ PIPE / | /' >"$work/planted.sh" <<'PLANTED'
"$bin" --help 2>&1 PIPE grep -q -- '--config'
tf -version PIPE head -n1
dpkg-query -W pkg PIPE grep -m1 ok
"$bin" --help PIPE grep -E -q 'usage|Usage'
tf -version PIPE awk 'NR==1 { print; exit }'
out="$("$bin" --help)"; [[ "$out" == *--config* ]]
PLANTED
if planted="$(scan "$work/planted.sh")"; then
	echo "FAIL  the checker passed a file with five early readers: this test cannot fail"
	exit 1
fi
if [[ "$(printf '%s\n' "$planted" | wc -l)" -ne 5 ]]; then
	echo "FAIL  the checker should name exactly the five planted lines, it named:"
	printf '%s\n' "$planted"
	exit 1
fi

if [[ $# -eq 0 ]]; then
	shopt -s nullglob
	set -- "$root"/scripts/*.sh "$root/.ci/run" "$root"/demo/*.sh "$root/GNUmakefile"
fi
if found="$(scan "$@")"; then
	echo "ok    no pipe into an early-closing reader in $# build scripts"
else
	echo "FAIL  a pipe into a reader that may exit early fails under pipefail (SIGPIPE, exit 141):"
	printf '%s\n' "$found"
	echo "      capture the whole output first (out=\"\$(cmd)\"), then match it"
	exit 1
fi
