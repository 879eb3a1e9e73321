package remote

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// Retries of idempotent operations (read_instance, set_right through the LSA API,
// restart_status): a transient failure (Transient) is sent again after a short
// backoff, at most maxAttempts times in all, so that a failure that persists ends
// the operation within seconds. A timeout is not sent again (it has already waited),
// and restart_instance is joined through restart_status instead (internal/converge),
// which follows a restart on transient failures until the operation's deadline.
const maxAttempts = 3

// retryBackoff is the pause before attempt n+1 (n from 1).
var retryBackoff = func(n int) time.Duration { return time.Duration(n) * 500 * time.Millisecond }

// Transient reports whether err is the network's failure rather than the host's
// answer, one that asking again may cure: a refused or reset connection, a
// connection closed without an answer, a name that does not resolve, a network
// timeout, or an HTTP answer that is not 2xx and not 401 or 400 (HTTP.sys answers 503
// or 404 while the WinRM service restarts, WinRM an empty 500). This is the one
// place that says so: the retries here and the engine's follow-up of a restart
// (converge.TransientFailure) both ask it. Never transient: the host's own answers
// (401, a script's error, a rejected request), a cancelled or expired context, a
// TLS or configuration failure, and anything wrapping ErrUnverifiedAnswer (a
// clear-text answer on a sealing connection, transport.go).
func Transient(err error) bool {
	var e *Error
	if !errors.As(err, &e) || errors.Is(err, ErrUnverifiedAnswer) {
		return false // a possible man-in-the-middle is never retried as transient
	}
	switch e.Kind {
	case KindProtocol:
		s := e.HTTPStatus
		return s == 404 || s == 408 || s == 429 || s >= 500
	case KindUnreachable:
		return true
	case KindTimeout:
		// A deadline or cancellation of the caller's context is not the network's.
		return !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
	}
	return false
}

// Refused reports whether e is a connection that was refused, reset or closed
// without an answer, or a host the network does not route to: the host, its WinRM
// service or the link is away for a while, so that asking again within the
// caller's deadline may cure it (converge rides every read of an apply through it).
// Not a name that does not resolve (a typo waits for nothing), an HTTP answer, a
// timeout, or a possible man-in-the-middle.
func (e *Error) Refused() bool {
	return e.Kind == KindUnreachable && e.Setting != SettingHost && !errors.Is(e, ErrUnverifiedAnswer)
}

// Transient is Transient(e), for callers that see the error through an interface
// (converge.TransientFailure).
func (e *Error) Transient() bool { return Transient(e) }

// runIdempotent is run with retries of transient failures; the last error carries
// the number of attempts, which the logs show too.
func (h *winrmHost) runIdempotent(ctx context.Context, op contract.Operation, params, result any) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = h.run(ctx, op, params, result)
		if err == nil || !resendable(err) || attempt == maxAttempts || ctx.Err() != nil {
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
		contract.LoggerOrDiscard(h.cfg.Log).Info(ctx, "retrying a WinRM operation after a transient failure", map[string]any{
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

// resendable reports whether runIdempotent sends again after err: a transient
// failure that has not already waited (a timeout).
func resendable(err error) bool {
	var e *Error
	return Transient(err) && errors.As(err, &e) && e.Kind != KindTimeout
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
