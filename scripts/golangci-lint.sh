#!/usr/bin/env bash
# golangci-lint.sh BIN: runs golangci-lint (.golangci.yml) on ./... and prints every
# finding as file:line:col: message (linter).
#
# LINT_PENDING lists folders whose findings are known and left, for now, to the
# engineers restructuring them (issue 6): they are printed under their own heading and
# do not fail the run. Every other finding fails it. `LINT_PENDING= make lint` is the
# strict run; empty LINT_PENDING in the GNUmakefile once those findings are fixed.
set -euo pipefail
bin="${1:?usage: golangci-lint.sh PATH-TO-GOLANGCI-LINT}"
read -r -a pending <<<"${LINT_PENDING:-}"

echo "golangci-lint $("$bin" version --short) on ./... (.golangci.yml)"
rc=0
out="$("$bin" run --output.text.print-issued-lines=false --show-stats=false ./... 2>&1)" || rc=$?
if [[ $rc -ne 0 && $rc -ne 1 ]]; then
	printf '%s\n' "$out"
	echo "golangci-lint could not run (exit $rc): see above"
	exit "$rc"
fi

blocking=() left=()
while IFS= read -r line; do
	[[ "$line" =~ ^[^[:space:]]+\.go:[0-9]+:[0-9]+:\  ]] || { [[ -n "$line" ]] && printf '%s\n' "$line"; continue; }
	file="${line%%:*}"
	is_pending=0
	for dir in "${pending[@]}"; do
		[[ "$file" == "$dir"/* ]] && is_pending=1
	done
	if [[ $is_pending -eq 1 ]]; then left+=("$line"); else blocking+=("$line"); fi
done <<<"$out"

if [[ ${#left[@]} -gt 0 ]]; then
	echo
	echo "golangci-lint: ${#left[@]} finding(s) in folders being restructured (LINT_PENDING=${pending[*]})."
	echo "They do not fail this run; fix them after the restructuring merges, then empty LINT_PENDING:"
	printf '  %s\n' "${left[@]}"
fi
if [[ ${#blocking[@]} -gt 0 ]]; then
	echo
	echo "golangci-lint: ${#blocking[@]} finding(s) to fix:"
	printf '  %s\n' "${blocking[@]}"
	echo "Fix them, or narrow an exclusion in .golangci.yml and say why there."
	exit 1
fi
echo "golangci-lint: clean${left:+ apart from the ${#left[@]} pending finding(s) above}"
