// Copyright (c) mssqlifi contributors
// SPDX-License-Identifier: MPL-2.0

package main

import (
	"os"
	"strings"
	"testing"
)

// The repository is licensed under MPL-2.0 (README "License"): LICENSE holds the
// license's text and the provider's entry points say so in their SPDX header.
func TestLicense(t *testing.T) {
	text, err := os.ReadFile("LICENSE")
	if err != nil {
		t.Fatalf("reading LICENSE: %v", err)
	}
	if !strings.HasPrefix(string(text), "Mozilla Public License Version 2.0\n") {
		t.Errorf("LICENSE does not start with %q", "Mozilla Public License Version 2.0")
	}
	for _, name := range []string{"main.go", "release.go"} {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("reading %s: %v", name, err)
		}
		if !strings.Contains(string(src), "\n// SPDX-License-Identifier: MPL-2.0\n") {
			t.Errorf("%s has no %q header line", name, "// SPDX-License-Identifier: MPL-2.0")
		}
	}
}
