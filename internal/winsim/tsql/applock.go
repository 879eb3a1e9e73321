package tsql

import (
	"context"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
)

// Application locks (FIDELITY.md, "Application locks"), modelled from Microsoft's
// documentation of sp_getapplock and sp_releaseapplock:
//
//	declare := DECLARE @name int [= integer]
//	exec    := EXEC[UTE] [@name =] [[database '.'] [schema] '.'] procedure [@param = literal {',' @param = literal}]
//	expr    := ... | @name                      (a declared variable, in SELECT)
//
// sp_getapplock returns 0 (granted at once), 1 (granted after waiting), -1 (timed
// out), -2 (cancelled), -3 (deadlock victim, never here) or -999 (a parameter or
// other call error). A lock owned by the session ('Session') lasts until
// sp_releaseapplock or the session's end (the client logs out, the connection
// drops, the Engine stops); one owned by the transaction (the default) needs a
// transaction, which the simulator does not model (-999). Resources are per
// database and compare as binary (case-sensitive), at most 255 characters (longer
// names are truncated). Only @LockOwner 'Session' locks are held.

type declareStmt struct {
	name string // lower case, with its @
	init *int64
	line int32
}

type execStmt struct {
	ret  string   // the @variable given the return status, lower case; "" none
	proc []string // [database.][schema.]procedure, as written
	args []execArg
	line int32
}

type execArg struct {
	name string // lower case, with its @
	val  literal
	line int32
}

func (s declareStmt) stmtLine() int32 { return s.line }
func (s execStmt) stmtLine() int32    { return s.line }

// localVar is @name in an expression.
type localVar struct {
	name string // lower case
	text string
	line int32
}

func (e localVar) exprLine() int32 { return e.line }

func isLocalVar(t sqlToken) bool {
	return t.kind == tokIdent && !t.quoted && len(t.val) > 1 && t.val[0] == '@' && t.val[1] != '@'
}

func (p *sqlParser) parseDeclare() (sqlStmt, *tds.SQLError) {
	s := declareStmt{line: p.next().line}
	v := p.next()
	if !isLocalVar(v) {
		p.pos--
		return nil, p.fail()
	}
	s.name = strings.ToLower(v.val)
	p.acceptKeyword("as")
	ty, err := p.parseType()
	if err != nil {
		return nil, err
	}
	if ty.name != "int" {
		return nil, unsupported(v.line, "DECLARE of a "+ty.name+" variable (only int)")
	}
	if p.acceptPunct("=") {
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		l, ok := e.(literal)
		n, isInt := l.val.(int64)
		if !ok || !isInt {
			return nil, unsupported(e.exprLine(), "a DECLARE initialised with anything but an integer")
		}
		s.init = &n
	}
	if p.peek().isPunct(",") {
		return nil, unsupported(s.line, "DECLARE of several variables")
	}
	return s, p.endOfStatement()
}

func (p *sqlParser) parseExec() (sqlStmt, *tds.SQLError) {
	s := execStmt{line: p.next().line}
	if t := p.peek(); isLocalVar(t) && p.toks[p.pos+1].isPunct("=") {
		s.ret = strings.ToLower(t.val)
		p.pos += 2
	}
	// [database.][schema.]name; "master..sp_x" skips the schema.
	for {
		if p.peek().isPunct(".") {
			s.proc = append(s.proc, "")
			p.pos++
			continue
		}
		n, err := p.name()
		if err != nil {
			return nil, err
		}
		s.proc = append(s.proc, n.val)
		if !p.acceptPunct(".") {
			break
		}
	}
	if len(s.proc) > 3 {
		return nil, unsupported(s.line, "a procedure on a linked server")
	}
	for isLocalVar(p.peek()) {
		t := p.next()
		if err := p.expectPunct("="); err != nil {
			return nil, err
		}
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		l, ok := e.(literal)
		if !ok {
			return nil, unsupported(e.exprLine(), "a procedure argument that is not a literal")
		}
		s.args = append(s.args, execArg{name: strings.ToLower(t.val), val: l, line: t.line})
		if !p.acceptPunct(",") {
			break
		}
	}
	return s, p.endOfStatement()
}

// batchVars are a batch's local variables (int only), by lower-case name.
type batchVars map[string]*sqlVar

// sqlVar is one variable's value; nil is NULL.
type sqlVar struct{ val *int64 }

// appLock is one granted application lock.
type appLock struct {
	session int
	mode    string // lower case
	count   int    // sp_getapplock calls of the session not yet released
}

// appLockCompatible: may a lock in mode want be granted beside one held in mode held
// (the lock compatibility matrix of SQL Server's lock modes).
func appLockCompatible(held, want string) bool {
	ok := map[string][]string{
		"shared":          {"shared", "update", "intentshared"},
		"update":          {"shared", "intentshared"},
		"intentshared":    {"shared", "update", "intentshared", "intentexclusive"},
		"intentexclusive": {"intentshared", "intentexclusive"},
		"exclusive":       {},
	}
	for _, m := range ok[held] {
		if m == want {
			return true
		}
	}
	return false
}

// appLockPoll is how often a waiting sp_getapplock looks again.
const appLockPoll = 20 * time.Millisecond

// execProc runs EXEC of a procedure the simulator models.
func (srv *Server) execProc(ctx context.Context, l tds.Login, vars batchVars, s execStmt) *tds.SQLError {
	name := strings.ToLower(s.proc[len(s.proc)-1])
	db := "master"
	if l.Database != "" {
		db = l.Database
	}
	if len(s.proc) == 3 && s.proc[0] != "" {
		db = s.proc[0]
	}
	if len(s.proc) >= 2 {
		if schema := strings.ToLower(s.proc[len(s.proc)-2]); schema != "" && schema != "sys" && schema != "dbo" {
			return sqlErr(2812, 16, 62, s.line, "Could not find stored procedure '%s'.", strings.Join(s.proc, "."))
		}
	}
	args := map[string]literal{}
	for _, a := range s.args {
		args[a.name] = a.val
	}
	var rc int64
	switch name {
	case "sp_getapplock":
		rc = srv.getAppLock(ctx, l.Session, db, args)
	case "sp_releaseapplock":
		var err *tds.SQLError
		if rc, err = srv.releaseAppLock(l.Session, db, args, s.line); err != nil {
			return err
		}
	default:
		return sqlErr(2812, 16, 62, s.line, "Could not find stored procedure '%s'.", strings.Join(s.proc, "."))
	}
	if s.ret != "" {
		v, ok := vars[s.ret]
		if !ok {
			return sqlErr(137, 15, 2, s.line, "Must declare the scalar variable \"%s\".", s.ret)
		}
		v.val = &rc
	}
	return nil
}

// appLockArgs reads the common parameters: the resource key, the owner.
func appLockArgs(db string, args map[string]literal) (key string, session bool, ok bool) {
	res, isStr := args["@resource"].val.(string)
	if !isStr {
		return "", false, false
	}
	if r := []rune(res); len(r) > 255 {
		res = string(r[:255])
	}
	owner := "transaction"
	if o, isStr := args["@lockowner"].val.(string); isStr {
		owner = strings.ToLower(o)
	} else if _, given := args["@lockowner"]; given {
		return "", false, false
	}
	if owner != "session" && owner != "transaction" {
		return "", false, false
	}
	if p, given := args["@dbprincipal"]; given {
		if s, isStr := p.val.(string); !isStr || !strings.EqualFold(s, "public") {
			// Only public, which every login's user belongs to, is modelled.
			return "", false, false
		}
	}
	return strings.ToLower(db) + "\x00" + res, owner == "session", true
}

// getAppLock is sp_getapplock for the session; its return status.
func (srv *Server) getAppLock(ctx context.Context, session int, db string, args map[string]literal) int64 {
	key, sessionOwned, ok := appLockArgs(db, args)
	mode, isStr := args["@lockmode"].val.(string)
	mode = strings.ToLower(mode)
	if !ok || !isStr || !slicesContains([]string{"shared", "update", "intentshared", "intentexclusive", "exclusive"}, mode) {
		return -999
	}
	if !sessionOwned {
		return -999 // a transaction-owned lock outside a transaction
	}
	timeout := int64(-1) // @@LOCK_TIMEOUT's default: wait for ever
	if t, given := args["@locktimeout"]; given {
		n, isInt := t.val.(int64)
		if !isInt {
			return -999
		}
		timeout = n
	}
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(time.Duration(timeout) * time.Millisecond)
	}
	waited := false
	for {
		srv.inst.Lock()
		if srv.applocks == nil {
			srv.applocks = map[string][]*appLock{}
		}
		granted := true
		var mine *appLock
		for _, h := range srv.applocks[key] {
			switch {
			case h.session == session && h.mode == mode:
				mine = h
			case h.session != session && !appLockCompatible(h.mode, mode):
				granted = false
			}
		}
		if granted {
			if mine != nil {
				mine.count++
			} else {
				srv.applocks[key] = append(srv.applocks[key], &appLock{session: session, mode: mode, count: 1})
			}
			srv.inst.Unlock()
			if waited {
				return 1
			}
			return 0
		}
		if timeout >= 0 && !time.Now().Before(deadline) {
			srv.inst.Unlock()
			return -1
		}
		if !waited {
			srv.applockWaits++
		}
		srv.inst.Unlock()
		waited = true
		select {
		case <-ctx.Done():
			return -2
		case <-time.After(appLockPoll):
		}
	}
}

// releaseAppLock is sp_releaseapplock for the session: 0, or error 1223 when the
// session does not hold the lock.
func (srv *Server) releaseAppLock(session int, db string, args map[string]literal, line int32) (int64, *tds.SQLError) {
	key, sessionOwned, ok := appLockArgs(db, args)
	if !ok {
		return -999, nil
	}
	srv.inst.Lock()
	defer srv.inst.Unlock()
	holders := srv.applocks[key]
	for n, h := range holders {
		if h.session == session && sessionOwned {
			if h.count--; h.count == 0 {
				srv.applocks[key] = append(holders[:n:n], holders[n+1:]...)
				if len(srv.applocks[key]) == 0 {
					delete(srv.applocks, key)
				}
			}
			return 0, nil
		}
	}
	res, _ := args["@resource"].val.(string)
	return -999, sqlErr(1223, 16, 1, line,
		"Cannot release the application lock (Database Principal: 'public', Resource: '%s') because it is not currently held.", res)
}

// SessionEnded releases the locks the session owned (tds.SessionEnder).
func (srv *Server) SessionEnded(session int) {
	srv.inst.Lock()
	defer srv.inst.Unlock()
	srv.endSessionLocked(session)
}

func (srv *Server) endSessionLocked(session int) {
	for key, holders := range srv.applocks {
		kept := holders[:0]
		for _, h := range holders {
			if h.session != session {
				kept = append(kept, h)
			}
		}
		if len(kept) == 0 {
			delete(srv.applocks, key)
		} else {
			srv.applocks[key] = kept
		}
	}
}

// EndSessionsLocked ends every session, and so releases every lock: the Engine's
// process ended. The instance's lock must be held.
func (srv *Server) EndSessionsLocked() { srv.applocks = nil }

// AppLockWaitsLocked is how many sp_getapplock calls have had to wait since the
// host started. The instance's lock must be held.
func (srv *Server) AppLockWaitsLocked() int { return srv.applockWaits }

// AppLockHoldersLocked lists the sessions holding an application lock on resource
// in database db. The instance's lock must be held.
func (srv *Server) AppLockHoldersLocked(db, resource string) []int {
	var out []int
	for _, l := range srv.applocks[strings.ToLower(db)+"\x00"+resource] {
		out = append(out, l.session)
	}
	return out
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// bindLocalVar binds @name to the batch's variable.
func (b *binder) bindLocalVar(x localVar) (bound, *tds.SQLError) {
	v, ok := b.vars[x.name]
	if !ok {
		return bound{}, sqlErr(137, 15, 2, x.line, "Must declare the scalar variable \"%s\".", x.text)
	}
	return bound{col: tds.Column{Type: tds.TypeInt, Nullable: true}, eval: func(rowCtx) (any, *tds.SQLError) {
		if v.val == nil {
			return nil, nil
		}
		n := *v.val
		if n < -1<<31 || n >= 1<<31 {
			return nil, sqlErr(8115, 16, 2, x.line, "Arithmetic overflow error converting expression to data type int.")
		}
		return int32(n), nil
	}}, nil
}
