package contract

import (
	"fmt"
	"strconv"
	"strings"
)

// The restart's guard (docs/design/restart.md, scripts/restart_guard.ps1) runs from a
// file, never from script text on its command line. restart_instance.ps1 composes
// its arguments on one line, `$guardArguments = ...`; GuardCommandLine reads that
// line, so the script stays the one home of the command line and Go can hold its
// length (cmd.exe accepts at most GuardCommandLineLimit characters, CreateProcess
// 32,767).

// GuardProgram is the program the guard runs in (Win32_Process.Create's command line
// begins with it; the scheduled task's action executes it).
const GuardProgram = "powershell.exe"

// GuardCommandLineLimit is cmd.exe's limit on a command line (8,191 characters,
// "Command prompt (Cmd.exe) command-line string limitation"); the guard's stays
// below it so that it can be run by hand too.
const GuardCommandLineLimit = 8191

// GuardDirectory is where restart_instance writes the guard's file when
// %ProgramData% is C:\ProgramData.
const GuardDirectory = `C:\ProgramData\mssqlifi`

// GuardArguments evaluates restart_instance.ps1's `$guardArguments = ...` line with
// the guard's file, the restart's token and the runner's process id: a sum of
// single-quoted literals and those three values. It fails when the line is missing
// or holds anything else.
func GuardArguments(guardFile, token string, pid int) (string, error) {
	const prefix = "$guardArguments = "
	var line string
	for _, l := range strings.Split(mustRead("restart_instance.ps1"), "\n") {
		if strings.HasPrefix(l, prefix) {
			line = strings.TrimSpace(strings.TrimPrefix(l, prefix))
		}
	}
	if line == "" {
		return "", fmt.Errorf("restart_instance.ps1 has no line %q composing the guard's arguments", prefix)
	}
	return evalGuardArguments(line, guardFile, token, pid)
}

// evalGuardArguments evaluates the right-hand side of the `$guardArguments = ...`
// line (GuardArguments).
func evalGuardArguments(line, guardFile, token string, pid int) (string, error) {
	values := map[string]string{"$guardFile": guardFile, "$token": token, "[string][int]$PID": strconv.Itoa(pid)}
	var sb strings.Builder
	for rest := line; rest != ""; {
		var term string
		if strings.HasPrefix(rest, "'") {
			end := 1
			for {
				i := strings.IndexByte(rest[end:], '\'')
				if i < 0 {
					return "", fmt.Errorf("restart_instance.ps1: unterminated string in %q", line)
				}
				end += i + 1
				if !strings.HasPrefix(rest[end:], "'") {
					break
				}
				end++ // '' is a quote inside the literal
			}
			term, rest = rest[:end], rest[end:]
			sb.WriteString(strings.ReplaceAll(term[1:len(term)-1], "''", "'"))
		} else {
			term, rest, _ = strings.Cut(rest, " ")
			v, ok := values[term]
			if !ok {
				return "", fmt.Errorf("restart_instance.ps1: the guard's arguments hold %q, which is neither a literal nor the guard's file, token or process id", term)
			}
			sb.WriteString(v)
		}
		rest = strings.TrimSpace(rest)
		if rest == "" {
			break
		}
		if !strings.HasPrefix(rest, "+ ") {
			return "", fmt.Errorf("restart_instance.ps1: the guard's arguments are not a sum of terms at %q", rest)
		}
		rest = strings.TrimSpace(rest[2:])
	}
	return sb.String(), nil
}

// GuardCommandLine is the command line Win32_Process.Create starts the guard with.
func GuardCommandLine(guardFile, token string, pid int) (string, error) {
	args, err := GuardArguments(guardFile, token, pid)
	if err != nil {
		return "", err
	}
	return GuardProgram + " " + args, nil
}
