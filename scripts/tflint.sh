#!/usr/bin/env bash
# tflint.sh TFLINT: tflint (.tflint.hcl: the bundled terraform ruleset, preset
# "recommended") on every module under examples/, on a copy laid out as
# validate-examples.sh lays it out: the registry's snippets in resources/* and
# data-sources/* are not modules of their own, so each is linted with a copy of
# provider/provider.tf beside it (reported as .../provider.tf), and each
# provider/provider*.tf is a complete configuration linted alone (reported under
# provider-<name>/). Every other path is the one under examples/.
#
# Offline: the terraform ruleset is built into tflint, the plugin folder is an empty
# temporary one and tflint --init never runs, so nothing is downloaded. Any finding
# fails (fix it, or add a `# tflint-ignore: RULE` comment saying why).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tflint="${1:?usage: $0 TFLINT}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$root/examples" "$work/examples"
ex="$work/examples"
for f in "$ex"/provider/provider*.tf; do
	d="$ex/provider-$(basename "$f" .tf)"
	mkdir -p "$d"
	mv "$f" "$d/"
done
rmdir "$ex/provider"
# Action blocks are Terraform 1.14 syntax, which tflint's own configuration loader is
# not known to read; validate-examples.sh checks them with a Terraform 1.14 or later.
rm -rf "$ex/actions"
for d in "$ex"/resources/* "$ex"/data-sources/*; do
	cp "$root/examples/provider/provider.tf" "$d/provider.tf"
done
mkdir -p "$work/plugins"
# TFLINT_PLUGIN_DIR: no plugin but the bundled one can be found.
cd "$work"
TFLINT_PLUGIN_DIR="$work/plugins" "$tflint" --chdir examples --recursive \
	--config "$root/.tflint.hcl" --no-color --format compact
