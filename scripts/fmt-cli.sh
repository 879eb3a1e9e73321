#!/usr/bin/env bash
# fmt-cli.sh: prints the CLI that `make fmt` and `make fmtcheck` format HCL with:
# terraform on PATH, else tofu on PATH, else the OpenTofu that
# scripts/ensure-terraform.sh built earlier (never built just for formatting). Prints
# nothing, with a note on stderr, when there is none.
set -euo pipefail
if command -v terraform 2>/dev/null; then exit 0; fi
if command -v tofu 2>/dev/null; then exit 0; fi
cached="${XDG_CACHE_HOME:-$HOME/.cache}/mssqlifi/tofu-${MSSQLIFI_TOFU_VERSION:-1.12.6}/tofu"
if [[ -x "$cached" ]]; then
	printf '%s\n' "$cached"
	exit 0
fi
echo "fmt-cli: neither terraform nor tofu found: HCL formatting not checked (put one on PATH, or run make tofu)" >&2
