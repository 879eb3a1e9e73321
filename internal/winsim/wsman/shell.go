package wsman

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// shells holds the WinRS shells of one endpoint, by ShellId.
type shells struct {
	mu     sync.Mutex
	byID   map[string]*shell
	closed bool
}

// shell is one WinRS shell (Create) and the commands started in it.
type shell struct {
	id       string
	owner    string // the user that created it; other users cannot see it
	commands map[string]*command
}

// command is one command (Command) running or finished in a shell.
type command struct {
	id     string
	cancel context.CancelFunc
	stdin  *stdinPipe

	mu         sync.Mutex
	pending    []chunk // the writes no Receive took yet, in the order written
	buffered   int     // their bytes
	finished   bool
	terminated bool // Signal terminate or Delete: writes fail from now on
	exitCode   int
	changed    chan struct{} // closed and replaced whenever output or state changes
}

// pipeBuffer is how much output a command may have written that no Receive took
// yet. Beyond it a write waits, as a Windows process waits when the pipe to
// winrshost is full and winrshost's own buffer is too (a client that stops
// receiving stops the command's output, not the host's memory).
const pipeBuffer = 1 << 20

// chunk is one write of a command to stdout or stderr: Windows answers each as its
// own rsp:Stream element (FIDELITY.md, the pypsrp recordings).
type chunk struct {
	stderr bool
	data   []byte
}

// chunkOverhead is what one rsp:Stream element costs beside its data, in bytes of
// output (its base64 takes 4/3 of them): a Receive's budget counts it, so that many
// small writes cannot make an envelope larger than the client's MaxEnvelopeSize.
const chunkOverhead = 96

func newShells() *shells { return &shells{byID: map[string]*shell{}} }

// create registers a new shell owned by user.
func (ss *shells) create(owner string) (*shell, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return nil, errors.New("the WS-Management endpoint is shutting down")
	}
	sh := &shell{id: newGUID(), owner: owner, commands: map[string]*command{}}
	ss.byID[sh.id] = sh
	return sh, nil
}

// lookup finds the shell id owned by owner. A shell of another user is not
// found, as on Windows.
func (ss *shells) lookup(id, owner string) (*shell, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	sh, ok := ss.byID[id]
	if !ok || !sameUser(sh.owner, owner) {
		return nil, false
	}
	return sh, true
}

// command finds a command of a shell.
func (ss *shells) command(sh *shell, id string) (*command, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	c, ok := sh.commands[id]
	return c, ok
}

// addCommand registers c in sh unless the shell was deleted meanwhile.
func (ss *shells) addCommand(sh *shell, c *command) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if _, ok := ss.byID[sh.id]; !ok {
		return false
	}
	sh.commands[c.id] = c
	return true
}

// removeCommand terminates a command and forgets it (Signal terminate).
func (ss *shells) removeCommand(sh *shell, id string) bool {
	ss.mu.Lock()
	c, ok := sh.commands[id]
	delete(sh.commands, id)
	ss.mu.Unlock()
	if ok {
		c.terminate()
	}
	return ok
}

// delete removes a shell and terminates its commands (Delete).
func (ss *shells) delete(id, owner string) bool {
	ss.mu.Lock()
	sh, ok := ss.byID[id]
	if !ok || !sameUser(sh.owner, owner) {
		ss.mu.Unlock()
		return false
	}
	delete(ss.byID, id)
	cmds := make([]*command, 0, len(sh.commands))
	for _, c := range sh.commands {
		cmds = append(cmds, c)
	}
	ss.mu.Unlock()
	for _, c := range cmds {
		c.terminate()
	}
	return true
}

// closeAll terminates every command of every shell and refuses new shells.
func (ss *shells) closeAll() { ss.dropAll(true) }

// dropAll terminates every command of every shell and forgets the shells, as a
// stop of the WinRM service ends them (Restart-Service WinRM); close also refuses
// new shells from now on. It returns how many shells there were.
func (ss *shells) dropAll(close bool) int {
	ss.mu.Lock()
	if close {
		ss.closed = true
	}
	n := len(ss.byID)
	var cmds []*command
	for _, sh := range ss.byID {
		for _, c := range sh.commands {
			cmds = append(cmds, c)
		}
	}
	ss.byID = map[string]*shell{}
	ss.mu.Unlock()
	for _, c := range cmds {
		c.terminate()
	}
	return n
}

func newCommand(cancel context.CancelFunc, consoleStdin bool) *command {
	return &command{id: newGUID(), cancel: cancel, stdin: newStdinPipe(consoleStdin), changed: make(chan struct{})}
}

// terminate cancels the executor's context and ends its stdin.
func (c *command) terminate() {
	c.cancel()
	c.stdin.abort()
	c.mu.Lock()
	c.terminated = true
	c.notifyLocked()
	c.mu.Unlock()
}

// notifyLocked wakes every Receive waiting on c. c.mu must be held.
func (c *command) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// finish records the exit code once the executor returned.
func (c *command) finish(code int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finished = true
	c.exitCode = code
	c.notifyLocked()
}

// streamWriter is the stdout or stderr an executor writes to.
type streamWriter struct {
	c      *command
	stderr bool
}

func (w streamWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	for w.c.buffered >= pipeBuffer && !w.c.terminated && !w.c.finished {
		changed := w.c.changed
		w.c.mu.Unlock()
		<-changed
		w.c.mu.Lock()
	}
	if w.c.terminated {
		return 0, errors.New("write to a WinRS stream of a terminated command")
	}
	if w.c.finished {
		return 0, errors.New("write to a WinRS stream after the command returned")
	}
	if len(p) == 0 {
		return 0, nil
	}
	w.c.pending = append(w.c.pending, chunk{stderr: w.stderr, data: bytes.Clone(p)})
	w.c.buffered += len(p)
	w.c.notifyLocked()
	return len(p), nil
}

// receive waits until output is available or the command finished, at most
// timeout, and takes up to limit bytes of output. ok is false on timeout or when
// ctx ends first.
func (c *command) receive(ctx context.Context, timeout time.Duration, limit int) (out output, ok bool) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		c.mu.Lock()
		if len(c.pending) > 0 || c.finished {
			out = c.takeLocked(limit)
			c.mu.Unlock()
			return out, true
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			return output{}, false
		case <-ctx.Done():
			return output{}, false
		}
	}
}

// takeLocked removes the pending writes that fit in limit bytes (each counted with
// chunkOverhead), in the order written; a first write larger than limit is split.
// The result is marked done only when the command finished and nothing is left.
func (c *command) takeLocked(limit int) output {
	var out output
	n := 0
	for len(c.pending) > 0 {
		ch := c.pending[0]
		room := limit - chunkOverhead
		if len(out.chunks) > 0 && len(ch.data) > room {
			break
		}
		room = max(room, 1)
		if len(ch.data) > room {
			out.chunks = append(out.chunks, chunk{stderr: ch.stderr, data: ch.data[:room]})
			c.pending[0].data = ch.data[room:]
			n += room
			break
		}
		out.chunks = append(out.chunks, ch)
		c.pending = c.pending[1:]
		n += len(ch.data)
		limit -= len(ch.data) + chunkOverhead
	}
	c.buffered -= n
	if c.finished && len(c.pending) == 0 {
		out.done = true
		out.exitCode = c.exitCode
	}
	if n > 0 {
		c.notifyLocked() // a writer waiting for room in the pipe
	}
	return out
}

// stdinPipe buffers what the client sends on stdin until the command reads it,
// so Send never waits for the command (Windows buffers it too).
//
// In console mode (WINRS_CONSOLEMODE_STDIN=TRUE, the default) the command's stdin
// is a console, as on Windows: End="true" is accepted, but a reader never sees
// end-of-input, so a command that reads to the end waits until it is terminated.
// In pipe mode (WINRS_CONSOLEMODE_STDIN=FALSE) End="true" closes the pipe and the
// reader gets io.EOF.
type stdinPipe struct {
	mu      sync.Mutex
	cond    *sync.Cond
	buf     bytes.Buffer
	console bool // console mode: End never reaches the reader
	ended   bool // the client sent End="true"
	aborted bool // the command was terminated
}

var errStdinTerminated = errors.New("read stdin: the command was terminated by the client (Signal or shell Delete)")

func newStdinPipe(console bool) *stdinPipe {
	p := &stdinPipe{console: console}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// write appends data; end marks the last chunk.
func (p *stdinPipe) write(data []byte, end bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended && len(data) > 0 {
		return fmt.Errorf("stdin already ended with End=\"true\"; %d more bytes refused", len(data))
	}
	p.buf.Write(data)
	if end {
		p.ended = true
	}
	p.cond.Broadcast()
	return nil
}

func (p *stdinPipe) abort() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.aborted = true
	p.cond.Broadcast()
}

// Read blocks until data arrives. In pipe mode it returns io.EOF after the End
// chunk was read; in console mode it blocks until the command is terminated.
func (p *stdinPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.buf.Len() == 0 && !p.aborted && !(p.ended && !p.console) {
		p.cond.Wait()
	}
	if p.buf.Len() > 0 {
		return p.buf.Read(b)
	}
	if p.aborted && (p.console || !p.ended) {
		return 0, errStdinTerminated
	}
	return 0, io.EOF
}
