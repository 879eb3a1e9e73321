package wsman

import (
	"context"
	"io"
)

// Command is one command a client started in a shell (WS-Management Command).
type Command struct {
	User      string   // the authenticated user, as the client sent it (e.g. "Administrator" or "CONTOSO\admin")
	ShellID   string   // the shell the command runs in
	Command   string   // rsp:Command, e.g. "powershell.exe"
	Arguments []string // rsp:Arguments, in order
	UserAgent string   // the HTTP User-Agent header of the Command request
	// Stdin yields what the client sends with Send on the "stdin" stream. In pipe
	// mode (ConsoleModeStdin false) it returns io.EOF after the chunk marked
	// End="true"; in console mode it never does, as on Windows: a read past the data
	// blocks until the command is terminated. A command that does not read it is fine.
	Stdin io.Reader
	// ConsoleModeStdin is the Command's WINRS_CONSOLEMODE_STDIN option (default true).
	ConsoleModeStdin bool
}

// Executor runs commands for the WS-Management endpoint: the "host" behind it.
// Execute writes output as it is produced and returns the process exit code when
// the command finishes. ctx is cancelled when the client signals terminate or
// deletes the shell.
type Executor interface {
	Execute(ctx context.Context, cmd Command, stdout, stderr io.Writer) (exitCode int)
}

// ExecutorFunc adapts a function to Executor.
type ExecutorFunc func(ctx context.Context, cmd Command, stdout, stderr io.Writer) int

// Execute calls f.
func (f ExecutorFunc) Execute(ctx context.Context, cmd Command, stdout, stderr io.Writer) int {
	return f(ctx, cmd, stdout, stderr)
}
