package remote

import (
	"context"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// The texts a host prints (a script's error message, PowerShell's error records,
// output that is not the expected JSON) reach the error with their lines joined and
// every other control character escaped: an escape sequence or a line break in them
// cannot rewrite the terminal or forge a line of the diagnostic.
func TestHostTextInErrorsIsEscaped(t *testing.T) {
	h := &winrmHost{cfg: Config{Host: "sql01"}}
	const forged = "done\x1b[2K\r\nError: something else\x07"
	for _, tc := range []struct {
		name string
		out  runOutcome
		want string
	}{
		{"a script's error message", runOutcome{exitCode: contract.ExitNotFound,
			stdout: []byte(`{"error":"not_found","message":"done\u001b[2K\r\nError: something else\u0007"}`)},
			`done\x1B[2K Error: something else\x07`},
		{"PowerShell's error record", runOutcome{exitCode: 1, stderr: []byte("#< CLIXML\r\n<Objs Version=\"1.1.0.1\" xmlns=\"http://schemas.microsoft.com/powershell/2004/04\">" +
			"<S S=\"Error\">done_x001B_[2K_x000D__x000A_Error: something else_x0007_</S></Objs>")}, `done\x1B[2K Error: something else\x07`},
		{"output that is not JSON", runOutcome{exitCode: 0, stdout: []byte(forged)}, `done\x1B[2K Error: something else\x07`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := h.interpret(context.Background(), contract.OpReadInstance, tc.out, &contract.ReadInstanceResult{})
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if strings.ContainsAny(msg, "\x1b\r\n\x07") || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q: want the host's text escaped (%s)", msg, tc.want)
			}
		})
	}
}
