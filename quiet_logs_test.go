// Copyright (c) mssqlifi contributors
// SPDX-License-Identifier: MPL-2.0

package main

import (
	"os"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/provider"
)

// clearLogEnv empties every TF_LOG* variable for the test (restored afterwards).
func clearLogEnv(t *testing.T) {
	t.Helper()
	for _, k := range append([]string{"TF_LOG", "TF_LOG_PROVIDER", "TF_LOG_PATH", "TF_LOG_CORE"}, provider.QuietLogVars...) {
		t.Setenv(k, "")
	}
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "TF_LOG") && v != "" {
			t.Setenv(k, "")
		}
	}
}

func TestQuietLogsWithoutLogLevel(t *testing.T) {
	clearLogEnv(t)
	quietLogs()
	for _, k := range provider.QuietLogVars {
		if got := os.Getenv(k); got != "off" {
			t.Errorf("%s = %q after quietLogs with no TF_LOG*, want off", k, got)
		}
	}
}

func TestQuietLogsKeepsAskedLogs(t *testing.T) {
	for _, asked := range []string{"TF_LOG", "TF_LOG_PROVIDER", "TF_LOG_PROVIDER_MSSQLIFI", "TF_LOG_SDK_FRAMEWORK", "TF_LOG_PATH"} {
		t.Run(asked, func(t *testing.T) {
			clearLogEnv(t)
			t.Setenv(asked, "TRACE")
			quietLogs()
			for _, k := range provider.QuietLogVars {
				if want, got := map[bool]string{true: "TRACE"}[k == asked], os.Getenv(k); got != want {
					t.Errorf("with %s set, %s = %q, want %q", asked, k, got, want)
				}
			}
		})
	}
}
