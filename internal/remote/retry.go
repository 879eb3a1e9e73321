package remote

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// Retries of idempotent operations (read_instance, set_right through the LSA API,
// restart_status): a transient failure (a connection reset or closed, an HTTP 5xx
// answer) is sent again after a short backoff, at most maxAttempts times in all, so
// that a failure that persists ends the operation within seconds. Nothing else is
// retried: a 401 or a script's error will not heal, a timeout has already waited,
// and restart_instance is joined through restart_status instead (internal/converge).
const maxAttempts = 3

// retryBackoff is the pause before attempt n+1 (n from 1).
var retryBackoff = func(n int) time.Duration { return time.Duration(n) * 500 * time.Millisecond }

// Transient reports whether err is a failure that sending the same idempotent
// request again may cure.
func Transient(err error) bool {
	var e *Error
	if !errors.As(err, &e) || errors.Is(err, ErrUnverifiedAnswer) {
		return false // a possible man-in-the-middle is never retried as transient
	}
	switch {
	case e.Kind == KindProtocol && e.HTTPStatus >= 500:
		return true
	case e.Kind == KindUnreachable && e.HTTPStatus == 0:
		m := strings.ToLower(e.Message)
		return strings.Contains(m, "was closed") || strings.Contains(m, "reset") || strings.Contains(m, "eof")
	}
	return false
}

// runIdempotent is run with retries of transient failures; the last error carries
// the number of attempts, which the logs show too.
func (h *winrmHost) runIdempotent(ctx context.Context, op contract.Operation, params, result any) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = h.run(ctx, op, params, result)
		if err == nil || !Transient(err) || attempt == maxAttempts || ctx.Err() != nil {
			var e *Error
			if err != nil && errors.As(err, &e) {
				e.Attempts = attempt
				if attempt > 1 {
					e.Message += " (after " + itoa(attempt) + " attempts)"
				}
			}
			return err
		}
		wait := retryBackoff(attempt)
		tflog.Info(ctx, "retrying a WinRM operation after a transient failure", map[string]any{
			"operation": string(op), "host": h.cfg.Host, "attempt": attempt, "max_attempts": maxAttempts,
			"backoff_ms": wait.Milliseconds(), "error": err.Error(),
		})
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}

func itoa(n int) string {
	return strconv.Itoa(n)
}

// RestartStatus reads the instance's last restart (restart_status), waiting on the
// host at most p.WaitSeconds for it to finish.
func (h *winrmHost) RestartStatus(ctx context.Context, p contract.RestartStatusParams) (*contract.RestartInstanceResult, error) {
	var r contract.RestartInstanceResult
	if err := h.runIdempotent(ctx, contract.OpRestartStatus, p, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ScriptFailed reports whether the host ran the operation's script and it failed
// (internal/converge.ScriptFailure): the request arrived, unlike after a transport error.
func (e *Error) ScriptFailed() bool { return e.Kind == KindScript }

// ScriptCode is the script's error code (contract.ScriptError.Error) of a
// KindScript error, "" otherwise.
func (e *Error) ScriptCode() string {
	if e.Kind != KindScript {
		return ""
	}
	return e.Code
}
