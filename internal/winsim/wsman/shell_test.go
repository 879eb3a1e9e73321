package wsman

import (
	"context"
	"testing"
	"time"
)

// A command whose output nobody receives waits once its pipe is full, as on
// Windows, and a terminate (Signal or Delete) ends the wait with a write error: a
// client that stops reading stops the command, not the host's memory.
func TestOutputWaitsWhenThePipeIsFullAndTerminateEndsIt(t *testing.T) {
	_, cancel := context.WithCancel(context.Background())
	c := newCommand(cancel, false)
	w := streamWriter{c: c}
	chunk := make([]byte, 64<<10)
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := w.Write(chunk); err != nil {
				done <- err
				return
			}
		}
	}()
	pending := func() (int, chan struct{}) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.stdout) + len(c.stderr), c.changed
	}
	deadline := time.After(10 * time.Second)
	for n, changed := pending(); n < pipeBuffer; n, changed = pending() {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the writer wrote only %d bytes in 10 s", n)
		}
	}
	// Receiving makes room: the writer fills it again, never beyond the pipe.
	c.mu.Lock()
	out := c.takeLocked(256 << 10)
	c.mu.Unlock()
	if len(out.stdout) != 256<<10 {
		t.Fatalf("took %d bytes", len(out.stdout))
	}
	if n, _ := pending(); n > pipeBuffer+len(chunk) {
		t.Fatalf("%d bytes pending, more than the pipe (%d) and one write", n, pipeBuffer)
	}
	c.terminate()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the write after terminate succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the writer still waits 10 s after the command was terminated")
	}
	if n, _ := pending(); n > pipeBuffer+len(chunk) {
		t.Fatalf("%d bytes pending after terminate", n)
	}
}
