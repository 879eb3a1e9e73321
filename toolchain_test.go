package main

import (
	goversion "go/version"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// minToolchain is the first Go release without the standard library's advisories
// that govulncheck found reachable with go1.26.8 (issue 38; make vulncheck is the
// check that stays current).
const minToolchain = "go1.26.10"

// Every build, test and release runs the release go.mod's toolchain line names: the
// GNUmakefile and .ci/run set GOTOOLCHAIN=auto, which honours it (this machine's and
// many distributions' go.env say local, which would not), and each tools/ module,
// built with the same make, names the same release.
func TestToolchainLine(t *testing.T) {
	want := toolchainLine(t, "go.mod")
	if goversion.Compare(want, minToolchain) < 0 {
		t.Errorf("go.mod's toolchain is %s, want %s or later", want, minToolchain)
	}
	mods, _ := filepath.Glob(filepath.Join("tools", "*", "go.mod"))
	for _, m := range append([]string{filepath.Join("tools", "go.mod")}, mods...) {
		if got := toolchainLine(t, m); got != "" && got != want {
			t.Errorf("%s names toolchain %s, go.mod %s: give both the same line (go mod edit -toolchain=%s)", m, got, want, want)
		}
	}
	for file, line := range map[string]string{"GNUmakefile": "export GOTOOLCHAIN := auto", ".ci/run": "export GOTOOLCHAIN=auto"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains("\n"+string(b), "\n"+line+"\n") {
			t.Errorf("%s does not set %q: a go whose go.env says GOTOOLCHAIN=local would ignore go.mod's toolchain line", file, line)
		}
	}
	// Run by make (GOTOOLCHAIN=auto), this test binary was built by that release.
	if os.Getenv("GOTOOLCHAIN") == "auto" && goversion.Compare(runtime.Version(), want) < 0 {
		t.Errorf("built with %s under GOTOOLCHAIN=auto, want %s or later", runtime.Version(), want)
	}
}

// toolchainLine is the release a go.mod's toolchain line names; the test fails
// when it has none.
func toolchainLine(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(b)) {
		if name, ok := strings.CutPrefix(strings.TrimSpace(l), "toolchain "); ok {
			return strings.TrimSpace(name)
		}
	}
	t.Errorf("%s has no toolchain line: add one (go mod edit -toolchain=%s)", file, minToolchain)
	return ""
}
