#!/usr/bin/env bash
# tf-version.sh TF: prints the first line of `TF -version` ("Terraform v1.11.4",
# "OpenTofu v1.12.6") and exits with the CLI's own status.
#
# Never `TF -version | head -n1` under pipefail: head exits after one line, and a CLI
# still writing (its platform and update notes) dies of SIGPIPE, so the pipeline fails
# with 141 about once in ten runs. Here the whole output is read first.
set -euo pipefail
tf="${1:?usage: tf-version.sh PATH-TO-TERRAFORM-OR-TOFU}"
out="$(CHECKPOINT_DISABLE=1 "$tf" -version)"
# `read` takes the first line in linear time (${out%%$'\n'*} is quadratic in bash).
IFS= read -r first <<<"$out" || true
printf '%s\n' "$first"
