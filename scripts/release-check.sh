#!/usr/bin/env bash
# release-check.sh [DIST]: checks what `make release-snapshot` left in dist/ against
# what the Terraform registry expects of a provider release:
#   - one zip per platform, terraform-provider-mssqlifi_<version>_<os>_<arch>.zip,
#     holding exactly the binary terraform-provider-mssqlifi_v<version> (.exe on
#     Windows), built with that version;
#   - terraform-provider-mssqlifi_<version>_SHA256SUMS listing every zip and the
#     manifest (as terraform-provider-mssqlifi_<version>_manifest.json) with their
#     right checksums;
#   - terraform-registry-manifest.json saying protocol 6.0;
#   - winsim_<version>_<os>_<arch>.zip per platform with winsim, its README and
#     winsim-test-env.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dist="${1:-$root/dist}"
name=terraform-provider-mssqlifi
platforms=(linux_amd64 linux_arm64 darwin_amd64 darwin_arm64 windows_amd64 windows_arm64 freebsd_amd64)

fail=0 passed=0
bad() { echo "release-check: FAIL: $*" >&2; fail=$((fail + 1)); }
ok() { echo "release-check: ok: $*"; passed=$((passed + 1)); }

[[ -f "$dist/metadata.json" ]] || { echo "release-check: $dist/metadata.json is missing: run make release-snapshot first" >&2; exit 1; }
version="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$dist/metadata.json")"
[[ -n "$version" && "$version" != null ]] || { echo "release-check: no version in $dist/metadata.json" >&2; exit 1; }
echo "release-check: version $version in $dist"

# zip_list ZIP: the names of the files in ZIP, one a line, sorted.
zip_list() { unzip -Z1 "$1" | grep -v '/$' | LC_ALL=C sort; }

sums="$dist/${name}_${version}_SHA256SUMS"
[[ -f "$sums" ]] || bad "${sums##*/} is missing"

expected_zips=()
for p in "${platforms[@]}"; do
	exe=""; [[ "$p" == windows_* ]] && exe=".exe"
	zip="${name}_${version}_${p}.zip"
	expected_zips+=("$zip")
	if [[ ! -f "$dist/$zip" ]]; then bad "$zip is missing"; continue; fi
	want="${name}_v${version}${exe}"
	got="$(zip_list "$dist/$zip" | paste -sd ' ')"
	[[ "$got" == "$want" ]] && ok "$zip holds $want" || bad "$zip holds [$got], want exactly [$want]"
	# The version the provider reports (User-Agent, GetProviderSchema) is the one in its
	# file name: -X main.version puts that string into the binary (-trimpath keeps
	# the flags themselves out of its build information).
	tmp="$(mktemp -d)"
	unzip -q -o "$dist/$zip" -d "$tmp"
	if [[ -f "$tmp/$want" ]]; then
		if grep -a -q -F "terraform-provider-mssqlifi/" "$tmp/$want" && grep -a -q -F -- "$version" "$tmp/$want"; then
			ok "$want carries its version $version"
		else
			bad "$want does not carry the version $version (check the ldflags -X main.version in .goreleaser.yml)"
		fi
	fi
	rm -rf "$tmp"

	wzip="winsim_${version}_${p}.zip"
	expected_zips+=("$wzip")
	if [[ ! -f "$dist/$wzip" ]]; then bad "$wzip is missing"; continue; fi
	names="$(zip_list "$dist/$wzip")"
	for f in "winsim${exe}" winsim-test-env.sh README.md; do
		if [[ $'\n'"$names"$'\n' == *$'\n'"$f"$'\n'* ]]; then ok "$wzip holds $f"; else bad "$wzip has no $f"; fi
	done
done

# No other zips: an unexpected platform would be published too.
while IFS= read -r z; do
	[[ " ${expected_zips[*]} " == *" $z "* ]] || bad "unexpected archive $z"
done < <(cd "$dist" && ls -1 -- *.zip)

# The release uploads terraform-registry-manifest.json as <name>_<version>_manifest.json
# (release.extra_files); a snapshot only lists it in SHA256SUMS, so the file checked is
# the repository's, and SHA256SUMS must list it under the release name with its hash.
manifest="${name}_${version}_manifest.json"
src="$root/terraform-registry-manifest.json"
got="$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])), separators=(",", ":")))' "$src")"
[[ "$got" == '{"version":1,"metadata":{"protocol_versions":["6.0"]}}' ]] && ok "terraform-registry-manifest.json says protocol 6.0" || bad "terraform-registry-manifest.json is $got"

if [[ -f "$sums" ]]; then
	for f in "${expected_zips[@]}" "$manifest"; do
		grep -qE "^[0-9a-f]{64}  ${f//./\\.}\$" "$sums" && ok "SHA256SUMS lists $f" || bad "${sums##*/} does not list $f"
	done
	lines="$(wc -l <"$sums")"
	[[ "$lines" -eq $(( ${#expected_zips[@]} + 1 )) ]] || bad "${sums##*/} has $lines lines, want $(( ${#expected_zips[@]} + 1 ))"
	grep -qxF "$(sha256sum "$src" | cut -d' ' -f1)  $manifest" "$sums" && ok "SHA256SUMS has the manifest's checksum" || bad "${sums##*/} has another checksum for $manifest"
	(cd "$dist" && grep -v -F "  $manifest" "${sums##*/}" | sha256sum --quiet -c -) && ok "every archive's checksum in ${sums##*/} matches" || bad "an archive's checksum in ${sums##*/} does not match"
fi

if [[ "$fail" -ne 0 ]]; then
	echo "release-check: $passed passed, $fail failed"
	echo "release-check: the release in $dist is not what the registry expects (see FAIL lines); fix .goreleaser.yml and run make release-check again" >&2
	exit 1
fi
echo "release-check: $passed passed, 0 failed"
