package remote

import (
	"encoding/xml"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

const clixmlMarker = "#< CLIXML"

// DecodeCLIXML turns what powershell.exe writes on stderr into readable text: the
// error records (<S S="Error">) of every CLIXML document, with the _xHHHH_ escapes
// undone, blank lines dropped. Progress, warning, verbose and information records
// are left out. Text that is not CLIXML is returned trimmed, as it came.
func DecodeCLIXML(stderr string) string {
	if !strings.Contains(stderr, clixmlMarker) {
		return strings.TrimSpace(stderr)
	}
	var errs []string
	var plain []string
	rest := stderr
	for rest != "" {
		i := strings.Index(rest, "<Objs")
		if i < 0 {
			plain = append(plain, rest)
			break
		}
		plain = append(plain, rest[:i])
		j := strings.Index(rest[i:], "</Objs>")
		if j < 0 {
			errs = append(errs, clixmlErrors(rest[i:])...)
			break
		}
		end := i + j + len("</Objs>")
		errs = append(errs, clixmlErrors(rest[i:end])...)
		rest = rest[end:]
	}
	// Anything outside the documents (besides the markers) is text someone wrote
	// straight to stderr; keep it.
	for _, p := range plain {
		p = strings.TrimSpace(strings.ReplaceAll(p, clixmlMarker, ""))
		if p != "" {
			errs = append(errs, p)
		}
	}
	return tidyLines(strings.Join(errs, ""))
}

// clixmlErrors returns the text of the error records in one <Objs> document, in
// order. A truncated document yields what could be read.
func clixmlErrors(doc string) []string {
	d := xml.NewDecoder(strings.NewReader(doc))
	d.Strict = false
	var out []string
	var cur *strings.Builder
	for {
		tok, err := d.Token()
		if err != nil {
			if err != io.EOF && cur != nil && cur.Len() > 0 {
				out = append(out, unescapeCLIXML(cur.String()))
			}
			return out
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Local == "S" && cur == nil {
				for _, a := range t.Attr {
					if a.Name.Local == "S" && strings.EqualFold(a.Value, "Error") {
						cur = &strings.Builder{}
					}
				}
			}
		case xml.CharData:
			if cur != nil {
				cur.Write(t)
			}
		case xml.EndElement:
			if t.Name.Local == "S" && cur != nil {
				out = append(out, unescapeCLIXML(cur.String()))
				cur = nil
			}
		}
	}
}

// unescapeCLIXML undoes PowerShell's _xHHHH_ escapes (UTF-16 code units, so
// surrogate pairs arrive as two escapes).
func unescapeCLIXML(s string) string {
	if !strings.Contains(s, "_x") {
		return s
	}
	var units []uint16
	for i := 0; i < len(s); {
		if i+7 <= len(s) && s[i] == '_' && s[i+1] == 'x' && s[i+6] == '_' {
			if v, err := strconv.ParseUint(s[i+2:i+6], 16, 16); err == nil {
				units = append(units, uint16(v))
				i += 7
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		units = utf16.AppendRune(units, r)
		i += size
	}
	return string(utf16.Decode(units))
}

// tidyLines normalises line ends, trims each line's right side and drops blank lines.
func tidyLines(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimRight(l, " \t")
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}
