package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/localfile"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
)

// Every figure the rendered docs and the README state comes from a constant: the
// schema descriptions are built from them with fmt, and this table ties each
// phrase of the pages to its constant, so that changing one without the other fails.
// (docs/ is rendered from templates/ and the schema: make docs; CI's docs-check keeps
// it current.)
func TestDocsFiguresMatchTheConstants(t *testing.T) {
	const (
		readme   = "README.md"
		index    = "docs/index.md"
		resource = "docs/resources/instant_file_initialization.md"
		// The long prose of the provider and resource pages lives in guides.
		auth       = "docs/guides/authentication.md"
		howItWorks = "docs/guides/how-the-resource-works.md"
		upgrade    = "docs/guides/upgrading.md"
	)
	if defaultCreateTimeout != defaultUpdateTimeout {
		t.Fatalf("the resource page gives one default for create and update; they are %s and %s", defaultCreateTimeout, defaultUpdateTimeout)
	}
	cases := []struct {
		what, file, phrase string
	}{
		{"create and update timeouts", howItWorks, fmt.Sprintf("create and update timeouts (%d minutes by default", int(defaultCreateTimeout/time.Minute))},
		{"Kerberos files' cap and deadline", auth, fmt.Sprintf("of at most %d MiB, read within %d seconds", localfile.MaxSize>>20, int(localfile.Timeout/time.Second))},
		{"read freshness", howItWorks, fmt.Sprintf("%d seconds old", int(converge.DefaultReadFreshness/time.Second))},
		{"WinRM ports (schema)", index, fmt.Sprintf("Default `%d` with HTTPS, `%d` without", remote.DefaultHTTPSPort, remote.DefaultHTTPPort)},
		{"WinRM HTTP port and default", auth, fmt.Sprintf("listener on %d with the default `https = %t` and the default `auth = %q`", remote.DefaultHTTPPort, remote.DefaultHTTPS, remote.DefaultAuth)},
		{"WinRM HTTPS port", auth, fmt.Sprintf("listener on %d (set `https = %t`", remote.DefaultHTTPSPort, !remote.DefaultHTTPS)},
		{"WinRM HTTPS default (upgrading)", upgrade, fmt.Sprintf("`winrm.https` defaults to `%t` (was `%t`)", remote.DefaultHTTPS, !remote.DefaultHTTPS)},
		{"WinRM HTTPS default (README)", readme, fmt.Sprintf("| `https` | `%t` | HTTP %d", remote.DefaultHTTPS, remote.DefaultHTTPPort)},
		{"WinRM HTTPS default (schema)", index, fmt.Sprintf("Use the HTTPS listener. Default `%t`: the HTTP listener (port `%d`)", remote.DefaultHTTPS, remote.DefaultHTTPPort)},
		{"WinRM request timeout (schema)", index, fmt.Sprintf("such as `%ds` (the default)", int(remote.DefaultTimeout/time.Second))},
		{"restart limit (schema)", index, fmt.Sprintf("Default `%d`: a fleet apply rolls through its restarts", defaultMaxParallelRestarts)},
		{"SQL encryption default (schema)", index, "default `" + sqlcheck.DefaultEncrypt + "`"},
		{"SQL port", readme, fmt.Sprintf("sql_port = %d", sqlcheck.DefaultPort)},
		{"restart unavailability default", howItWorks, fmt.Sprintf("unavailable for typically at least %d s", int(ifi.DefaultRestartUnavailable/time.Second))},
		{"restart unavailability default (README)", readme, fmt.Sprintf("typically at least %d s until it has timed one", int(ifi.DefaultRestartUnavailable/time.Second))},
		{"plan-time read timeout", howItWorks, fmt.Sprintf("within the read timeout (`timeouts { read }`, default %d minutes)", int(defaultReadTimeout/time.Minute))},
		{"the resource page links its guide", resource, "[How the IFI resource works](../guides/how-the-resource-works.md)"},
		{"the provider page links its guides", index, "[Authentication and transport security](guides/authentication.md)"},
		{"GPO timing", readme, fmt.Sprintf("at least every %d hours", int(ifi.GPOSecurityReapply/time.Hour))},
	}
	pages := map[string]string{}
	for _, tc := range cases {
		text, ok := pages[tc.file]
		if !ok {
			b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(tc.file)))
			if err != nil {
				t.Fatal(err)
			}
			text = strings.Join(strings.Fields(string(b)), " ") // line breaks are spaces
			pages[tc.file] = text
		}
		if !strings.Contains(text, tc.phrase) {
			t.Errorf("%s: %s does not say %q (from the constant); fix the template or README, then make docs", tc.what, tc.file, tc.phrase)
		}
	}
}
