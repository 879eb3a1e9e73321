package remote

import (
	"strings"
	"sync"

	"github.com/masterzen/winrm"
	"github.com/masterzen/winrm/soap"
)

// sendWatch wraps a client's transport and reports a failed Send (the command's
// stdin). masterzen ignores the error of the stdin copy, and the command then waits
// for input that never comes until the deadline: an HTTP 500 on every Send held an
// apply for its whole timeout without naming the 500 (issue 8). run stops the
// command as soon as a Send failed, with that error.
type sendWatch struct {
	winrm.Transporter
	failed chan error // holds the first failed Send of the current run
}

func newSendWatch() *sendWatch { return &sendWatch{failed: make(chan error, 1)} }

// Post sends one request and records a failed Send.
func (s *sendWatch) Post(c *winrm.Client, m *soap.SoapMessage) (string, error) {
	out, err := s.Transporter.Post(c, m)
	if err != nil && strings.Contains(m.String(), "/windows/shell/Send<") {
		select {
		case s.failed <- err:
		default:
		}
	}
	return out, err
}

// reset forgets a failure of an earlier run.
func (s *sendWatch) reset() {
	select {
	case <-s.failed:
	default:
	}
}

// sendWatches maps each client to its watch.
type sendWatches struct{ m sync.Map }

func (w *sendWatches) of(c *winrm.Client) *sendWatch {
	if v, ok := w.m.Load(c); ok {
		return v.(*sendWatch)
	}
	return nil
}

// failedSends is the channel of c's failed Sends (nil, which never delivers, when c
// has no watch), after forgetting an earlier run's.
func (w *sendWatches) failedSends(c *winrm.Client) <-chan error {
	sw := w.of(c)
	if sw == nil {
		return nil
	}
	sw.reset()
	return sw.failed
}
