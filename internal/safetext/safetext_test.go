package safetext

import "testing"

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"sql01.example.com", "sql01.example.com"},
		{`CONTOSO\sqlsvc`, `CONTOSO\sqlsvc`},
		{"Prüfung Δ", "Prüfung Δ"},
		{"a\r\nb", `a\r\nb`},
		{"a\x00b", `a\x00b`},
		{"tab\there", `tab\there`},
		{"esc\x1b[31mred", `esc\x1B[31mred`},
		{"del\x7f", `del\x7F`},
		{"c1\u0085", `c1\x85`},
		{"admin\u202Etxt.exe", `admin\u202Etxt.exe`},
		{"\u202A\u202B\u202C\u202D", `\u202A\u202B\u202C\u202D`},
		{"\u2066x\u2067y\u2068z\u2069", `\u2066x\u2067y\u2068z\u2069`},
		{"l\u200Er\u200F", `l\u200Er\u200F`},
		{"zero\u200Bwidth\uFEFF", `zero\u200Bwidth\uFEFF`},
		{"line\u2028sep", `line\u2028sep`},
		{"bad\xffutf8", `bad\xFFutf8`},
	} {
		if got := Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
