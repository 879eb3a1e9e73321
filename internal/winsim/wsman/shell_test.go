package wsman

import (
	"context"
	"strings"
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
		return c.buffered, c.changed
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
	took := 0
	for _, ch := range out.chunks {
		took += len(ch.data)
	}
	if took < 128<<10 || took > 256<<10 {
		t.Fatalf("took %d bytes in %d writes, want the writes that fit in 256 KiB", took, len(out.chunks))
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

// A Receive while the command runs answers the output written so far with
// CommandState Running (MS-WSMV 3.1.4.14: Receive collects output "from a running
// command"; 2.2.4.27 ReceiveResponse), each write of the command available at once
// (Console.Out's writer flushes each write: .NET Framework's Console creates it with
// AutoFlush true); the rest comes with Done and the exit code. The provider's gated
// restart reads its progress lines this way, before the result.
func TestReceiveAnswersARunningCommandsOutputSoFar(t *testing.T) {
	_, cancel := context.WithCancel(context.Background())
	c := newCommand(cancel, false)
	w := streamWriter{c: c}
	if _, err := w.Write([]byte("#mssqlifi-progress prepared r1\r\n")); err != nil {
		t.Fatal(err)
	}
	out, ok := c.receive(context.Background(), time.Second, 1<<20)
	if !ok || out.done || stdoutOf(out) != "#mssqlifi-progress prepared r1\r\n" {
		t.Fatalf("Receive while the command runs: %+v, %v; want its first line, not done", out, ok)
	}
	resp := string(receiveResponse("uuid:1", "C1", out))
	if !strings.Contains(resp, `State="`+stateRunning+`"`) || strings.Contains(resp, "ExitCode") || strings.Contains(resp, `End="true"`) {
		t.Fatalf("the answer for a running command: %s", resp)
	}
	// Nothing more written: the next Receive waits (the operation timeout), then more comes.
	if out, ok := c.receive(context.Background(), 50*time.Millisecond, 1<<20); ok {
		t.Fatalf("Receive with nothing new answered %+v", out)
	}
	if _, err := w.Write([]byte(`{"finished":true}`)); err != nil {
		t.Fatal(err)
	}
	c.finish(0)
	out, ok = c.receive(context.Background(), time.Second, 1<<20)
	if !ok || !out.done || stdoutOf(out) != `{"finished":true}` {
		t.Fatalf("Receive after the command ended: %+v, %v", out, ok)
	}
	if resp := string(receiveResponse("uuid:2", "C1", out)); !strings.Contains(resp, `State="`+stateDone+`"`) || !strings.Contains(resp, "<rsp:ExitCode>0</rsp:ExitCode>") {
		t.Fatalf("the last answer: %s", resp)
	}
}

// Each write is its own rsp:Stream element, in the order written, as Windows
// answers (the pypsrp recordings); once the command is done, empty End="true"
// elements for stdout and stderr follow the last write.
func TestReceiveAnswersOneElementPerWrite(t *testing.T) {
	_, cancel := context.WithCancel(context.Background())
	c := newCommand(cancel, false)
	out, errw := streamWriter{c: c}, streamWriter{c: c, stderr: true}
	for _, w := range []struct {
		w    streamWriter
		text string
	}{{out, "hi"}, {out, "\n"}, {errw, "err \r\n"}, {out, "again"}} {
		if _, err := w.w.Write([]byte(w.text)); err != nil {
			t.Fatal(err)
		}
	}
	c.finish(1)
	c.mu.Lock()
	got := c.takeLocked(1 << 20)
	c.mu.Unlock()
	body := string(receiveResponse("uuid:1", "C1", got))
	want := `<rsp:ReceiveResponse><rsp:Stream Name="stdout" CommandId="C1">aGk=</rsp:Stream><rsp:Stream Name="stdout" CommandId="C1">Cg==</rsp:Stream>` +
		`<rsp:Stream Name="stderr" CommandId="C1">ZXJyIA0K</rsp:Stream><rsp:Stream Name="stdout" CommandId="C1">YWdhaW4=</rsp:Stream>` +
		`<rsp:Stream Name="stdout" CommandId="C1" End="true"></rsp:Stream><rsp:Stream Name="stderr" CommandId="C1" End="true"></rsp:Stream>` +
		`<rsp:CommandState CommandId="C1" State="` + stateDone + `"><rsp:ExitCode>1</rsp:ExitCode></rsp:CommandState></rsp:ReceiveResponse>`
	if !strings.Contains(body, want) {
		t.Fatalf("ReceiveResponse:\n%s\nwant the body\n%s", body, want)
	}
}

// stdoutOf is the standard output an answer carries, its writes joined.
func stdoutOf(out output) string {
	var b strings.Builder
	for _, ch := range out.chunks {
		if !ch.stderr {
			b.Write(ch.data)
		}
	}
	return b.String()
}
