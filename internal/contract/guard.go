package contract

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The restart's guard (design/restart.md, scripts/restart_guard.ps1) runs from a
// file, never from script text on its command line: its powershell.exe runs a short
// -EncodedCommand loader ($RestartGuardLoader) that checks the file's owner and hash
// and runs its text as a script block. restart_instance.ps1 composes the arguments
// on one line, `$guardArguments = ...`; GuardCommandLine reads that line and the
// loader's here-string, so the scripts stay the one home of the command line and Go
// can hold its length (cmd.exe accepts at most GuardCommandLineLimit characters,
// CreateProcess 32,767) and the simulator can read what the script sends.

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

// GuardStartSeconds is how long restart_instance waits for the start record of the
// guard each launcher started ($RestartGuardStartSeconds in restart_guard.ps1).
const GuardStartSeconds = 30

// GuardLoaderTemplate is restart_guard.ps1's $RestartGuardLoader here-string, with
// its placeholders @FILE@, @HASH@, @TOKEN@ and @RUNNER@ (lines end in LF).
func GuardLoaderTemplate() (string, error) {
	const open, closing = "$RestartGuardLoader = @'\n", "\n'@\n"
	s := mustRead("restart_guard.ps1")
	i := strings.Index(s, open)
	if i < 0 {
		return "", fmt.Errorf("restart_guard.ps1 has no here-string %q", strings.TrimSpace(open))
	}
	body := s[i+len(open):]
	j := strings.Index(body, closing)
	if j < 0 {
		return "", fmt.Errorf("restart_guard.ps1: the loader's here-string does not end")
	}
	return body[:j], nil
}

// GuardLoader is New-RestartGuardLoader: the loader's text for the guard's file, its
// SHA-256 (lowercase hex), the restart's token and the runner's process id.
func GuardLoader(guardFile, hash, token string, pid int) (string, error) {
	t, err := GuardLoaderTemplate()
	if err != nil {
		return "", err
	}
	return strings.NewReplacer("@FILE@", strings.ReplaceAll(guardFile, "'", "''"), "@HASH@", hash, "@TOKEN@", token, "@RUNNER@", strconv.Itoa(pid)).Replace(t), nil
}

// GuardLoaderValues are the values a loader's text carries.
type GuardLoaderValues struct {
	File, Hash, Token string
	RunnerID          int
}

// ParseGuardLoader reads the values back from a loader's text: ok false when the
// text is not the template with values (the loader restart_guard.ps1 writes).
func ParseGuardLoader(text string) (GuardLoaderValues, bool) {
	t, err := GuardLoaderTemplate()
	if err != nil {
		return GuardLoaderValues{}, false
	}
	pattern := regexp.QuoteMeta(t)
	for ph, group := range map[string]string{"@FILE@": `((?:[^']|'')*)`, "@HASH@": `([0-9a-f]{64})`, "@TOKEN@": `([0-9a-f]{32})`, "@RUNNER@": `([0-9]{1,10})`} {
		pattern = strings.Replace(pattern, regexp.QuoteMeta(ph), group, 1)
	}
	re, err := regexp.Compile(`\A` + pattern + `\z`)
	if err != nil {
		return GuardLoaderValues{}, false
	}
	m := re.FindStringSubmatch(strings.ReplaceAll(text, "\r\n", "\n"))
	if m == nil {
		return GuardLoaderValues{}, false
	}
	// The groups in the template's order of placeholders.
	order := placeholderOrder(t)
	var v GuardLoaderValues
	for k, ph := range order {
		val := m[k+1]
		switch ph {
		case "@FILE@":
			v.File = strings.ReplaceAll(val, "''", "'")
		case "@HASH@":
			v.Hash = val
		case "@TOKEN@":
			v.Token = val
		case "@RUNNER@":
			n, err := strconv.Atoi(val)
			if err != nil {
				return GuardLoaderValues{}, false
			}
			v.RunnerID = n
		}
	}
	return v, true
}

// placeholderOrder lists the loader's placeholders in the order they appear.
func placeholderOrder(t string) []string {
	type at struct {
		ph string
		i  int
	}
	var found []at
	for _, ph := range []string{"@FILE@", "@HASH@", "@TOKEN@", "@RUNNER@"} {
		if i := strings.Index(t, ph); i >= 0 {
			found = append(found, at{ph, i})
		}
	}
	for a := 1; a < len(found); a++ {
		for b := a; b > 0 && found[b].i < found[b-1].i; b-- {
			found[b], found[b-1] = found[b-1], found[b]
		}
	}
	out := make([]string, len(found))
	for k, f := range found {
		out[k] = f.ph
	}
	return out
}

// GuardArguments evaluates restart_instance.ps1's `$guardArguments = ...` line with
// the loader for the guard's file, its hash, the restart's token and the runner's
// process id: a sum of single-quoted literals and $guardLoader. It fails when the
// line is missing or holds anything else.
func GuardArguments(guardFile, hash, token string, pid int) (string, error) {
	const prefix = "$guardArguments = "
	var line string
	for _, l := range strings.Split(mustRead("restart_instance.ps1"), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, prefix) {
			line = strings.TrimSpace(strings.TrimPrefix(l, prefix))
		}
	}
	if line == "" {
		return "", fmt.Errorf("restart_instance.ps1 has no line %q composing the guard's arguments", prefix)
	}
	loader := ""
	if strings.Contains(line, "$guardLoader") {
		var err error
		if loader, err = GuardLoader(guardFile, hash, token, pid); err != nil {
			return "", err
		}
	}
	// The file, token and id too: a line that puts them on the command line itself
	// (as before issue 24: -File) reads as the process would get it.
	return evalGuardArguments(line, map[string]string{"$guardLoader": EncodeCommand(loader), "$guardFile": guardFile, "$guardPath": guardFile,
		"$token": token, "[string][int]$PID": strconv.Itoa(pid)})
}

// evalGuardArguments evaluates the right-hand side of the `$guardArguments = ...`
// line (GuardArguments): single-quoted literals and the named values.
func evalGuardArguments(line string, values map[string]string) (string, error) {
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
				return "", fmt.Errorf("restart_instance.ps1: the guard's arguments hold %q, which is neither a literal nor the guard's loader", term)
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
func GuardCommandLine(guardFile, hash, token string, pid int) (string, error) {
	args, err := GuardArguments(guardFile, hash, token, pid)
	if err != nil {
		return "", err
	}
	return GuardProgram + " " + args, nil
}
