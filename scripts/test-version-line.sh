#!/usr/bin/env bash
# test-version-line.sh [TF]: every place that reads a CLI's version line, run 200 times;
# any non-zero exit fails the test. Guards against `TF -version | head -n1` under
# pipefail, which failed `make test` about once in ten runs with 141 (SIGPIPE).
#
# The paths: scripts/tf-version.sh (used by the GNUmakefile and .ci/run) against the
# real CLI and against a fake CLI that writes far more than a pipe holds after its
# version line; and scripts/ensure-terraform.sh's check of a cached OpenTofu build,
# against the same kind of fake. The fake first proves that it reproduces the bug.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runs="${VERSION_LINE_RUNS:-200}"
tf="${1:-$("$root/scripts/ensure-terraform.sh")}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail=0

# A CLI that prints its version line, then 256 KiB more: a reader that stops after one
# line makes it die of SIGPIPE every time.
fake() { # PATH NAME VERSION
	cat >"$1" <<FAKE
#!/usr/bin/env bash
printf '%s v%s\n' "$2" "$3"
head -c 262144 /dev/zero | tr '\0' 'x'
printf '\n'
FAKE
	chmod +x "$1"
}
fake "$work/terraform" Terraform 9.9.9

# The fake must reproduce the bug, or this test proves nothing.
if (set -o pipefail; "$work/terraform" -version | head -n1 >/dev/null); then # pipe-reader: ok (the bug, reproduced on purpose)
	echo "FAIL  the fake CLI did not reproduce SIGPIPE under '| head -n1': this test cannot fail" # pipe-reader: ok (a message)
	fail=1
fi

repeat() { # NAME WANT COMMAND...: run COMMAND $runs times; each must exit 0 and print WANT
	local name="$1" want="$2" i out rc
	shift 2
	for ((i = 1; i <= runs; i++)); do
		rc=0
		out="$("$@" 2>"$work/stderr")" || rc=$?
		if [[ $rc -ne 0 ]]; then
			echo "FAIL  $name: run $i of $runs exited $rc (141 is SIGPIPE):"
			cat "$work/stderr"
			fail=1
			return
		fi
		if [[ "$out" != "$want" ]]; then
			echo "FAIL  $name: run $i printed '$out', want '$want'"
			fail=1
			return
		fi
	done
	echo "ok    $name ($runs runs)"
}

repeat "tf-version.sh with a CLI that keeps writing" "Terraform v9.9.9" \
	"$root/scripts/tf-version.sh" "$work/terraform"

real="$(TF_CLI_CONFIG_FILE=/dev/null "$root/scripts/tf-version.sh" "$tf")"
repeat "tf-version.sh with $tf" "$real" \
	env TF_CLI_CONFIG_FILE=/dev/null "$root/scripts/tf-version.sh" "$tf"

# ensure-terraform.sh accepts a cached OpenTofu only after reading its version line.
cache="$work/xdg/mssqlifi/tofu-9.9.9"
mkdir -p "$cache"
fake "$cache/tofu" OpenTofu 9.9.9
repeat "ensure-terraform.sh with a cached OpenTofu that keeps writing" "$cache/tofu" \
	env XDG_CACHE_HOME="$work/xdg" MSSQLIFI_TF=tofu MSSQLIFI_TOFU_VERSION=9.9.9 \
	"$root/scripts/ensure-terraform.sh"

exit "$fail"
