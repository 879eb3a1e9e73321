package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
)

// The resource page states how old the plan's read may be for an apply to use it;
// the figure is converge.DefaultReadFreshness.
func TestResourcePageStatesTheReadFreshness(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "templates", "resources", "instant_file_initialization.md.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d seconds old", int(converge.DefaultReadFreshness.Seconds()))
	if !strings.Contains(strings.Join(strings.Fields(string(b)), " "), want) {
		t.Errorf("the resource page's template does not say %q (converge.DefaultReadFreshness)", want)
	}
}
