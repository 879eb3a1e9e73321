package krb

import (
	"fmt"
	"sort"
	"strings"

	"github.com/jcmturner/gokrb5/v8/config"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/localfile"
)

// maxConfLines bounds the search for the line a krb5.conf fails at; a longer file
// is still parsed, but its error names no line.
const maxConfLines = 10000

// LoadKrb5Conf reads and parses a krb5.conf. A file gokrb5's parser cannot read
// (or panics on, as it does on a realm block opened and closed on one line) is an
// error naming the file and the first line at which it fails.
func LoadKrb5Conf(path string) (*config.Config, error) {
	raw, err := localfile.Read(path)
	if err != nil {
		return nil, &Error{Kind: KindConfig, Part: PartKrb5Conf, Err: err,
			Message: fmt.Sprintf("cannot read krb5.conf %s: %v", path, err),
			Hint:    "Give a readable krb5.conf that names the realm's KDCs (KRB5_CONFIG, or /etc/krb5.conf)"}
	}
	conf, err := parseConf(string(raw))
	if err == nil {
		return conf, nil
	}
	hint := "Fix the file's syntax (see man krb5.conf)"
	line, text := failingLine(string(raw))
	if line == 0 {
		return nil, &Error{Kind: KindConfig, Part: PartKrb5Conf, Err: err,
			Message: fmt.Sprintf("krb5.conf %s cannot be parsed: %v", path, err), Hint: hint}
	}
	if strings.Contains(text, "{") && strings.Contains(text, "}") {
		hint = "Open the block with { at the end of its line and close it with } on a line of its own, one relation per line in between (for example EXAMPLE.COM = {, kdc = dc1.example.com, } on three lines)"
	}
	return nil, &Error{Kind: KindConfig, Part: PartKrb5Conf, Err: err,
		Message: fmt.Sprintf("krb5.conf %s cannot be parsed at line %d (%q): %v", path, line, strings.TrimSpace(text), err), Hint: hint}
}

// parseConf is gokrb5's parser, with its panics turned into errors.
func parseConf(text string) (conf *config.Config, err error) {
	defer func() {
		if r := recover(); r != nil {
			conf, err = nil, fmt.Errorf("the Kerberos library's parser failed (%v)", r)
		}
	}()
	return config.NewFromString(text)
}

// failingLine finds the first line (1-based) whose prefix of the file fails to
// parse, and its text; 0 if none does or the file is too long to search. The
// parser reads a file section by section and a realm block when it closes, so a
// failure shows at the line that closes the block (or at the bad line itself).
func failingLine(text string) (int, string) {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) > maxConfLines {
		return 0, ""
	}
	fails := func(n int) bool {
		_, err := parseConf(strings.Join(lines[:n], ""))
		return err != nil
	}
	// A prefix that fails stays failing as lines are added, in all but odd files:
	// search for the shortest, then check it.
	n := sort.Search(len(lines)+1, fails)
	if n == 0 || n > len(lines) || !fails(n) || (n > 1 && fails(n-1)) {
		return 0, ""
	}
	return n, strings.TrimRight(lines[n-1], "\r\n")
}
