// Command mdcheck renders the repository's Markdown as the registry and GitHub do
// (CommonMark with GitHub's extensions, goldmark) and reports what a reader would see
// by accident:
//
//   - a setext heading: a paragraph followed by a line of '=' or '-' becomes a
//     heading. The pages write their headings with '#', so every setext heading is
//     a line that turned a paragraph into one (the '=======' of a merge conflict
//     did so on the provider page);
//   - a merge-conflict marker line (seven '<', '|' or '>' then a space or the line's
//     end, or exactly seven '='), rendered as text, a quote or a heading.
//
// It reads every file git tracks as '*.md' or '*.md.tmpl' (docs/, the templates
// docs/ is rendered from, README.md, the guides and design notes); a leading YAML
// front matter block (the registry's page_title and description) is not Markdown and
// is skipped. Each finding is printed as file:line: what; the exit status is 1 when
// there is one.
//
//	go run ./scripts/mdcheck
package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// marker matches the lines git writes around a merge conflict.
var marker = regexp.MustCompile(`^(<{7}|\|{7}|>{7})( |$)|^={7}$`)

// finding is one thing a reader would see by accident, at a 1-based line.
type finding struct {
	line int
	what string
}

func main() {
	out, err := exec.Command("git", "ls-files", "-z", "--", "*.md", "*.md.tmpl").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mdcheck: git ls-files:", err)
		os.Exit(2)
	}
	files, bad := 0, 0
	for _, name := range bytes.Split(out, []byte{0}) {
		if len(name) == 0 {
			continue
		}
		src, err := os.ReadFile(string(name))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "mdcheck:", err)
			os.Exit(2)
		}
		files++
		for _, f := range check(src) {
			fmt.Printf("%s:%d: %s\n", name, f.line, f.what)
			bad++
		}
	}
	if bad > 0 {
		fmt.Printf("mdcheck: %d findings in %d Markdown files: write headings with '#'; a line of '=' or '-' under a paragraph needs a blank line before it (or use ***); resolve merge conflicts\n", bad, files)
		os.Exit(1)
	}
	fmt.Printf("mdcheck: %d Markdown files render without setext headings or conflict markers\n", files)
}

// check reports the setext headings and conflict-marker lines of one Markdown file.
func check(src []byte) []finding {
	src = blankFrontMatter(src)
	var found []finding
	for i, l := range bytes.Split(src, []byte("\n")) {
		l = bytes.TrimSuffix(l, []byte("\r"))
		if marker.Match(l) {
			found = append(found, finding{i + 1, fmt.Sprintf("merge-conflict marker %q", l)})
		}
	}
	md := goldmark.New(goldmark.WithExtensions(extension.GFM))
	doc := md.Parser().Parse(text.NewReader(src))
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		h, ok := n.(*ast.Heading)
		if !entering || !ok || h.Lines().Len() == 0 {
			return ast.WalkContinue, nil
		}
		first, last := h.Lines().At(0), h.Lines().At(h.Lines().Len()-1)
		if atx(src, first.Start) {
			return ast.WalkContinue, nil
		}
		under := lineOf(src, last.Stop) + 1
		if last.Stop > 0 && src[last.Stop-1] == '\n' {
			under = lineOf(src, last.Stop-1) + 1
		}
		found = append(found, finding{lineOf(src, first.Start), fmt.Sprintf(
			"setext heading (level %d): the line %q under this paragraph (line %d) turns it into a heading",
			h.Level, bytes.TrimSpace(lineAt(src, under)), under)})
		return ast.WalkContinue, nil
	})
	sort.SliceStable(found, func(i, j int) bool { return found[i].line < found[j].line })
	return found
}

// atx reports whether the heading whose text starts at offset start is an ATX
// heading: on its line, what precedes the text (after any container's prefix, a
// list item's or a quote's) ends with '#'. A setext heading's first line holds
// only its text.
func atx(src []byte, start int) bool {
	ls := bytes.LastIndexByte(src[:start], '\n') + 1
	return bytes.HasSuffix(bytes.TrimRight(src[ls:start], " \t"), []byte("#"))
}

// lineOf is the 1-based line of offset off.
func lineOf(src []byte, off int) int { return bytes.Count(src[:off], []byte("\n")) + 1 }

// lineAt is the 1-based line n of src, without its newline.
func lineAt(src []byte, n int) []byte {
	lines := bytes.Split(src, []byte("\n"))
	if n < 1 || n > len(lines) {
		return nil
	}
	return bytes.TrimSuffix(lines[n-1], []byte("\r"))
}

// blankFrontMatter blanks a leading YAML front matter block (a first line "---" to
// the next line "---" or "..."), keeping its newlines so that line numbers stay.
func blankFrontMatter(src []byte) []byte {
	lines := bytes.SplitAfter(src, []byte("\n"))
	if len(lines) == 0 || string(bytes.TrimRight(lines[0], "\r\n")) != "---" {
		return src
	}
	for i := 1; i < len(lines); i++ {
		if l := string(bytes.TrimRight(lines[i], "\r\n")); l == "---" || l == "..." {
			out := make([]byte, 0, len(src))
			for j, l := range lines {
				if j <= i {
					out = append(out, bytes.Repeat([]byte("\n"), bytes.Count(l, []byte("\n")))...)
				} else {
					out = append(out, l...)
				}
			}
			return out
		}
	}
	return src // no end: not front matter
}
