package remote

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
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

// Transient reports whether err is a failure that asking again may cure: the
// network's (a refused or reset connection, a connection closed without an answer,
// a name that does not resolve, a network timeout), or an answer of the host that
// says so. This is the one place that classifies failures by their cause: the
// retries here and the engine's follow-up of a restart and its read-back
// (converge.TransientFailure) both ask it.
//
// A WS-Management fault is classified by its WSManFault Code (fault.go), the HTTP
// status only where the answer carries no fault: an operation timeout (2150858793)
// and a shell or command that is gone (2150858843; a new shell may cure it) are
// transient; every other fault of the host's WS-Management service or of one of its
// plugins (Windows' "The system cannot find the file specified" from the Shell cmd
// plugin, an "Access is denied") is the host's own answer and asking again gets the
// same one. Without a fault, an HTTP answer that is not 2xx and not 401 or 400 is
// transient (HTTP.sys answers 503 or 404 while the WinRM service restarts, WinRM an
// empty 500). Never transient: the host's own answers (401, a fault, a script's
// error, a rejected request), a cancelled or expired context, a TLS or configuration
// failure, a KDC that does not answer (the host was never asked: Refused), and
// anything wrapping ErrUnverifiedAnswer (a clear-text answer on a sealing
// connection, transport.go).
func Transient(err error) bool {
	var e *Error
	if !errors.As(err, &e) || errors.Is(err, ErrUnverifiedAnswer) {
		return false // a possible man-in-the-middle is never retried as transient
	}
	switch e.Kind {
	case KindProtocol:
		if e.Fault != "" {
			return faultRetried(e.Fault)
		}
		s := e.HTTPStatus
		return s == 404 || s == 408 || s == 429 || s >= 500
	case KindUnreachable:
		return !e.kdcFailure()
	case KindTimeout:
		// A deadline or cancellation of the caller's context is not the network's.
		return !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
	}
	return false
}

// faultRetried reports whether a fault with WSManFault Code code may be cured by
// asking again (Transient).
func faultRetried(code string) bool {
	return code == faultOperationTimeout || code == faultShellGone
}

// Refused reports whether e is a connection that was refused, reset or closed
// without an answer, or a host the network does not route to: the host, its WinRM
// service or the link is away for a while, so that asking again within the
// caller's deadline may cure it (converge rides every read of an apply through it).
// Not a KDC that does not answer (kdcFailure), a name that does not resolve (a typo
// waits for nothing), an HTTP answer, a timeout, or a possible man-in-the-middle.
func (e *Error) Refused() bool {
	return e.Kind == KindUnreachable && e.Setting != SettingHost && !e.kdcFailure() && !errors.Is(e, ErrUnverifiedAnswer)
}

// kdcFailure reports whether e is a KDC that did not answer (krb.ErrKDCUnreachable):
// the host was never asked, and riding through it would only wait for the
// caller's deadline on every read (a KDC refused on its port, a firewall on 88).
// It fails at once, naming the KDC; "negotiate" with the fallback allowed has
// already used NTLM instead (kerberos.go), so it is seen only where Kerberos is
// required or the fallback is refused.
func (e *Error) kdcFailure() bool {
	return errors.Is(e, krb.ErrKDCUnreachable)
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
