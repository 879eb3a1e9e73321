package hostsuite

import (
	"context"
	"fmt"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
)

// recordSQL passes one SQL result (or error) to the recorder, if any.
func (s *Suite) recordSQL(query string, columns, types []string, rows [][]any, err error) {
	s.opt.Recorder.SQL(s.p.stage, query, columns, types, rows, err) // a nil Recorder records nothing
}

// query runs one SELECT as cfg's login and returns its rows (the recorder gets the
// columns and their types too).
func (s *Suite) query(ctx context.Context, cfg *sqlcheck.Config, q string) ([][]any, error) {
	db, conn, err := sqlcheck.Open(ctx, *cfg, s.sqlTarget(), 0)
	if err != nil {
		s.recordSQL(q, nil, nil, nil, err)
		return nil, err
	}
	defer db.Close()
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		s.recordSQL(q, nil, nil, nil, err)
		return nil, fmt.Errorf("%s on %s: %w", q, s.cfg.Host, err)
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	cols, types := make([]string, len(cts)), make([]string, len(cts))
	for i, ct := range cts {
		cols[i], types[i] = ct.Name(), ct.DatabaseTypeName()
	}
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, vals)
	}
	err = rows.Err()
	s.recordSQL(q, cols, types, out, err)
	return out, err
}

// queryColumn returns the first column of each row, as text.
func (s *Suite) queryColumn(ctx context.Context, cfg *sqlcheck.Config, q string) ([]string, error) {
	rows, err := s.query(ctx, cfg, q)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprint(r[0]))
	}
	return out, nil
}

// execTimed runs one statement as cfg's login, each read of the connection bounded
// by limit, and returns how long the statement took (the login not counted).
func (s *Suite) execTimed(ctx context.Context, cfg *sqlcheck.Config, stmt string, limit time.Duration) (time.Duration, error) {
	db, conn, err := sqlcheck.Open(ctx, *cfg, s.sqlTarget(), limit)
	if err != nil {
		s.recordSQL(stmt, nil, nil, nil, err)
		return 0, err
	}
	defer db.Close()
	defer conn.Close()
	start := time.Now()
	_, err = conn.ExecContext(ctx, stmt)
	took := time.Since(start)
	s.recordSQL(stmt, nil, nil, nil, err)
	if err != nil {
		return took, fmt.Errorf("%s on %s: %w", stmt, s.cfg.Host, err)
	}
	return took, nil
}
