package tsql

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
)

// The database statements the staged real-host suite's seed measurement sends
// (issue 17, stage 5), and little more:
//
//	create    := CREATE DATABASE name [ON [PRIMARY] filespec] [LOG ON filespec]
//	alter     := ALTER DATABASE name MODIFY FILE filespec
//	drop      := DROP DATABASE [IF EXISTS] name {',' name}
//	filespec  := '(' option {',' option} ')'
//	option    := NAME '=' (name | 'string') | FILENAME '=' 'string'
//	             | SIZE '=' n [KB|MB|GB|TB] | MAXSIZE '=' (n [unit] | UNLIMITED)
//	             | FILEGROWTH '=' n [unit | '%']
//
// Other CREATE, ALTER and DROP statements, and the CREATE DATABASE options left
// out (more files, filegroups, COLLATE, WITH, FOR ATTACH, ...) are valid T-SQL the
// simulator does not model: error 50000 naming them. Text SQL Server would refuse
// gets its syntax errors (102, 156), as for SELECT.

// sqlStmt is one statement of a batch: selectStmt or one of the statements below.
type sqlStmt interface{ stmtLine() int32 }

func (s selectStmt) stmtLine() int32 { return s.line }

type createDBStmt struct {
	name      string
	data, log *fileSpec // nil: not given
	line      int32
}

type alterFileStmt struct {
	db   string
	file fileSpec
	line int32
}

type dropDBStmt struct {
	names    []string
	ifExists bool
	line     int32
}

func (s createDBStmt) stmtLine() int32  { return s.line }
func (s alterFileStmt) stmtLine() int32 { return s.line }
func (s dropDBStmt) stmtLine() int32    { return s.line }

// fileSpec is one <filespec>. Sizes are in KB (SQL Server's unit for SIZE
// without a suffix is MB).
type fileSpec struct {
	name, filename string
	sizeKB         int64 // 0: not given
	line           int32
}

// statementStart reports whether t begins a statement the parser knows, so a
// statement without a terminating ';' ends there.
func statementStart(t sqlToken) bool {
	return t.isKeyword("select") || t.isKeyword("create") || t.isKeyword("alter") || t.isKeyword("drop") ||
		t.isKeyword("declare") || t.isKeyword("exec") || t.isKeyword("execute")
}

// endOfStatement checks that nothing follows a statement but ';', the end of the
// batch or the next statement.
func (p *sqlParser) endOfStatement() *tds.SQLError {
	t := p.peek()
	if t.kind == tokEOF || t.isPunct(";") || statementStart(t) {
		return nil
	}
	return p.fail()
}

// expectModelled reads the keyword kw; another word is valid T-SQL the simulator
// does not model, named by what (a format with one %s, the word).
func (p *sqlParser) expectModelled(kw, what string) *tds.SQLError {
	t := p.peek()
	if t.isKeyword(kw) {
		p.next()
		return nil
	}
	if t.kind == tokIdent && !t.quoted {
		return unsupported(t.line, fmt.Sprintf(what, strings.ToUpper(t.val)))
	}
	return p.fail()
}

// expectDatabase reads the DATABASE after verb; another object (CREATE TABLE) is
// valid T-SQL the simulator does not model.
func (p *sqlParser) expectDatabase(verb string) *tds.SQLError {
	return p.expectModelled("database", verb+" %s statements")
}

// databaseHead reads "verb DATABASE name" and returns the statement's line and the name.
func (p *sqlParser) databaseHead(verb string) (int32, sqlToken, *tds.SQLError) {
	line := p.next().line
	if err := p.expectDatabase(verb); err != nil {
		return line, sqlToken{}, err
	}
	name, err := p.name()
	return line, name, err
}

// expectKeyword reads one keyword or fails.
func (p *sqlParser) expectKeyword(kw string) *tds.SQLError {
	if !p.acceptKeyword(kw) {
		return p.fail()
	}
	return nil
}

func (p *sqlParser) parseCreate() (sqlStmt, *tds.SQLError) {
	line, name, err := p.databaseHead("CREATE")
	if err != nil {
		return nil, err
	}
	s := createDBStmt{name: name.val, line: line}
	if p.acceptKeyword("on") {
		p.acceptKeyword("primary")
		f, err := p.parseFileSpec()
		if err != nil {
			return nil, err
		}
		s.data = &f
		if p.peek().isPunct(",") {
			return nil, unsupported(p.peek().line, "CREATE DATABASE with more than one data file")
		}
	}
	if p.peek().isKeyword("log") {
		p.next()
		if err := p.expectKeyword("on"); err != nil {
			return nil, err
		}
		f, err := p.parseFileSpec()
		if err != nil {
			return nil, err
		}
		s.log = &f
		if p.peek().isPunct(",") {
			return nil, unsupported(p.peek().line, "CREATE DATABASE with more than one log file")
		}
	}
	if t := p.peek(); t.kind == tokIdent && !t.quoted && !statementStart(t) {
		switch strings.ToLower(t.val) {
		case "collate", "with", "for", "containment", "as", "filegroup":
			return nil, unsupported(t.line, "CREATE DATABASE ... "+strings.ToUpper(t.val))
		}
	}
	return s, p.endOfStatement()
}

func (p *sqlParser) parseAlter() (sqlStmt, *tds.SQLError) {
	line, name, err := p.databaseHead("ALTER")
	if err != nil {
		return nil, err
	}
	if err := p.expectModelled("modify", "ALTER DATABASE ... %s (only MODIFY FILE is modelled)"); err != nil {
		return nil, err
	}
	if err := p.expectModelled("file", "ALTER DATABASE ... MODIFY %s (only MODIFY FILE is modelled)"); err != nil {
		return nil, err
	}
	f, err := p.parseFileSpec()
	if err != nil {
		return nil, err
	}
	return alterFileStmt{db: name.val, file: f, line: line}, p.endOfStatement()
}

func (p *sqlParser) parseDrop() (sqlStmt, *tds.SQLError) {
	line := p.next().line // DROP
	if err := p.expectDatabase("DROP"); err != nil {
		return nil, err
	}
	s := dropDBStmt{line: line}
	if p.peek().isKeyword("if") {
		p.next()
		if err := p.expectKeyword("exists"); err != nil {
			return nil, err
		}
		s.ifExists = true
	}
	for {
		name, err := p.name()
		if err != nil {
			return nil, err
		}
		s.names = append(s.names, name.val)
		if !p.acceptPunct(",") {
			break
		}
	}
	return s, p.endOfStatement()
}

// parseFileSpec reads '(' option {',' option} ')'. NAME is required, as SQL Server
// requires it (the logical name).
func (p *sqlParser) parseFileSpec() (fileSpec, *tds.SQLError) {
	f := fileSpec{line: p.peek().line}
	if err := p.expectPunct("("); err != nil {
		return f, err
	}
	seen := map[string]bool{}
	for {
		opt := p.peek()
		if opt.kind != tokIdent || opt.quoted {
			return f, p.fail()
		}
		key := strings.ToLower(opt.val)
		switch key {
		case "name", "filename", "size", "maxsize", "filegrowth":
		case "newname", "offline":
			return f, unsupported(opt.line, "the file option "+strings.ToUpper(opt.val))
		default:
			return f, syntaxError(opt)
		}
		if seen[key] {
			return f, syntaxError(opt)
		}
		seen[key] = true
		p.next()
		if err := p.expectPunct("="); err != nil {
			return f, err
		}
		v := p.next()
		switch key {
		case "name":
			if v.kind != tokIdent && v.kind != tokString {
				return f, syntaxError(v)
			}
			f.name = v.val
		case "filename":
			if v.kind != tokString {
				return f, syntaxError(v)
			}
			f.filename = v.val
		case "size":
			kb, err := p.sizeKB(v, false)
			if err != nil {
				return f, err
			}
			f.sizeKB = kb
		case "maxsize":
			if !v.isKeyword("unlimited") {
				if _, err := p.sizeKB(v, false); err != nil {
					return f, err
				}
			}
		case "filegrowth":
			if _, err := p.sizeKB(v, true); err != nil {
				return f, err
			}
		}
		if p.acceptPunct(")") {
			break
		}
		if err := p.expectPunct(","); err != nil {
			return f, err
		}
	}
	if f.name == "" {
		return f, syntaxError(p.toks[p.pos-1])
	}
	return f, nil
}

// sizeKB reads a size whose number v was just read: "1024MB" is one token, "1024 MB"
// two. No suffix means MB; percent allows a trailing '%' (FILEGROWTH).
func (p *sqlParser) sizeKB(v sqlToken, percent bool) (int64, *tds.SQLError) {
	if v.kind != tokNumber {
		return 0, syntaxError(v)
	}
	digits := strings.TrimRightFunc(v.val, func(r rune) bool { return r < '0' || r > '9' })
	unit := strings.ToLower(v.val[len(digits):])
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || digits == "" {
		return 0, syntaxError(v)
	}
	if unit == "" {
		if t := p.peek(); t.kind == tokIdent && !t.quoted {
			switch strings.ToLower(t.val) {
			case "kb", "mb", "gb", "tb":
				unit = strings.ToLower(p.next().val)
			}
		} else if percent && p.acceptPunct("%") {
			return 0, nil
		}
	}
	switch unit {
	case "kb":
		return n, nil
	case "", "mb":
		return n << 10, nil
	case "gb":
		return n << 20, nil
	case "tb":
		return n << 30, nil
	}
	return 0, syntaxError(v)
}
