#!/usr/bin/env bash
# release-check.sh [DIST]: checks what `make release-snapshot` left in DIST (dist/)
# against what the Terraform registry expects of a provider release:
#   - one zip per platform, terraform-provider-mssqlifi_<version>_<os>_<arch>.zip,
#     holding exactly the binary terraform-provider-mssqlifi_v<version> (.exe on
#     Windows), built with that version, and no other zip in DIST;
#   - terraform-provider-mssqlifi_<version>_SHA256SUMS listing exactly those zips and
#     the manifest (as terraform-provider-mssqlifi_<version>_manifest.json), with
#     their right checksums, and nothing else (the registry takes what it lists);
#   - each provider binary built by the Go release go.mod's toolchain line names;
#   - terraform-registry-manifest.json saying protocol 6.0;
# and what .goreleaser-winsim.yml left in DIST/winsim:
#   - winsim_<version>_<os>_<arch>.zip per platform with winsim, its README and
#     winsim-test-env.sh, and no other zip there;
#   - winsim_<version>_SHA256SUMS listing exactly those zips, with their right
#     checksums.
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
toolchain="$(sed -n 's/^toolchain //p' "$root/go.mod")"

# zip_list ZIP: the names of the files in ZIP, one a line, sorted.
zip_list() { unzip -Z1 "$1" | grep -v '/$' | LC_ALL=C sort; }

sums="$dist/${name}_${version}_SHA256SUMS"

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
		# The Go release that built it: go.mod's toolchain line (GOTOOLCHAIN=auto in
		# .goreleaser.yml's env), the one make vulncheck checked.
		built="$(go version "$tmp/$want" 2>&1)" || true
		built="${built##*: }"
		[[ -n "$toolchain" && "$built" == "$toolchain" ]] && ok "$want was built by $built" ||
			bad "$want was built by ${built:-an unknown Go}, want go.mod's toolchain ${toolchain:-(none: go.mod has no toolchain line)}"
	fi
	rm -rf "$tmp"
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

# check_sums SUMS DIR SKIP NAME...: SUMS lists exactly NAME... (in any order, each
# once) and every checksum in it matches the file of that name in DIR, except SKIP
# (a file the snapshot does not write under its listed name).
check_sums() {
	local sums="$1" dir="$2" skip="$3"; shift 3
	local base="${sums##*/}" want got
	if [[ ! -f "$sums" ]]; then bad "$base is missing"; return; fi
	want="$(printf '%s\n' "$@" | LC_ALL=C sort)"
	if ! grep -qvE '^[0-9a-f]{64}  [^ ]+$' "$sums"; then ok "$base: every line is <sha256>  <name>"; else bad "$base has lines that are not <sha256>  <name>"; fi
	got="$(sed -E 's/^[0-9a-f]{64}  //' "$sums" | LC_ALL=C sort)"
	if [[ "$got" == "$want" ]]; then
		ok "$base lists exactly its $# files"
	else
		bad "$base does not list exactly its $# files: $(diff <(echo "$want") <(echo "$got") | sed -n 's/^> /extra /p; s/^< /missing /p' | paste -sd ' ')"
	fi
	(cd "$dir" && grep -v -x -E "[0-9a-f]{64}  ${skip//./\\.}" "$base" | sha256sum --quiet -c -) && ok "every archive's checksum in $base matches" || bad "an archive's checksum in $base does not match"
}

check_sums "$sums" "$dist" "$manifest" "${expected_zips[@]}" "$manifest"
if [[ -f "$sums" ]]; then
	grep -qxF "$(sha256sum "$src" | cut -d' ' -f1)  $manifest" "$sums" && ok "${sums##*/} has the manifest's checksum" || bad "${sums##*/} has another checksum for $manifest"
fi

# The simulator's release (.goreleaser-winsim.yml), apart from the provider's.
wdist="$dist/winsim"
if [[ ! -f "$wdist/metadata.json" ]]; then
	bad "$wdist/metadata.json is missing: make release-snapshot builds winsim's archives there"
else
	wversion="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$wdist/metadata.json")"
	[[ "$wversion" == "$version" ]] && ok "winsim's release has the provider's version $version" || bad "winsim's release has version $wversion, the provider's $version"
	wzips=()
	for p in "${platforms[@]}"; do
		exe=""; [[ "$p" == windows_* ]] && exe=".exe"
		wzip="winsim_${version}_${p}.zip"
		wzips+=("$wzip")
		if [[ ! -f "$wdist/$wzip" ]]; then bad "winsim/$wzip is missing"; continue; fi
		names="$(zip_list "$wdist/$wzip")"
		for f in "winsim${exe}" winsim-test-env.sh README.md; do
			if [[ $'\n'"$names"$'\n' == *$'\n'"$f"$'\n'* ]]; then ok "winsim/$wzip holds $f"; else bad "winsim/$wzip has no $f"; fi
		done
	done
	while IFS= read -r z; do
		[[ " ${wzips[*]} " == *" $z "* ]] || bad "unexpected archive winsim/$z"
	done < <(cd "$wdist" && ls -1 -- *.zip)
	check_sums "$wdist/winsim_${version}_SHA256SUMS" "$wdist" "" "${wzips[@]}"
fi

if [[ "$fail" -ne 0 ]]; then
	echo "release-check: $passed passed, $fail failed"
	echo "release-check: the release in $dist is not what the registry expects (see FAIL lines); fix .goreleaser.yml or .goreleaser-winsim.yml and run make release-check again" >&2
	exit 1
fi
echo "release-check: $passed passed, 0 failed"
