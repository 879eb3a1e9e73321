package contract

import "context"

// Logger receives what an operator needs to follow a run: remote, sqlcheck and
// converge write through it, and internal/provider implements it with tflog, so no
// layer below the provider imports a logging library (depguard enforces that). The
// context carries whatever the caller's logging needs (for example masking of
// secrets). Passwords are never among the fields.
type Logger interface {
	Debug(ctx context.Context, msg string, fields map[string]any)
	Info(ctx context.Context, msg string, fields map[string]any)
}

// LoggerOrDiscard returns l, or a Logger that drops every line when l is nil.
func LoggerOrDiscard(l Logger) Logger {
	if l == nil {
		return discard{}
	}
	return l
}

type discard struct{}

func (discard) Debug(context.Context, string, map[string]any) {}
func (discard) Info(context.Context, string, map[string]any)  {}
