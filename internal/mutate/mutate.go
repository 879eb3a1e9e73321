// Package mutate is the mutation testing behind `make mutate`: it makes small
// changes to the decision code one at a time (flip a comparison or && / ||, drop a
// !, swap true / false or 0 / 1, delete a call, an assignment or an early return),
// and the runner (cmd/mutate) checks that some test of the package notices each.
//
// It is a development tool: nothing in the provider imports it.
package mutate

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"sort"
	"strings"
)

// Mutant is one small change to one file.
type Mutant struct {
	File  string // the file, relative to the module root, with slashes
	Func  string // the enclosing function ("Type.Method" or "Func"), or "(package)"
	Line  int
	Desc  string // what changes, e.g. "`a == b`: == → !="
	Start int    // byte offsets of the replaced text in the file
	End   int
	Repl  string // what replaces it
	// ID names the mutant stably across edits elsewhere in the file (no line
	// number): file, function, description and, for repeats inside one function,
	// an ordinal. The ignore file lists mutants by ID.
	ID string
}

// Apply returns src with the mutant's change.
func (m Mutant) Apply(src []byte) []byte {
	out := make([]byte, 0, len(src)+len(m.Repl))
	out = append(out, src[:m.Start]...)
	out = append(out, m.Repl...)
	return append(out, src[m.End:]...)
}

// opFlips are the comparison and logical operator mutations: the negation of each
// comparison, its boundary neighbour, and && ↔ ||.
var opFlips = map[token.Token][]token.Token{
	token.EQL:  {token.NEQ},
	token.NEQ:  {token.EQL},
	token.LSS:  {token.GEQ, token.LEQ},
	token.GTR:  {token.LEQ, token.GEQ},
	token.LEQ:  {token.GTR, token.LSS},
	token.GEQ:  {token.LSS, token.GTR},
	token.LAND: {token.LOR},
	token.LOR:  {token.LAND},
}

// Generate lists the mutants of one Go source file; path is how the report and
// the IDs name the file.
func Generate(path string, src []byte) ([]Mutant, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	g := &generator{fset: fset, src: src, path: path}
	for _, decl := range f.Decls {
		name := "(package)"
		if fd, ok := decl.(*ast.FuncDecl); ok {
			name = funcName(fd)
		}
		g.fn = name
		ast.Inspect(decl, g.visit)
	}
	sort.SliceStable(g.out, func(i, j int) bool { return g.out[i].Start < g.out[j].Start })
	seen := map[string]int{}
	for i := range g.out {
		m := &g.out[i]
		base := m.File + " " + m.Func + ": " + m.Desc
		seen[base]++
		m.ID = base
		if n := seen[base]; n > 1 {
			m.ID = fmt.Sprintf("%s #%d", base, n)
		}
	}
	return g.out, nil
}

type generator struct {
	fset *token.FileSet
	src  []byte
	path string
	fn   string
	out  []Mutant
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		}
		break
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

func (g *generator) off(p token.Pos) int { return g.fset.Position(p).Offset }

// bq puts s between backquotes, as the IDs show code (whatever s holds: an ID is
// text, not Go).
func bq(s string) string { return "`" + s + "`" }

func (g *generator) text(n ast.Node) string { return string(g.src[g.off(n.Pos()):g.off(n.End())]) }

// snippet is the source of n on one line, shortened to about 60 characters.
func (g *generator) snippet(n ast.Node) string {
	s := strings.Join(strings.Fields(string(g.src[g.off(n.Pos()):g.off(n.End())])), " ")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:57]) + "..."
	}
	return s
}

func (g *generator) add(at ast.Node, start, end token.Pos, repl, desc string) {
	g.out = append(g.out, Mutant{
		File: g.path, Func: g.fn, Line: g.fset.Position(at.Pos()).Line,
		Desc: desc, Start: g.off(start), End: g.off(end), Repl: repl,
	})
}

func (g *generator) visit(n ast.Node) bool {
	switch x := n.(type) {
	case *ast.BinaryExpr:
		for _, to := range opFlips[x.Op] {
			desc := fmt.Sprintf("%s: %s → %s", bq(g.snippet(x)), x.Op, to)
			if x.Op == token.LAND || x.Op == token.LOR {
				// && binds tighter than ||: keep the operands grouped as they were.
				g.add(x, x.Pos(), x.End(), "(("+g.text(x.X)+") "+to.String()+" ("+g.text(x.Y)+"))", desc)
				continue
			}
			g.add(x, x.OpPos, x.OpPos+token.Pos(len(x.Op.String())), to.String(), desc)
		}
	case *ast.UnaryExpr:
		if x.Op == token.NOT {
			g.add(x, x.OpPos, x.OpPos+1, "", bq(g.snippet(x))+": drop !")
		}
	case *ast.Ident:
		if swap, ok := map[string]string{"true": "false", "false": "true"}[x.Name]; ok {
			g.add(x, x.Pos(), x.End(), swap, fmt.Sprintf("%s → %s", x.Name, swap))
		}
	case *ast.BasicLit:
		if swap, ok := map[string]string{"0": "1", "1": "0"}[x.Value]; x.Kind == token.INT && ok {
			g.add(x, x.Pos(), x.End(), swap, fmt.Sprintf("%s → %s", x.Value, swap))
		}
	case *ast.BlockStmt:
		g.statements(x.List)
	case *ast.CaseClause:
		g.statements(x.Body)
	case *ast.CommClause:
		g.statements(x.Body)
	case *ast.IfStmt:
		// An early return is a return in the body of an if.
		for _, s := range x.Body.List {
			if r, ok := s.(*ast.ReturnStmt); ok {
				g.add(r, r.Pos(), r.End(), "", "delete early "+bq(g.snippet(r)))
			}
		}
	}
	return true
}

// statements adds the deletion of each call statement and assignment of a list.
func (g *generator) statements(list []ast.Stmt) {
	for _, s := range list {
		switch x := s.(type) {
		case *ast.ExprStmt:
			if _, ok := x.X.(*ast.CallExpr); ok {
				g.add(x, x.Pos(), x.End(), "", "delete call "+bq(g.snippet(x)))
			}
		case *ast.AssignStmt:
			if x.Tok != token.DEFINE {
				g.add(x, x.Pos(), x.End(), "", "delete assignment "+bq(g.snippet(x)))
			}
		case *ast.IncDecStmt:
			g.add(x, x.Pos(), x.End(), "", "delete assignment "+bq(g.snippet(x)))
		}
	}
}

// Ignored is the list of mutants the runner leaves out (equivalent to the original,
// or changing only a log line): each ID, or pattern of IDs, with the reason it is
// left out.
type Ignored struct {
	entries []ignoreEntry
}

type ignoreEntry struct {
	id      string
	pattern *regexp.Regexp // set when id holds a *, which matches any text
	reason  string
}

// ParseIgnored reads an ignore file: one mutant a line, "ID | reason", where a * in
// the ID matches any text (for example every deletion of a log call); blank lines
// and lines starting with # are comments. A line without a reason is an error.
func ParseIgnored(b []byte) (*Ignored, error) {
	ig := &Ignored{}
	seen := map[string]bool{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cut := strings.LastIndex(line, " | ")
		if cut < 0 || strings.TrimSpace(line[cut+3:]) == "" {
			return nil, fmt.Errorf("line %d: %q has no reason (write \"ID | why it is equivalent or logging-only\")", i+1, line)
		}
		e := ignoreEntry{id: strings.TrimSpace(line[:cut]), reason: strings.TrimSpace(line[cut+3:])}
		if seen[e.id] {
			return nil, fmt.Errorf("line %d: %q is listed twice", i+1, e.id)
		}
		seen[e.id] = true
		if strings.Contains(e.id, "*") {
			parts := strings.Split(e.id, "*")
			for j := range parts {
				parts[j] = regexp.QuoteMeta(parts[j])
			}
			e.pattern = regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
		}
		ig.entries = append(ig.entries, e)
	}
	return ig, nil
}

// Lookup returns the entry that leaves the mutant with this ID out, and its reason.
func (ig *Ignored) Lookup(id string) (entry, reason string, ok bool) {
	for _, e := range ig.entries {
		if e.id == id || e.pattern != nil && e.pattern.MatchString(id) {
			return e.id, e.reason, true
		}
	}
	return "", "", false
}

// Entries lists the IDs and patterns of the file.
func (ig *Ignored) Entries() []string {
	var ids []string
	for _, e := range ig.entries {
		ids = append(ids, e.id)
	}
	return ids
}

// Outcome is what the package's tests made of one mutant.
type Outcome string

const (
	Killed   Outcome = "killed"   // a test failed
	Survived Outcome = "survived" // every test passed
	Hung     Outcome = "hung"     // the tests ran past the deadline (not counted as killed)
	Invalid  Outcome = "invalid"  // the mutant does not compile (not counted)
	Skipped  Outcome = "ignored"  // listed in the ignore file (not counted)
)

// Classify turns a test binary's run into an outcome: timedOut when the runner's
// own deadline killed it, failed when it exited non-zero; output is what it printed.
func Classify(failed, timedOut bool, output []byte) Outcome {
	switch {
	case timedOut || bytes.Contains(output, []byte("panic: test timed out after")):
		return Hung
	case failed:
		return Killed
	default:
		return Survived
	}
}

// Result is one mutant and its outcome.
type Result struct {
	Mutant  Mutant
	Outcome Outcome
	Reason  string // for ignored mutants, the reason of the ignore file
}

// Tally counts one package's outcomes.
type Tally struct {
	Package                                         string
	Killed, Survived, Hung, Invalid, Ignored, Total int
}

// Valid is the number of mutants that count: killed, survived or hung.
func (t Tally) Valid() int { return t.Killed + t.Survived + t.Hung }

// Rate is the kill rate in percent of valid mutants (a hang is not a kill).
func (t Tally) Rate() float64 {
	if t.Valid() == 0 {
		return 0
	}
	return 100 * float64(t.Killed) / float64(t.Valid())
}

// Count tallies results.
func Count(pkg string, rs []Result) Tally {
	t := Tally{Package: pkg, Total: len(rs)}
	for _, r := range rs {
		switch r.Outcome {
		case Killed:
			t.Killed++
		case Survived:
			t.Survived++
		case Hung:
			t.Hung++
		case Invalid:
			t.Invalid++
		case Skipped:
			t.Ignored++
		}
	}
	return t
}
