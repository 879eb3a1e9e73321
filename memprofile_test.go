// Copyright (c) mssqlifi contributors
// SPDX-License-Identifier: MPL-2.0

package main

import "testing"

// The provider samples no allocations for a heap profile, unless GODEBUG asks for
// sampling (then at the rate the runtime read from it).
func TestMemProfileRate(t *testing.T) {
	for _, tc := range []struct {
		godebug string
		current int
		want    int
	}{
		{"", 512 * 1024, 0},
		{"madvdontneed=1", 512 * 1024, 0},
		{"memprofilerate=4096", 4096, 4096},
		{"madvdontneed=1, memprofilerate=1", 1, 1},
		{"xmemprofilerate=1", 512 * 1024, 0},
	} {
		if got := memProfileRate(tc.godebug, tc.current); got != tc.want {
			t.Errorf("memProfileRate(%q, %d) = %d, want %d", tc.godebug, tc.current, got, tc.want)
		}
	}
}

// The provider's GC target is 75 % unless the user's GOGC says otherwise.
func TestGCPercent(t *testing.T) {
	if p, ok := gcPercent(""); !ok || p != 75 {
		t.Errorf("gcPercent(\"\") = %d, %v; want 75, true", p, ok)
	}
	for _, g := range []string{"100", "off", "50"} {
		if _, ok := gcPercent(g); ok {
			t.Errorf("gcPercent(%q) overrides the user's GOGC", g)
		}
	}
}
