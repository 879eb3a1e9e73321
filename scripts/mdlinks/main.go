// Command mdlinks checks the relative links of the repository's Markdown files: for
// every inline link [text](target) and reference definition [label]: target in a
// file that git tracks (git ls-files '*.md'), outside code spans and fenced code,
// whose target has no URL scheme, the file or folder the target names must exist
// (relative to the linking file, or to the repository's root for a target that
// starts with /). The #fragment is not checked. It prints each broken link as
// file:line: target and exits 1 when there is one.
//
//	go run ./scripts/mdlinks
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

var (
	// inline matches ](target) and ](target "title"); the text before ] may sit on
	// an earlier line, so only the closing half is matched.
	inline = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refDef matches a reference definition, "[label]: target".
	refDef = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	code   = regexp.MustCompile("`+[^`]*`+")
)

func main() {
	out, err := exec.Command("git", "ls-files", "-z", "--", "*.md").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mdlinks: git ls-files:", err)
		os.Exit(2)
	}
	broken, links, files := 0, 0, 0
	for _, name := range bytes.Split(out, []byte{0}) {
		if len(name) == 0 {
			continue
		}
		files++
		n, b, err := check(string(name))
		if err != nil {
			fmt.Fprintln(os.Stderr, "mdlinks:", err)
			os.Exit(2)
		}
		links += n
		broken += b
	}
	if broken > 0 {
		fmt.Printf("mdlinks: %d of %d relative links in %d Markdown files are broken\n", broken, links, files)
		os.Exit(1)
	}
	fmt.Printf("mdlinks: %d relative links in %d Markdown files resolve\n", links, files)
}

// check reports how many relative links file holds and how many are broken,
// printing each broken one.
func check(file string) (links, broken int, err error) {
	f, err := os.Open(file)
	if os.IsNotExist(err) {
		return 0, 0, nil // deleted in the work tree, not yet in the index
	}
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	fence := ""
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		trimmed := strings.TrimSpace(text)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		text = code.ReplaceAllString(text, "")
		var targets []string
		for _, m := range inline.FindAllStringSubmatch(text, -1) {
			targets = append(targets, m[1])
		}
		if m := refDef.FindStringSubmatch(text); m != nil {
			targets = append(targets, m[1])
		}
		for _, t := range targets {
			if scheme.MatchString(t) || strings.HasPrefix(t, "#") {
				continue
			}
			if i := strings.IndexAny(t, "#?"); i >= 0 {
				t = t[:i]
			}
			links++
			path := filepath.Join(filepath.Dir(file), filepath.FromSlash(t))
			if strings.HasPrefix(t, "/") {
				path = filepath.FromSlash(strings.TrimPrefix(t, "/"))
			}
			if _, err := os.Stat(path); err != nil {
				broken++
				fmt.Printf("%s:%d: %s\n", file, line, t)
			}
		}
	}
	return links, broken, sc.Err()
}
