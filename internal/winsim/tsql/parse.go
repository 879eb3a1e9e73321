package tsql

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
)

// The simulator's SQL: a small hand-written parser for the SELECTs a DBA or a module
// author sends to check an instance (FIDELITY.md, "SQL the endpoint answers"):
//
//	batch     := stmt { [';'] stmt } [';']
//	stmt      := select | create | alter | drop   (the last three: ddl.go)
//	select    := SELECT [TOP n] item {',' item}
//	             [FROM table [[AS] alias] {[INNER | LEFT [OUTER]] JOIN table [[AS] alias] ON cond}]
//	             [WHERE cond] [ORDER BY expr [ASC|DESC] {',' ...}]
//	item      := '*' | name '.*' | expr [[AS] alias] | alias '=' expr
//	table     := [[database '.'] schema '.'] name
//	cond      := pred {AND pred}
//	pred      := expr (= | <> | != | < | > | <= | >=) expr | expr IS [NOT] NULL | '(' cond ')'
//	expr      := [qualifier '.'] column | integer | 'string' | N'string' | @@SERVERNAME
//	             | SERVERPROPERTY('name') | DB_NAME([expr])
//	             | CAST(expr AS type) | CONVERT(type, expr)
//
// Identifiers and keywords are case-insensitive, [bracketed] and "quoted" names and
// -- and /* */ comments are accepted. Text outside this grammar gets SQL Server's
// syntax errors (102, 156) when SQL Server would refuse it too, and error 50000
// naming the construct when it is valid T-SQL the simulator does not model.

// sqlTokKind is a token's kind.
type sqlTokKind int

const (
	tokEOF sqlTokKind = iota
	tokIdent
	tokString
	tokNumber
	tokVariable // @@NAME
	tokPunct
)

type sqlToken struct {
	kind sqlTokKind
	text string // as written, for error messages
	val  string // identifier without quotes, string literal unescaped, operator
	nstr bool   // N'...'
	// quoted: a [bracketed] or "quoted" identifier, never a keyword.
	quoted bool
	line   int32
}

// reserved are the T-SQL reserved keywords the parser can meet where a name is
// expected; SQL Server answers error 156 "Incorrect syntax near the keyword".
var reserved = map[string]bool{
	"select": true, "from": true, "where": true, "and": true, "or": true, "not": true,
	"join": true, "inner": true, "left": true, "right": true, "full": true, "outer": true,
	"cross": true, "on": true, "as": true, "order": true, "by": true, "group": true,
	"having": true, "top": true, "union": true, "null": true, "is": true, "in": true,
	"like": true, "cast": true, "convert": true, "asc": true, "desc": true, "distinct": true,
	"between": true, "exists": true, "case": true, "when": true, "then": true, "else": true,
	"end": true, "into": true, "insert": true, "update": true, "delete": true, "exec": true,
	"execute": true, "declare": true, "set": true, "with": true, "except": true, "intersect": true,
	"percent": true, "all": true, "any": true, "some": true, "use": true, "go": true,
	"create": true, "alter": true, "drop": true, "database": true, "primary": true, "file": true,
	"if": true,
}

// unsupportedKeywords are valid T-SQL the simulator does not answer.
var unsupportedKeywords = map[string]bool{
	"or": true, "in": true, "like": true, "between": true, "exists": true, "case": true,
	"group": true, "having": true, "union": true, "except": true, "intersect": true,
	"distinct": true, "right": true, "full": true, "cross": true, "into": true, "insert": true,
	"update": true, "delete": true, "exec": true, "execute": true, "declare": true, "set": true,
	"with": true, "percent": true, "use": true, "not": true, "all": true,
}

func (t sqlToken) isKeyword(kw string) bool {
	return t.kind == tokIdent && !t.quoted && strings.EqualFold(t.val, kw)
}

func (t sqlToken) isPunct(p string) bool { return t.kind == tokPunct && t.val == p }

func (t sqlToken) reservedWord() bool {
	return t.kind == tokIdent && !t.quoted && reserved[strings.ToLower(t.val)]
}

// sqlErr builds an error as SQL Server sends it.
func sqlErr(number int32, class, state uint8, line int32, format string, args ...any) *tds.SQLError {
	if line == 0 {
		line = 1
	}
	return &tds.SQLError{Number: number, Class: class, State: state, Line: line, Message: fmt.Sprintf(format, args...)}
}

// syntaxError is error 102, or 156 for a reserved keyword.
func syntaxError(t sqlToken) *tds.SQLError {
	if t.reservedWord() {
		return sqlErr(156, 15, 1, t.line, "Incorrect syntax near the keyword '%s'.", t.text)
	}
	near := t.text
	if t.kind == tokString {
		near = t.val // SQL Server names a string by its contents
	}
	return sqlErr(102, 15, 1, t.line, "Incorrect syntax near '%s'.", near)
}

// unsupported is for valid T-SQL outside the modelled subset.
func unsupported(line int32, what string) *tds.SQLError {
	return sqlErr(50000, 16, 1, line, "winsim does not model %s; it answers the SELECT subset in internal/winsim/FIDELITY.md (\"SQL the endpoint answers\")", what)
}

func lexSQL(q string) ([]sqlToken, *tds.SQLError) {
	var toks []sqlToken
	rs := []rune(q)
	line := int32(1)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case r == '\n':
			line++
			i++
		case unicode.IsSpace(r):
			i++
		case r == '-' && i+1 < len(rs) && rs[i+1] == '-':
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
		case r == '/' && i+1 < len(rs) && rs[i+1] == '*':
			start := line
			depth := 0
			for i < len(rs) {
				if rs[i] == '/' && i+1 < len(rs) && rs[i+1] == '*' {
					depth++
					i += 2
					continue
				}
				if rs[i] == '*' && i+1 < len(rs) && rs[i+1] == '/' {
					depth--
					i += 2
					if depth == 0 {
						break
					}
					continue
				}
				if rs[i] == '\n' {
					line++
				}
				i++
			}
			if depth > 0 {
				return nil, sqlErr(113, 15, 1, start, "Missing end comment mark '*/'.")
			}
		case r == '\'' || ((r == 'N' || r == 'n') && i+1 < len(rs) && rs[i+1] == '\''):
			start, startLine := i, line
			nstr := r != '\''
			if nstr {
				i++
			}
			i++
			var b strings.Builder
			closed := false
			for i < len(rs) {
				if rs[i] == '\'' {
					if i+1 < len(rs) && rs[i+1] == '\'' {
						b.WriteRune('\'')
						i += 2
						continue
					}
					i++
					closed = true
					break
				}
				if rs[i] == '\n' {
					line++
				}
				b.WriteRune(rs[i])
				i++
			}
			if !closed {
				return nil, sqlErr(105, 15, 1, startLine, "Unclosed quotation mark after the character string '%s'.", b.String())
			}
			toks = append(toks, sqlToken{kind: tokString, text: string(rs[start:i]), val: b.String(), nstr: nstr, line: startLine})
		case r == '[' || r == '"':
			end := ']'
			if r == '"' {
				end = '"'
			}
			start := i
			i++
			var b strings.Builder
			closed := false
			for i < len(rs) {
				if rs[i] == end {
					if i+1 < len(rs) && rs[i+1] == end {
						b.WriteRune(end)
						i += 2
						continue
					}
					i++
					closed = true
					break
				}
				b.WriteRune(rs[i])
				i++
			}
			if !closed {
				return nil, sqlErr(105, 15, 1, line, "Unclosed quotation mark after the character string '%s'.", string(rs[start+1:]))
			}
			toks = append(toks, sqlToken{kind: tokIdent, text: string(rs[start:i]), val: b.String(), quoted: true, line: line})
		case r == '@' && i+1 < len(rs) && rs[i+1] == '@':
			start := i
			i += 2
			for i < len(rs) && isIdentRune(rs[i]) {
				i++
			}
			toks = append(toks, sqlToken{kind: tokVariable, text: string(rs[start:i]), val: strings.ToUpper(string(rs[start:i])), line: line})
		case unicode.IsLetter(r) || r == '_' || r == '#' || r == '@':
			start := i
			for i < len(rs) && isIdentRune(rs[i]) {
				i++
			}
			toks = append(toks, sqlToken{kind: tokIdent, text: string(rs[start:i]), val: string(rs[start:i]), line: line})
		case r >= '0' && r <= '9':
			start := i
			for i < len(rs) && (unicode.IsDigit(rs[i]) || rs[i] == '.' || unicode.IsLetter(rs[i])) {
				i++
			}
			toks = append(toks, sqlToken{kind: tokNumber, text: string(rs[start:i]), val: string(rs[start:i]), line: line})
		default:
			two := ""
			if i+1 < len(rs) {
				two = string(rs[i : i+2])
			}
			switch two {
			case "<>", "!=", "<=", ">=":
				toks = append(toks, sqlToken{kind: tokPunct, text: two, val: two, line: line})
				i += 2
				continue
			}
			toks = append(toks, sqlToken{kind: tokPunct, text: string(r), val: string(r), line: line})
			i++
		}
	}
	toks = append(toks, sqlToken{kind: tokEOF, line: line})
	return toks, nil
}

func isIdentRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '$' || r == '#' || r == '@'
}

// The parsed query.

type selectStmt struct {
	top     int64 // -1: no TOP
	items   []selectItem
	from    *tableRef
	joins   []joinClause
	where   []predicate
	orderBy []orderItem
	line    int32
}

type selectItem struct {
	star      bool
	starQual  string // "x" of x.*
	expr      sqlExpr
	alias     string
	hasAlias  bool
	aliasLine int32
}

type tableRef struct {
	parts []string // [database.][schema.]name, as written (unquoted)
	alias string
	line  int32
}

// display is the object name as SQL Server echoes it in error 208.
func (t tableRef) display() string { return strings.Join(t.parts, ".") }

type joinClause struct {
	left  bool
	table tableRef
	on    []predicate
}

// predicate is one comparison of a WHERE or ON: left op right, or left IS [NOT] NULL.
type predicate struct {
	left, right sqlExpr
	op          string // = <> < > <= >= "is null" "is not null"
	line        int32
}

type orderItem struct {
	expr sqlExpr
	desc bool
}

// sqlExpr is one of the expression types below.
type sqlExpr interface{ exprLine() int32 }

type colRef struct {
	qual, name string
	text       string // as written, for 207 / 4104
	line       int32
}

type literal struct {
	val  any // int64 or string
	nstr bool
	line int32
}

type funcCall struct {
	name string // upper case
	args []sqlExpr
	line int32
}

type castExpr struct {
	expr sqlExpr
	to   sqlType
	line int32
}

type variable struct {
	name string // @@SERVERNAME
	line int32
}

type sqlType struct {
	name string // lower case: nvarchar, int, ...
	size int    // characters for string types; -1 for max; 0 when not given
}

func (e colRef) exprLine() int32   { return e.line }
func (e literal) exprLine() int32  { return e.line }
func (e funcCall) exprLine() int32 { return e.line }
func (e castExpr) exprLine() int32 { return e.line }
func (e variable) exprLine() int32 { return e.line }

type sqlParser struct {
	toks []sqlToken
	pos  int
}

func (p *sqlParser) peek() sqlToken { return p.toks[p.pos] }

func (p *sqlParser) next() sqlToken {
	t := p.toks[p.pos]
	if t.kind != tokEOF {
		p.pos++
	}
	return t
}

// fail reports a syntax error at the current token; at the end of the text SQL
// Server names the last token it read.
func (p *sqlParser) fail() *tds.SQLError {
	t := p.peek()
	if t.kind == tokEOF && p.pos > 0 {
		t = p.toks[p.pos-1]
	}
	if t.kind == tokIdent && !t.quoted && unsupportedKeywords[strings.ToLower(t.val)] {
		return unsupported(t.line, strings.ToUpper(t.val))
	}
	return syntaxError(t)
}

func (p *sqlParser) acceptKeyword(kw string) bool {
	if p.peek().isKeyword(kw) {
		p.pos++
		return true
	}
	return false
}

func (p *sqlParser) acceptPunct(s string) bool {
	if p.peek().isPunct(s) {
		p.pos++
		return true
	}
	return false
}

func (p *sqlParser) expectPunct(s string) *tds.SQLError {
	if !p.acceptPunct(s) {
		return p.fail()
	}
	return nil
}

// name reads an identifier that is not a reserved keyword.
func (p *sqlParser) name() (sqlToken, *tds.SQLError) {
	t := p.peek()
	if t.kind != tokIdent || t.reservedWord() {
		return t, p.fail()
	}
	p.pos++
	return t, nil
}

// parseBatch parses every statement of a batch.
func parseBatch(q string) ([]sqlStmt, *tds.SQLError) {
	toks, err := lexSQL(q)
	if err != nil {
		return nil, err
	}
	p := &sqlParser{toks: toks}
	var stmts []sqlStmt
	for {
		for p.acceptPunct(";") {
		}
		t := p.peek()
		if t.kind == tokEOF {
			break
		}
		var s sqlStmt
		var err *tds.SQLError
		switch {
		case t.isKeyword("select"):
			var sel selectStmt
			sel, err = p.parseSelect()
			s = sel
		case t.isKeyword("create"):
			s, err = p.parseCreate()
		case t.isKeyword("alter"):
			s, err = p.parseAlter()
		case t.isKeyword("drop"):
			s, err = p.parseDrop()
		case t.isKeyword("declare"):
			s, err = p.parseDeclare()
		case t.isKeyword("exec") || t.isKeyword("execute"):
			s, err = p.parseExec()
		case t.kind == tokIdent && !t.quoted && unsupportedKeywords[strings.ToLower(t.val)]:
			return nil, unsupported(t.line, strings.ToUpper(t.val)+" statements")
		default:
			return nil, syntaxError(t)
		}
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, s)
	}
	if len(stmts) == 0 {
		return nil, nil
	}
	return stmts, nil
}

func (p *sqlParser) parseSelect() (selectStmt, *tds.SQLError) {
	s := selectStmt{top: -1, line: p.next().line}
	if p.acceptKeyword("top") {
		paren := p.acceptPunct("(")
		t := p.next()
		n, err := strconv.ParseInt(t.val, 10, 64)
		if t.kind != tokNumber || err != nil || n < 0 {
			p.pos--
			return s, p.fail()
		}
		s.top = n
		if paren {
			if err := p.expectPunct(")"); err != nil {
				return s, err
			}
		}
	}
	for {
		it, err := p.parseItem()
		if err != nil {
			return s, err
		}
		s.items = append(s.items, it)
		if !p.acceptPunct(",") {
			break
		}
	}
	if p.acceptKeyword("from") {
		t, err := p.parseTable()
		if err != nil {
			return s, err
		}
		s.from = &t
		for {
			left := false
			switch {
			case p.acceptKeyword("join"):
			case p.peek().isKeyword("inner"):
				p.pos++
				if !p.acceptKeyword("join") {
					return s, p.fail()
				}
			case p.peek().isKeyword("left"):
				p.pos++
				p.acceptKeyword("outer")
				if !p.acceptKeyword("join") {
					return s, p.fail()
				}
				left = true
			default:
				goto joined
			}
			jt, err := p.parseTable()
			if err != nil {
				return s, err
			}
			if !p.acceptKeyword("on") {
				return s, p.fail()
			}
			on, err := p.parseCond()
			if err != nil {
				return s, err
			}
			s.joins = append(s.joins, joinClause{left: left, table: jt, on: on})
		}
	joined:
	}
	if p.acceptKeyword("where") {
		w, err := p.parseCond()
		if err != nil {
			return s, err
		}
		s.where = w
	}
	if p.acceptKeyword("order") {
		if !p.acceptKeyword("by") {
			return s, p.fail()
		}
		for {
			e, err := p.parseExpr()
			if err != nil {
				return s, err
			}
			oi := orderItem{expr: e}
			if p.acceptKeyword("desc") {
				oi.desc = true
			} else {
				p.acceptKeyword("asc")
			}
			s.orderBy = append(s.orderBy, oi)
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	// The statement ends at ';', the end of the batch, or the next SELECT.
	if t := p.peek(); !(t.kind == tokEOF || t.isPunct(";") || t.isKeyword("select")) {
		return s, p.fail()
	}
	return s, nil
}

func (p *sqlParser) parseItem() (selectItem, *tds.SQLError) {
	if p.acceptPunct("*") {
		return selectItem{star: true}, nil
	}
	// x.* and alias = expr
	if t := p.peek(); t.kind == tokIdent && !t.reservedWord() {
		if p.toks[p.pos+1].isPunct(".") && p.toks[p.pos+2].isPunct("*") {
			p.pos += 3
			return selectItem{star: true, starQual: t.val}, nil
		}
		if p.toks[p.pos+1].isPunct("=") {
			p.pos += 2
			e, err := p.parseExpr()
			if err != nil {
				return selectItem{}, err
			}
			return selectItem{expr: e, alias: t.val, hasAlias: true, aliasLine: t.line}, nil
		}
	}
	e, err := p.parseExpr()
	if err != nil {
		return selectItem{}, err
	}
	it := selectItem{expr: e}
	if p.acceptKeyword("as") {
		t := p.peek()
		if t.kind == tokString {
			p.pos++
			it.alias, it.hasAlias = t.val, true
			return it, nil
		}
		a, err := p.name()
		if err != nil {
			return it, err
		}
		it.alias, it.hasAlias = a.val, true
	} else if t := p.peek(); (t.kind == tokIdent && !t.reservedWord()) || t.kind == tokString {
		p.pos++
		it.alias, it.hasAlias = t.val, true
	}
	return it, nil
}

func (p *sqlParser) parseTable() (tableRef, *tds.SQLError) {
	first, err := p.name()
	if err != nil {
		return tableRef{}, err
	}
	t := tableRef{parts: []string{first.val}, line: first.line}
	for p.acceptPunct(".") {
		n, err := p.name()
		if err != nil {
			return t, err
		}
		t.parts = append(t.parts, n.val)
	}
	if len(t.parts) > 3 {
		return t, unsupported(first.line, "four-part (linked server) names")
	}
	if p.acceptKeyword("as") {
		a, err := p.name()
		if err != nil {
			return t, err
		}
		t.alias = a.val
	} else if n := p.peek(); n.kind == tokIdent && !n.reservedWord() {
		p.pos++
		t.alias = n.val
	}
	return t, nil
}

func (p *sqlParser) parseCond() ([]predicate, *tds.SQLError) {
	var preds []predicate
	for {
		if p.peek().isPunct("(") && p.parenthesisedCond() {
			p.pos++
			inner, err := p.parseCond()
			if err != nil {
				return nil, err
			}
			if err := p.expectPunct(")"); err != nil {
				return nil, err
			}
			preds = append(preds, inner...)
		} else {
			pr, err := p.parsePredicate()
			if err != nil {
				return nil, err
			}
			preds = append(preds, pr)
		}
		if !p.acceptKeyword("and") {
			return preds, nil
		}
	}
}

// parenthesisedCond tells "(a = b)" from "(1) = x": a comparison operator or IS
// before the matching parenthesis means a condition.
func (p *sqlParser) parenthesisedCond() bool {
	depth := 0
	for i := p.pos; i < len(p.toks); i++ {
		t := p.toks[i]
		switch {
		case t.isPunct("("):
			depth++
		case t.isPunct(")"):
			depth--
			if depth == 0 {
				return false
			}
		case depth == 1 && (t.kind == tokPunct && slices.Contains(comparisonOperators, t.val) || t.isKeyword("is")):
			return true
		case t.kind == tokEOF:
			return false
		}
	}
	return false
}

func (p *sqlParser) parsePredicate() (predicate, *tds.SQLError) {
	l, err := p.parseExpr()
	if err != nil {
		return predicate{}, err
	}
	pr := predicate{left: l, line: l.exprLine()}
	if p.acceptKeyword("is") {
		if p.acceptKeyword("not") {
			pr.op = "is not null"
		} else {
			pr.op = "is null"
		}
		if !p.acceptKeyword("null") {
			return pr, p.fail()
		}
		return pr, nil
	}
	t := p.peek()
	switch {
	case t.kind == tokPunct && (t.val == "=" || t.val == "<>" || t.val == "!=" || t.val == "<" || t.val == ">" || t.val == "<=" || t.val == ">="):
		p.pos++
		pr.op = t.val
		if pr.op == "!=" {
			pr.op = "<>"
		}
	default:
		return pr, p.fail()
	}
	r, err := p.parseExpr()
	if err != nil {
		return pr, err
	}
	pr.right = r
	return pr, nil
}

func (p *sqlParser) parseExpr() (sqlExpr, *tds.SQLError) {
	t := p.peek()
	switch t.kind {
	case tokNumber:
		p.pos++
		n, err := strconv.ParseInt(t.val, 10, 64)
		if err != nil {
			if strings.ContainsAny(t.val, ".eE") {
				return nil, unsupported(t.line, "decimal and float literals")
			}
			return nil, syntaxError(t)
		}
		return literal{val: n, line: t.line}, nil
	case tokString:
		p.pos++
		return literal{val: t.val, nstr: t.nstr, line: t.line}, nil
	case tokVariable:
		p.pos++
		return variable{name: t.val, line: t.line}, nil
	case tokPunct:
		if t.val == "-" && p.toks[p.pos+1].kind == tokNumber {
			p.pos++
			e, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			if l, ok := e.(literal); ok {
				if n, ok := l.val.(int64); ok {
					l.val = -n
					return l, nil
				}
			}
		}
		if t.val == "(" {
			p.pos++
			e, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			return e, p.expectPunct(")")
		}
		return nil, p.fail()
	case tokIdent:
		if t.isKeyword("null") {
			p.pos++
			return literal{val: nil, line: t.line}, nil
		}
		if t.isKeyword("cast") {
			return p.parseCast()
		}
		if t.isKeyword("convert") {
			return p.parseConvert()
		}
		if t.reservedWord() {
			return nil, p.fail()
		}
		if isLocalVar(t) {
			p.pos++
			return localVar{name: strings.ToLower(t.val), text: t.val, line: t.line}, nil
		}
		p.pos++
		if p.peek().isPunct("(") && !t.quoted {
			return p.parseCall(t)
		}
		c := colRef{name: t.val, text: t.text, line: t.line}
		parts := []sqlToken{t}
		for p.acceptPunct(".") {
			n, err := p.name()
			if err != nil {
				return nil, err
			}
			parts = append(parts, n)
		}
		if len(parts) > 2 {
			// schema.table.column: the qualifier is the table's name.
			parts = parts[len(parts)-2:]
		}
		var texts []string
		for _, pt := range parts {
			texts = append(texts, pt.val)
		}
		c.text = strings.Join(texts, ".")
		if len(parts) == 2 {
			c.qual, c.name = parts[0].val, parts[1].val
		}
		return c, nil
	}
	return nil, p.fail()
}

func (p *sqlParser) parseCall(name sqlToken) (sqlExpr, *tds.SQLError) {
	p.pos++ // (
	f := funcCall{name: strings.ToUpper(name.val), line: name.line}
	if p.peek().isPunct("*") {
		return nil, unsupported(name.line, "aggregates such as "+f.name+"(*)")
	}
	if !p.acceptPunct(")") {
		for {
			e, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			f.args = append(f.args, e)
			if p.acceptPunct(")") {
				break
			}
			if err := p.expectPunct(","); err != nil {
				return nil, err
			}
		}
	}
	return f, nil
}

func (p *sqlParser) parseType() (sqlType, *tds.SQLError) {
	n, err := p.name()
	if err != nil {
		return sqlType{}, err
	}
	typ := sqlType{name: strings.ToLower(n.val)}
	if p.acceptPunct("(") {
		t := p.next()
		switch {
		case t.isKeyword("max"):
			typ.size = -1
		case t.kind == tokNumber:
			v, err := strconv.Atoi(t.val)
			if err != nil || v <= 0 {
				return typ, syntaxError(t)
			}
			typ.size = v
		default:
			p.pos--
			return typ, p.fail()
		}
		if err := p.expectPunct(")"); err != nil {
			return typ, err
		}
	}
	return typ, nil
}

func (p *sqlParser) parseCast() (sqlExpr, *tds.SQLError) {
	kw := p.next()
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	e, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if !p.acceptKeyword("as") {
		return nil, p.fail()
	}
	typ, err := p.parseType()
	if err != nil {
		return nil, err
	}
	if err := p.expectPunct(")"); err != nil {
		return nil, err
	}
	return castExpr{expr: e, to: typ, line: kw.line}, nil
}

func (p *sqlParser) parseConvert() (sqlExpr, *tds.SQLError) {
	kw := p.next()
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	typ, err := p.parseType()
	if err != nil {
		return nil, err
	}
	if err := p.expectPunct(","); err != nil {
		return nil, err
	}
	e, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if p.peek().isPunct(",") {
		return nil, unsupported(kw.line, "CONVERT with a style")
	}
	if err := p.expectPunct(")"); err != nil {
		return nil, err
	}
	return castExpr{expr: e, to: typ, line: kw.line}, nil
}

// comparisonOperators are the comparison operators a predicate may use.
var comparisonOperators = []string{"=", "<>", "!=", "<", ">", "<=", ">="}
