// Package tdstest prints what a tds.Handler answered, for tests that compare it
// with a text.
package tdstest

import (
	"fmt"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
)

// Render prints a batch's answer as "name:type,..." then one "v|v|..." line per
// row, the result sets apart by a "--" line.
func Render(sets []tds.ResultSet) string {
	var b strings.Builder
	for n, rs := range sets {
		if n > 0 {
			b.WriteString("--\n")
		}
		var cols []string
		for _, c := range rs.Columns {
			cols = append(cols, c.Name+":"+c.Type.Name())
		}
		b.WriteString(strings.Join(cols, ",") + "\n")
		for _, r := range rs.Rows {
			var vs []string
			for _, v := range r {
				if v == nil {
					vs = append(vs, "NULL")
				} else {
					vs = append(vs, fmt.Sprint(v))
				}
			}
			b.WriteString(strings.Join(vs, "|") + "\n")
		}
	}
	return b.String()
}
