package tsql

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
)

// Running a parsed SELECT against the instance's views: names are bound first (the
// errors SQL Server finds when it compiles: 207, 208, 209, 4104, 300), then rows are
// joined, filtered, ordered, cut by TOP and projected.

// source is one table of the FROM clause.
type source struct {
	ref   tableRef
	table Table
	outer bool // the right side of a LEFT JOIN: its columns may be NULL
}

// matches reports whether a qualifier names this source: its alias, else the
// object's own name.
func (s source) matches(qual string) bool {
	if s.ref.alias != "" {
		return strings.EqualFold(s.ref.alias, qual)
	}
	return strings.EqualFold(s.ref.parts[len(s.ref.parts)-1], qual)
}

// rowCtx is one joined row: the values of each source's row (nil for the missing
// side of a LEFT JOIN).
type rowCtx [][]any

// bound is an expression whose names are resolved: its result column (type, and the
// name it gets with no alias) and how to compute it.
type bound struct {
	col     tds.Column
	varchar bool // a '...' literal (varchar), for conversion messages
	eval    func(r rowCtx) (any, *tds.SQLError)
}

type binder struct {
	srv     *Server
	login   LoginConfig
	vars    batchVars // the batch's local variables
	sources []source
	// items are the select list's bound expressions, for ORDER BY aliases.
	items   []bound
	aliases []string
}

// runSelect answers one statement, in SQL Server's logical order: FROM and its
// joins, the select list bound, ON, WHERE, ORDER BY, TOP, then the select list's
// values.
func (srv *Server) runSelect(login LoginConfig, vars batchVars, s selectStmt) (tds.ResultSet, *tds.SQLError) {
	b := &binder{srv: srv, login: login, vars: vars}
	if err := b.bindFrom(s); err != nil {
		return tds.ResultSet{}, err
	}
	cols, err := b.bindSelectList(s)
	if err != nil {
		return tds.ResultSet{}, err
	}
	joins, err := b.bindJoins(s)
	if err != nil {
		return tds.ResultSet{}, err
	}
	where, err := b.bindPreds(s.where)
	if err != nil {
		return tds.ResultSet{}, err
	}
	order, err := b.bindOrderBy(s)
	if err != nil {
		return tds.ResultSet{}, err
	}
	rows, err := b.joinRows(s, joins)
	if err != nil {
		return tds.ResultSet{}, err
	}
	if rows, err = filterRows(rows, where); err != nil {
		return tds.ResultSet{}, err
	}
	if rows, err = sortRows(rows, order); err != nil {
		return tds.ResultSet{}, err
	}
	if s.top >= 0 && int64(len(rows)) > s.top {
		rows = rows[:s.top]
	}
	rs := tds.ResultSet{Columns: cols}
	for _, r := range rows {
		out := make([]any, len(b.items))
		for n, it := range b.items {
			v, err := it.eval(r)
			if err != nil {
				return tds.ResultSet{}, err
			}
			out[n] = v
		}
		rs.Rows = append(rs.Rows, out)
	}
	return rs, nil
}

// bindFrom finds the FROM clause's and the joins' tables, as the login may see
// them: error 208 for an unknown one, 300 for a server-state view without VIEW
// SERVER STATE, no catalog rows without VIEW ANY DEFINITION, only its own
// session's rows; two sources with one exposed name are ambiguous (error 1013).
func (b *binder) bindFrom(s selectStmt) *tds.SQLError {
	srv, login := b.srv, b.login
	refs := []tableRef{}
	if s.from != nil {
		refs = append(refs, *s.from)
	}
	for _, j := range s.joins {
		refs = append(refs, j.table)
	}
	for n, ref := range refs {
		t, ok := srv.lookupTable(ref.parts)
		if !ok {
			return sqlErr(208, 16, 1, ref.line, "Invalid object name '%s'.", ref.display())
		}
		if t.ServerState && !login.CanViewServerState() {
			return viewServerStateDenied()
		}
		if t.Catalog && !login.CanViewDefinitions() {
			t.Rows = nil
		}
		if t.OtherSessions > 0 && !login.CanViewServerState() {
			t.Rows = t.Rows[:len(t.Rows)-t.OtherSessions]
		}
		b.sources = append(b.sources, source{ref: ref, table: t, outer: n > 0 && s.joins[n-1].left})
	}
	// Two sources with one exposed name are ambiguous (error 1013).
	for x := range b.sources {
		for y := x + 1; y < len(b.sources); y++ {
			nx, ny := exposedName(b.sources[x].ref), exposedName(b.sources[y].ref)
			if strings.EqualFold(nx, ny) {
				return sqlErr(1013, 16, 1, b.sources[y].ref.line,
					"The objects \"%s\" and \"%s\" in the FROM clause have the same exposed names. Use correlation names to distinguish them.", nx, ny)
			}
		}
	}
	return nil
}

// bindSelectList binds the select list (a * expands to its sources' columns) into
// b.items and answers the result's columns.
func (b *binder) bindSelectList(s selectStmt) ([]tds.Column, *tds.SQLError) {
	var cols []tds.Column
	var items []bound
	for _, it := range s.items {
		if it.star {
			bs, err := b.star(it, s.line)
			if err != nil {
				return nil, err
			}
			for _, x := range bs {
				cols = append(cols, x.col)
				items = append(items, x)
				b.aliases = append(b.aliases, x.col.Name)
			}
			continue
		}
		x, err := b.bind(it.expr)
		if err != nil {
			return nil, err
		}
		if it.hasAlias {
			x.col.Name = it.alias
		}
		cols = append(cols, x.col)
		items = append(items, x)
		b.aliases = append(b.aliases, x.col.Name)
	}
	b.items = items
	return cols, nil
}

// bindJoins binds each join's ON, which sees the sources joined so far, its own
// included.
func (b *binder) bindJoins(s selectStmt) ([][]bound, *tds.SQLError) {
	var joins [][]bound
	for n, j := range s.joins {
		jb := &binder{srv: b.srv, login: b.login, sources: b.sources[:n+2]}
		on, err := jb.bindPreds(j.on)
		if err != nil {
			return nil, err
		}
		joins = append(joins, on)
	}
	return joins, nil
}

// orderKey is one ORDER BY expression, bound.
type orderKey struct {
	b    bound
	desc bool
}

// bindOrderBy binds ORDER BY, whose names may be the select list's aliases.
func (b *binder) bindOrderBy(s selectStmt) ([]orderKey, *tds.SQLError) {
	var order []orderKey
	for _, o := range s.orderBy {
		ob, err := b.bindOrder(o.expr)
		if err != nil {
			return nil, err
		}
		order = append(order, orderKey{ob, o.desc})
	}
	return order, nil
}

// joinRows is the FROM clause's rows: the first source's, each join adding the
// rows of its source that meet its ON (a LEFT JOIN keeps an unmatched row, with
// nothing of that source).
func (b *binder) joinRows(s selectStmt, joins [][]bound) ([]rowCtx, *tds.SQLError) {
	rows := []rowCtx{{}}
	if len(b.sources) > 0 {
		rows = nil
		for _, r := range b.sources[0].table.Rows {
			rows = append(rows, rowCtx{r})
		}
	}
	for n, j := range s.joins {
		right := b.sources[n+1].table.Rows
		var next []rowCtx
		for _, l := range rows {
			matched := false
			for _, r := range right {
				cand := append(slices.Clone(l), r)
				ok, err := evalPreds(joins[n], cand)
				if err != nil {
					return nil, err
				}
				if ok {
					next = append(next, cand)
					matched = true
				}
			}
			if !matched && j.left {
				next = append(next, append(slices.Clone(l), nil))
			}
		}
		rows = next
	}
	return rows, nil
}

// filterRows keeps the rows that meet WHERE.
func filterRows(rows []rowCtx, where []bound) ([]rowCtx, *tds.SQLError) {
	if len(where) == 0 {
		return rows, nil
	}
	var kept []rowCtx
	for _, r := range rows {
		ok, err := evalPreds(where, r)
		if err != nil {
			return nil, err
		}
		if ok {
			kept = append(kept, r)
		}
	}
	return kept, nil
}

// sortRows sorts the rows by ORDER BY, stably.
func sortRows(rows []rowCtx, order []orderKey) ([]rowCtx, *tds.SQLError) {
	if len(order) == 0 {
		return rows, nil
	}
	keys := make([][]any, len(rows))
	for n, r := range rows {
		for _, o := range order {
			v, err := o.b.eval(r)
			if err != nil {
				return nil, err
			}
			keys[n] = append(keys[n], v)
		}
	}
	idx := make([]int, len(rows))
	for n := range idx {
		idx[n] = n
	}
	var sortErr *tds.SQLError
	slices.SortStableFunc(idx, func(x, y int) int {
		for k, o := range order {
			c, err := compareValues(keys[x][k], keys[y][k], o.b, o.b)
			if err != nil && sortErr == nil {
				sortErr = err
			}
			if o.desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
	if sortErr != nil {
		return nil, sortErr
	}
	sorted := make([]rowCtx, len(rows))
	for n, k := range idx {
		sorted[n] = rows[k]
	}
	return sorted, nil
}

func exposedName(t tableRef) string {
	if t.alias != "" {
		return t.alias
	}
	return t.parts[len(t.parts)-1]
}

// star expands * or x.*.
func (b *binder) star(it selectItem, line int32) ([]bound, *tds.SQLError) {
	if len(b.sources) == 0 {
		return nil, sqlErr(263, 16, 1, line, "Must specify table to select from.")
	}
	var out []bound
	found := false
	for n, s := range b.sources {
		if it.starQual != "" && !s.matches(it.starQual) {
			continue
		}
		found = true
		for c := range s.table.Cols {
			out = append(out, b.column(n, c))
		}
	}
	if !found {
		return nil, sqlErr(107, 15, 1, line, "The column prefix '%s' does not match with a table name or alias name used in the query.", it.starQual)
	}
	return out, nil
}

// column is source n's column c. A column of the outer side of a LEFT JOIN becomes
// nullable.
func (b *binder) column(n, c int) bound {
	col := b.sources[n].table.Cols[c]
	if b.sources[n].outer {
		col.Nullable = true
	}
	return bound{col: col, eval: func(r rowCtx) (any, *tds.SQLError) {
		if r[n] == nil {
			return nil, nil
		}
		return r[n][c], nil
	}}
}

func (b *binder) bindColumn(c colRef) (bound, *tds.SQLError) {
	if strings.HasPrefix(c.name, "@") {
		return bound{}, sqlErr(137, 15, 2, c.line, "Must declare the scalar variable \"%s\".", c.name)
	}
	var hits []bound
	qualFound := false
	for n, s := range b.sources {
		if c.qual != "" && !s.matches(c.qual) {
			continue
		}
		qualFound = true
		for k, col := range s.table.Cols {
			if strings.EqualFold(col.Name, c.name) {
				hits = append(hits, b.column(n, k))
			}
		}
	}
	switch {
	case c.qual != "" && !qualFound:
		return bound{}, sqlErr(4104, 16, 1, c.line, "The multi-part identifier \"%s\" could not be bound.", c.text)
	case len(hits) == 0:
		return bound{}, sqlErr(207, 16, 1, c.line, "Invalid column name '%s'.", c.name)
	case len(hits) > 1:
		return bound{}, sqlErr(209, 16, 1, c.line, "Ambiguous column name '%s'.", c.name)
	}
	return hits[0], nil
}

// bindOrder binds an ORDER BY expression: a select-list alias or position first,
// then a column of the sources.
func (b *binder) bindOrder(e sqlExpr) (bound, *tds.SQLError) {
	switch x := e.(type) {
	case colRef:
		if x.qual == "" {
			for n, a := range b.aliases {
				if a != "" && strings.EqualFold(a, x.name) {
					return b.items[n], nil
				}
			}
		}
	case literal:
		if n, ok := x.val.(int64); ok {
			if n < 1 || n > int64(len(b.items)) {
				return bound{}, sqlErr(108, 16, 1, x.line, "The ORDER BY position number %d is out of range of the number of items in the select list.", n)
			}
			return b.items[n-1], nil
		}
	}
	return b.bind(e)
}

func (b *binder) bind(e sqlExpr) (bound, *tds.SQLError) {
	switch x := e.(type) {
	case colRef:
		c, err := b.bindColumn(x)
		// The result column is named as the query spells it.
		c.col.Name = x.name
		return c, err
	case literal:
		v := x.val
		switch n := v.(type) {
		case nil:
			return bound{col: tds.Column{Type: tds.TypeInt, Nullable: true}, eval: constant(nil)}, nil
		case int64:
			if n >= -1<<31 && n < 1<<31 {
				return bound{col: tds.Column{Type: tds.TypeInt}, eval: constant(int32(n))}, nil
			}
			return bound{col: tds.Column{Type: tds.TypeBigInt}, eval: constant(n)}, nil
		case string:
			size := len([]rune(n))
			if size == 0 {
				size = 1
			}
			return bound{col: tds.Column{Type: tds.TypeNVarChar, Size: size}, varchar: !x.nstr, eval: constant(n)}, nil
		}
	case variable:
		switch x.name {
		case "@@SERVERNAME":
			return bound{col: tds.Column{Type: tds.TypeNVarChar, Size: 128, Nullable: true}, eval: constant(b.srv.inst.ServerName())}, nil
		case "@@SERVICENAME":
			return bound{col: tds.Column{Type: tds.TypeNVarChar, Size: 128, Nullable: true}, eval: constant(b.srv.inst.ServiceName())}, nil
		}
		return bound{}, unsupported(x.line, x.name)
	case localVar:
		return b.bindLocalVar(x)
	case funcCall:
		return b.bindCall(x)
	case castExpr:
		inner, err := b.bind(x.expr)
		if err != nil {
			return bound{}, err
		}
		return castTo(inner, x.to, x.line)
	}
	return bound{}, unsupported(e.exprLine(), fmt.Sprintf("the expression %T", e))
}

func constant(v any) func(rowCtx) (any, *tds.SQLError) {
	return func(rowCtx) (any, *tds.SQLError) { return v, nil }
}

// notModelledFunctions are built-in functions SQL Server has that the simulator does
// not evaluate; any other unknown name is error 195, as on SQL Server.
var notModelledFunctions = map[string]bool{
	"COUNT": true, "SUM": true, "MIN": true, "MAX": true, "AVG": true, "COUNT_BIG": true,
	"ISNULL": true, "COALESCE": true, "NULLIF": true, "IIF": true, "UPPER": true, "LOWER": true,
	"LEN": true, "LTRIM": true, "RTRIM": true, "TRIM": true, "SUBSTRING": true, "REPLACE": true,
	"CONCAT": true, "CHARINDEX": true, "GETDATE": true, "GETUTCDATE": true, "SYSDATETIME": true,
	"SYSDATETIMEOFFSET": true, "SYSUTCDATETIME": true, "DATEADD": true, "DATEDIFF": true,
	"DATEPART": true, "FORMAT": true, "DB_ID": true, "OBJECT_ID": true, "OBJECT_NAME": true,
	"SUSER_NAME": true, "SUSER_SNAME": true, "USER_NAME": true, "HAS_PERMS_BY_NAME": true,
	"IS_SRVROLEMEMBER": true, "STRING_AGG": true, "TRY_CAST": true, "TRY_CONVERT": true,
	"DATABASEPROPERTYEX": true, "FILEPROPERTY": true, "SESSIONPROPERTY": true,
}

func (b *binder) bindCall(f funcCall) (bound, *tds.SQLError) {
	switch f.name {
	case "SERVERPROPERTY":
		if len(f.args) != 1 {
			return bound{}, sqlErr(174, 15, 1, f.line, "The serverproperty function requires 1 argument(s).")
		}
		arg, err := b.bind(f.args[0])
		if err != nil {
			return bound{}, err
		}
		inst := b.srv.inst
		return bound{col: tds.Column{Type: tds.TypeVariant, Nullable: true}, eval: func(r rowCtx) (any, *tds.SQLError) {
			v, err := arg.eval(r)
			if err != nil {
				return nil, err
			}
			name, ok := v.(string)
			if !ok {
				return nil, nil
			}
			return inst.ServerProperty(name), nil
		}}, nil
	case "DB_NAME":
		col := tds.Column{Type: tds.TypeNVarChar, Size: 128, Nullable: true}
		switch len(f.args) {
		case 0:
			return bound{col: col, eval: constant("master")}, nil
		case 1:
			arg, err := b.bind(f.args[0])
			if err != nil {
				return bound{}, err
			}
			toInt, err := castTo(arg, sqlType{name: "int"}, f.line)
			if err != nil {
				return bound{}, err
			}
			srv := b.srv
			return bound{col: col, eval: func(r rowCtx) (any, *tds.SQLError) {
				v, err := toInt.eval(r)
				if err != nil || v == nil {
					return nil, err
				}
				id, ok := v.(int32)
				if !ok { // castTo to int yields int32; anything else is the simulator's bug
					return nil, unsupported(f.line, fmt.Sprintf("DB_NAME of a %T", v))
				}
				return srv.databaseName(int64(id)), nil
			}}, nil
		}
		return bound{}, sqlErr(174, 15, 1, f.line, "The db_name function requires 0 to 1 argument(s).")
	}
	if notModelledFunctions[f.name] {
		return bound{}, unsupported(f.line, "the function "+f.name)
	}
	return bound{}, sqlErr(195, 15, 10, f.line, "'%s' is not a recognized built-in function name.", strings.ToLower(f.name))
}

func (b *binder) bindPreds(ps []predicate) ([]bound, *tds.SQLError) {
	var out []bound
	for _, p := range ps {
		l, err := b.bind(p.left)
		if err != nil {
			return nil, err
		}
		if p.op == "is null" || p.op == "is not null" {
			out = append(out, bound{col: tds.Column{Type: tds.TypeBit}, eval: func(r rowCtx) (any, *tds.SQLError) {
				v, err := l.eval(r)
				if err != nil {
					return nil, err
				}
				return (v == nil) == (p.op == "is null"), nil
			}})
			continue
		}
		rt, err := b.bind(p.right)
		if err != nil {
			return nil, err
		}
		if err := clash(l, rt, p.line); err != nil {
			return nil, err
		}
		out = append(out, bound{col: tds.Column{Type: tds.TypeBit}, eval: func(r rowCtx) (any, *tds.SQLError) {
			a, err := l.eval(r)
			if err != nil {
				return nil, err
			}
			c, err := rt.eval(r)
			if err != nil {
				return nil, err
			}
			if a == nil || c == nil {
				return false, nil // a comparison with NULL is unknown: the row is left out
			}
			cmp, err := compareValues(a, c, l, rt)
			if err != nil {
				return nil, err
			}
			switch p.op {
			case "=":
				return cmp == 0, nil
			case "<>":
				return cmp != 0, nil
			case "<":
				return cmp < 0, nil
			case ">":
				return cmp > 0, nil
			case "<=":
				return cmp <= 0, nil
			}
			return cmp >= 0, nil
		}})
	}
	return out, nil
}

func evalPreds(ps []bound, r rowCtx) (bool, *tds.SQLError) {
	for _, p := range ps {
		v, err := p.eval(r)
		if err != nil {
			return false, err
		}
		if v != true {
			return false, nil
		}
	}
	return true, nil
}

// typeName is a column's type as SQL Server names it in messages.
func typeName(b bound) string {
	if b.col.Type == tds.TypeNVarChar && b.varchar {
		return "varchar"
	}
	return b.col.Type.Name()
}

func isNumeric(t tds.ColumnType) bool {
	return t == tds.TypeInt || t == tds.TypeBigInt || t == tds.TypeTinyInt || t == tds.TypeSmallInt || t == tds.TypeBit
}

// clash is error 206 for types SQL Server cannot compare at all.
func clash(a, b bound, line int32) *tds.SQLError {
	ta, tb := a.col.Type, b.col.Type
	bad := func(x, y tds.ColumnType) bool {
		return (x == tds.TypeDateTimeOffset || x == tds.TypeUniqueIdentifier) && isNumeric(y)
	}
	if bad(ta, tb) || bad(tb, ta) {
		return sqlErr(206, 16, 2, line, "Operand type clash: %s is incompatible with %s", typeName(b), typeName(a))
	}
	return nil
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case int:
		return int64(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// stringToInt converts as SQL Server does, or fails with error 245.
func stringToInt(s string, from bound, target string, line int32) (int64, *tds.SQLError) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, sqlErr(245, 16, 1, line, "Conversion failed when converting the %s value '%s' to data type %s.", typeNameOfString(from), s, target)
	}
	return n, nil
}

func typeNameOfString(b bound) string {
	if b.varchar {
		return "varchar"
	}
	return "nvarchar"
}

// sqlTimeLayouts are the string forms a datetimeoffset comparison accepts.
var sqlTimeLayouts = []string{
	"2006-01-02 15:04:05.9999999 -07:00", "2006-01-02T15:04:05.9999999-07:00",
	"2006-01-02 15:04:05.9999999", "2006-01-02T15:04:05.9999999", "2006-01-02 15:04", "2006-01-02",
}

// compareValues orders two non-NULL values: numbers as numbers, strings without
// case and trailing blanks (SQL_Latin1_General_CP1_CI_AS), times by instant; a
// string meeting a number or a time converts to it, or fails as SQL Server fails.
func compareValues(a, b any, ba, bb bound) (int, *tds.SQLError) {
	if a == nil || b == nil {
		switch {
		case a == nil && b == nil:
			return 0, nil
		case a == nil:
			return -1, nil // NULLs sort first
		}
		return 1, nil
	}
	if x, ok := asInt(a); ok {
		if y, ok := asInt(b); ok {
			return cmpInt(x, y), nil
		}
		if s, ok := b.(string); ok {
			y, err := stringToInt(s, bb, typeName(ba), 1)
			if err != nil {
				return 0, err
			}
			return cmpInt(x, y), nil
		}
	}
	if s, ok := a.(string); ok {
		if y, ok := asInt(b); ok {
			x, err := stringToInt(s, ba, typeName(bb), 1)
			if err != nil {
				return 0, err
			}
			return cmpInt(x, y), nil
		}
		if t, ok := b.(string); ok {
			return strings.Compare(strings.ToLower(strings.TrimRight(s, " ")), strings.ToLower(strings.TrimRight(t, " "))), nil
		}
		if t, ok := b.(time.Time); ok {
			x, err := parseSQLTime(s)
			if err != nil {
				return 0, err
			}
			return x.Compare(t), nil
		}
	}
	if t, ok := a.(time.Time); ok {
		switch y := b.(type) {
		case time.Time:
			return t.Compare(y), nil
		case string:
			x, err := parseSQLTime(y)
			if err != nil {
				return 0, err
			}
			return t.Compare(x), nil
		}
	}
	return 0, sqlErr(206, 16, 2, 1, "Operand type clash: %s is incompatible with %s", typeName(bb), typeName(ba))
}

func parseSQLTime(s string) (time.Time, *tds.SQLError) {
	for _, l := range sqlTimeLayouts {
		if t, err := time.Parse(l, strings.TrimSpace(s)); err == nil {
			return t, nil
		}
	}
	return time.Time{}, sqlErr(241, 16, 1, 1, "Conversion failed when converting date and/or time from character string.")
}

func cmpInt(x, y int64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// castTo is CAST(x AS to) / CONVERT(to, x) for the types the model has.
func castTo(x bound, to sqlType, line int32) (bound, *tds.SQLError) {
	out := bound{col: tds.Column{Nullable: x.col.Nullable}}
	switch to.name {
	case "nvarchar", "varchar", "nchar", "char", "sysname":
		size := to.size
		switch {
		case to.name == "sysname":
			size = 128
		case size == 0:
			size = 30 // CAST without a length
		case size > 4000 || size == -1:
			size = -1
		}
		out.col.Type, out.col.Size = tds.TypeNVarChar, size
		out.varchar = to.name == "varchar" || to.name == "char"
		out.eval = func(r rowCtx) (any, *tds.SQLError) {
			v, err := x.eval(r)
			if err != nil || v == nil {
				return nil, err
			}
			var s string
			switch y := v.(type) {
			case string:
				s = y
			case bool:
				s = "0"
				if y {
					s = "1"
				}
			case time.Time:
				s = y.Format("2006-01-02 15:04:05.0000000 -07:00")
			default:
				n, _ := asInt(y)
				s = strconv.FormatInt(n, 10)
			}
			if rs := []rune(s); size > 0 && len(rs) > size {
				s = string(rs[:size])
			}
			return s, nil
		}
		return out, nil
	case "int", "bigint", "tinyint", "bit":
		if x.col.Type == tds.TypeDateTimeOffset || x.col.Type == tds.TypeUniqueIdentifier {
			return bound{}, sqlErr(529, 16, 2, line, "Explicit conversion from data type %s to %s is not allowed.", typeName(x), to.name)
		}
		lo, hi := int64(-1<<31), int64(1<<31-1)
		out.col.Type = tds.TypeInt
		switch to.name {
		case "bigint":
			out.col.Type, lo, hi = tds.TypeBigInt, -1<<63, 1<<63-1
		case "tinyint":
			out.col.Type, lo, hi = tds.TypeTinyInt, 0, 255
		case "bit":
			out.col.Type = tds.TypeBit
		}
		out.eval = func(r rowCtx) (any, *tds.SQLError) {
			v, err := x.eval(r)
			if err != nil || v == nil {
				return nil, err
			}
			n, ok := asInt(v)
			if !ok {
				s, _ := v.(string)
				if to.name == "bit" && (strings.EqualFold(s, "true") || strings.EqualFold(s, "false")) {
					return strings.EqualFold(s, "true"), nil
				}
				src := x
				if x.col.Type == tds.TypeVariant {
					src = bound{col: tds.Column{Type: tds.TypeNVarChar}}
				}
				if n, err = stringToInt(s, src, to.name, line); err != nil {
					return nil, err
				}
			}
			if to.name == "bit" {
				return n != 0, nil
			}
			if n < lo || n > hi {
				return nil, sqlErr(8115, 16, 2, line, "Arithmetic overflow error converting expression to data type %s.", to.name)
			}
			if out.col.Type == tds.TypeBigInt {
				return n, nil
			}
			return int32(n), nil
		}
		return out, nil
	case "sql_variant":
		out.col.Type, out.col.Nullable = tds.TypeVariant, true
		out.eval = func(r rowCtx) (any, *tds.SQLError) {
			v, err := x.eval(r)
			if err != nil || v == nil {
				return nil, err
			}
			switch y := v.(type) {
			case string, int32:
				return y, nil
			}
			if n, ok := asInt(v); ok && n >= -1<<31 && n < 1<<31 {
				return int32(n), nil
			}
			return nil, unsupported(line, fmt.Sprintf("a sql_variant holding %T", v))
		}
		return out, nil
	case "smallint", "decimal", "numeric", "float", "real", "money", "smallmoney", "date", "time",
		"datetime", "datetime2", "smalldatetime", "datetimeoffset", "uniqueidentifier", "binary",
		"varbinary", "xml", "text", "ntext", "image", "hierarchyid", "geometry", "geography", "timestamp", "rowversion":
		return bound{}, unsupported(line, "CAST or CONVERT to "+to.name)
	}
	return bound{}, sqlErr(243, 16, 2, line, "Type %s is not a defined system type.", to.name)
}
