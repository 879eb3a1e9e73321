package mutate

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

const sample = `package p

func decide(a, b int, ok bool) (int, error) {
	if a < b && !ok {
		return 0, errFoo
	}
	a = b
	note(a)
	return 1, nil
}
`

func TestGenerateMakesEachKindOfMutantOnce(t *testing.T) {
	ms, err := Generate("p/p.go", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"p/p.go decide: `a < b`: < → >=":                 "if a >= b && !ok",
		"p/p.go decide: `a < b`: < → <=":                 "if a <= b && !ok",
		"p/p.go decide: `a < b && !ok`: && → ||":         "if ((a < b) || (!ok))",
		"p/p.go decide: `!ok`: drop !":                   "if a < b && ok",
		"p/p.go decide: 0 → 1":                           "return 1, errFoo",
		"p/p.go decide: 1 → 0":                           "return 0, nil",
		"p/p.go decide: delete early `return 0, errFoo`": "{\n\t\t\n\t}",
		"p/p.go decide: delete assignment `a = b`":       "}\n\t\n\tnote(a)",
		"p/p.go decide: delete call `note(a)`":           "a = b\n\t\n\treturn 1",
	}
	if len(ms) != len(want) {
		for _, m := range ms {
			t.Log(m.ID)
		}
		t.Fatalf("%d mutants, want %d", len(ms), len(want))
	}
	for _, m := range ms {
		frag, ok := want[m.ID]
		if !ok {
			t.Errorf("unexpected mutant %q", m.ID)
			continue
		}
		got := string(m.Apply([]byte(sample)))
		if !strings.Contains(got, frag) {
			t.Errorf("%s: mutated source lacks %q:\n%s", m.ID, frag, got)
		}
		if _, err := parser.ParseFile(token.NewFileSet(), "m.go", got, 0); err != nil {
			t.Errorf("%s: mutated source does not parse: %v", m.ID, err)
		}
		if m.Line < 4 || m.Line > 9 {
			t.Errorf("%s: line %d outside the function", m.ID, m.Line)
		}
	}
}

// Flipping && or || keeps the operands' grouping: in a && b && c the first &&
// becomes ((a) || (b)) && c, not a || b && c.
func TestGenerateKeepsTheGroupingOfLogicalOperands(t *testing.T) {
	src := "package p\nfunc f(a, b, c bool) bool { return a && b && c }\n"
	ms, err := Generate("p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		if strings.Contains(m.Desc, "→") {
			got = append(got, string(m.Apply([]byte(src)))[len("package p\nfunc f(a, b, c bool) bool { return "):])
		}
	}
	want := []string{"((a && b) || (c)) }\n", "((a) || (b)) && c }\n"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("mutants %q, want %q", got, want)
	}
}

func TestGenerateNumbersRepeatsAndNamesMethods(t *testing.T) {
	src := "package p\ntype T struct{}\nfunc (t *T) f(x bool) bool { return x == true || x == true }\n"
	ms, err := Generate("p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, m := range ms {
		if ids[m.ID] {
			t.Errorf("ID %q given twice", m.ID)
		}
		ids[m.ID] = true
	}
	for _, id := range []string{"p.go T.f: true → false", "p.go T.f: true → false #2", "p.go T.f: `x == true`: == → != #2"} {
		if !ids[id] {
			t.Errorf("no mutant %q among %v", id, ids)
		}
	}
}

func TestParseIgnoredWantsAReasonEach(t *testing.T) {
	ig, err := ParseIgnored([]byte("# comment\n\np.go f: 0 → 1 | the count starts anywhere\np.go *: delete call `log(* | logging only\n"))
	if err != nil {
		t.Fatal(err)
	}
	if e, r, ok := ig.Lookup("p.go f: 0 → 1"); !ok || e != "p.go f: 0 → 1" || r != "the count starts anywhere" {
		t.Errorf("exact entry: %q %q %v", e, r, ok)
	}
	if e, r, ok := ig.Lookup("p.go T.g: delete call `log(\"x\")` #2"); !ok || e != "p.go *: delete call `log(*" || r != "logging only" {
		t.Errorf("pattern entry: %q %q %v", e, r, ok)
	}
	for _, id := range []string{"p.go f: 1 → 0", "q.go f: delete call `log(x)`", "p.go f: delete call `logger(x)`"} {
		if _, _, ok := ig.Lookup(id); ok {
			t.Errorf("%q is left out", id)
		}
	}
	for _, bad := range []string{"p.go f: 0 → 1\n", "p.go f: 0 → 1 | \n", "a | x\na | y\n"} {
		if _, err := ParseIgnored([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestClassifyAndRate(t *testing.T) {
	cases := []struct {
		failed, timedOut bool
		out              string
		want             Outcome
	}{
		{false, false, "PASS", Survived},
		{true, false, "--- FAIL: TestX", Killed},
		{true, false, "panic: test timed out after 20s", Hung},
		{true, true, "", Hung},
	}
	var rs []Result
	for _, c := range cases {
		got := Classify(c.failed, c.timedOut, []byte(c.out))
		if got != c.want {
			t.Errorf("Classify(%v, %v, %q) = %s, want %s", c.failed, c.timedOut, c.out, got, c.want)
		}
		rs = append(rs, Result{Outcome: got})
	}
	rs = append(rs, Result{Outcome: Invalid}, Result{Outcome: Skipped}, Result{Outcome: Killed})
	tally := Count("p", rs)
	if tally.Valid() != 5 || tally.Killed != 2 || tally.Hung != 2 || tally.Invalid != 1 || tally.Ignored != 1 {
		t.Fatalf("tally %+v", tally)
	}
	if r := tally.Rate(); r != 40 {
		t.Errorf("rate %.1f, want 40 (a hang is not a kill; invalid and ignored do not count)", r)
	}
}
