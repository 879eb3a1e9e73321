// Package safetext makes text that came from a user or a host safe to echo in a
// message: control characters and the marks that reorder or hide text are shown as
// escapes, so a value cannot break a diagnostic's lines or make it read as something
// it does not say.
package safetext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escape returns s with CR, LF and tab as \r, \n and \t; NUL and the other C0 and C1
// control characters and DEL as \xHH; the bidirectional marks and isolates (U+200E,
// U+200F, U+202A–U+202E, U+2066–U+2069), the zero-width characters (U+200B–U+200D,
// U+FEFF), the line and paragraph separators (U+2028, U+2029) as \uHHHH; and bytes
// that are not UTF-8 as \xHH. Everything else, backslashes included (DOMAIN\user),
// is kept as it is.
func Escape(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02X`, s[i])
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, `\x%02X`, r)
		case hidden(r):
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || hidden(r) {
			return true
		}
		i += n
	}
	return false
}

// hidden: the characters that change how the text around them is ordered or shown.
func hidden(r rune) bool {
	switch {
	case r >= 0x200B && r <= 0x200F, // zero-width space, non-joiner, joiner; LRM, RLM
		r >= 0x202A && r <= 0x202E, // LRE, RLE, PDF, LRO, RLO
		r >= 0x2066 && r <= 0x2069, // LRI, RLI, FSI, PDI
		r == 0x2028, r == 0x2029, r == 0xFEFF:
		return true
	}
	return false
}
