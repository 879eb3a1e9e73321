package main

import (
	"fmt"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	// The marker lines are built so that this file holds none.
	lt, eq, gt, bar := strings.Repeat("<", 7), strings.Repeat("=", 7), strings.Repeat(">", 7), strings.Repeat("|", 7)
	cases := []struct {
		name, src string
		want      []string // "line: start of what", in order
	}{
		{"a conflict as the provider page held it",
			"Intro.\n\n" + lt + " HEAD\nOld prose\nthat says https = true.\n" + eq + "\nNew prose.\n" + gt + " h/docs25\n",
			[]string{"3: merge-conflict marker", "3: setext heading (level 1): the line \"" + eq + "\" under this paragraph (line 6)", "6: merge-conflict marker", "8: merge-conflict marker"}},
		{"a line of dashes under a paragraph",
			"# Title\n\nSome text\n-------\n\nMore.\n",
			[]string{"3: setext heading (level 2): the line \"-------\" under this paragraph (line 4)"}},
		{"a rule of equals signs under a two-line paragraph",
			"First line\nsecond line\n==========\n",
			[]string{"1: setext heading (level 1): the line \"==========\" under this paragraph (line 3)"}},
		{"a setext heading in a list item",
			"- item\n  text\n  ---\n",
			[]string{"1: setext heading (level 2): the line \"---\" under this paragraph (line 3)"}},
		{"a diff3 base marker", "a\n\n" + bar + " base\n", []string{"3: merge-conflict marker"}},
		{"front matter is not Markdown",
			"---\npage_title: \"x\"\ndescription: |-\n  A page.\n---\n\n# Title\n\nText.\n", nil},
		{"the same lines after other text are a heading",
			"Intro.\n\n---\npage_title: \"x\"\n---\n", []string{"4: setext heading (level 2)"}},
		{"ATX headings, a rule after a blank line, fenced code",
			"# One\n\n## Two ##\n\nText.\n\n---\n\n```\ncode\n---\n" + eq + "x\n```\n\n> # Quoted\n\n- # In a list\n", nil},
		{"a longer rule of equals signs after a blank line", "Text.\n\n" + eq + "===\n", nil},
		{"CRLF line ends", "Text\r\n---\r\n", []string{"1: setext heading (level 2)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := check([]byte(tc.src))
			var lines []string
			for _, f := range got {
				lines = append(lines, fmt.Sprintf("%d: %s", f.line, f.what))
			}
			if len(got) != len(tc.want) {
				t.Fatalf("findings:\n%s\nwant %d:\n%s", strings.Join(lines, "\n"), len(tc.want), strings.Join(tc.want, "\n"))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("finding %d is %q, want it to start with %q", i, lines[i], w)
				}
			}
		})
	}
}
