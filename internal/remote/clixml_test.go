package remote

import (
	"strings"
	"testing"
)

// What powershell.exe -EncodedCommand writes on stderr under WinRM when a command
// fails: a progress record first (module loading), then the error record split into
// one <S S="Error"> element per line.
const clixmlGetItemFailure = `#< CLIXML
<Objs Version="1.1.0.1" xmlns="http://schemas.microsoft.com/powershell/2004/04"><Obj S="progress" RefId="0"><TN RefId="0"><T>System.Management.Automation.PSCustomObject</T><T>System.Object</T></TN><MS><I64 N="SourceId">1</I64><PR N="Record"><AV>Preparing modules for first use.</AV><AI>0</AI><Nil /><PI>-1</PI><PC>-1</PC><T>Completed</T><SR>-1</SR><SD> </SD></PR></MS></Obj><S S="Error">Get-Item : Cannot find path 'C:\nope' because it does not exist._x000D__x000A_</S><S S="Error">At line:1 char:1_x000D__x000A_</S><S S="Error">+ Get-Item -LiteralPath C:\nope_x000D__x000A_</S><S S="Error">+ ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~_x000D__x000A_</S><S S="Error">    + CategoryInfo          : ObjectNotFound: (C:\nope:String) [Get-Item], ItemNotFoundException_x000D__x000A_</S><S S="Error">    + FullyQualifiedErrorId : PathNotFound,Microsoft.PowerShell.Commands.GetItemCommand_x000D__x000A_</S><S S="Error"> _x000D__x000A_</S></Objs>`

func TestDecodeCLIXMLErrorRecord(t *testing.T) {
	got := DecodeCLIXML(clixmlGetItemFailure)
	want := strings.Join([]string{
		`Get-Item : Cannot find path 'C:\nope' because it does not exist.`,
		`At line:1 char:1`,
		`+ Get-Item -LiteralPath C:\nope`,
		`+ ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~`,
		`    + CategoryInfo          : ObjectNotFound: (C:\nope:String) [Get-Item], ItemNotFoundException`,
		`    + FullyQualifiedErrorId : PathNotFound,Microsoft.PowerShell.Commands.GetItemCommand`,
	}, "\n")
	if got != want {
		t.Fatalf("decoded:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(got, "Preparing modules") {
		t.Fatal("a progress record leaked into the error text")
	}
}

func TestDecodeCLIXMLProgressOnlyIsEmpty(t *testing.T) {
	// Successful commands print progress as CLIXML too; that is not an error.
	in := `#< CLIXML
<Objs Version="1.1.0.1" xmlns="http://schemas.microsoft.com/powershell/2004/04"><Obj S="progress" RefId="0"><TN RefId="0"><T>System.Management.Automation.PSCustomObject</T><T>System.Object</T></TN><MS><I64 N="SourceId">1</I64><PR N="Record"><AV>Preparing modules for first use.</AV><AI>0</AI><Nil /><PI>-1</PI><PC>-1</PC><T>Completed</T><SR>-1</SR><SD> </SD></PR></MS></Obj></Objs>`
	if got := DecodeCLIXML(in); got != "" {
		t.Fatalf("progress-only stream decoded to %q, want empty", got)
	}
}

func TestDecodeCLIXMLSeveralDocumentsAndEscapes(t *testing.T) {
	// Two documents (two error writes), a warning to ignore, escapes for an
	// underscore, a tab and a character outside the BMP (a surrogate pair).
	in := "#< CLIXML\r\n<Objs Version=\"1.1.0.1\" xmlns=\"http://schemas.microsoft.com/powershell/2004/04\">" +
		"<S S=\"warning\">Waiting for service 'SQL Server (MSSQLSERVER)' to start..._x000D__x000A_</S>" +
		"<S S=\"Error\">Exception calling &quot;Start&quot; with &quot;0&quot; argument(s): &quot;Cannot start service MSSQL_x005F_x on computer &apos;.&apos;.&quot;_x000D__x000A_</S></Objs>" +
		"#< CLIXML\r\n<Objs Version=\"1.1.0.1\" xmlns=\"http://schemas.microsoft.com/powershell/2004/04\">" +
		"<S S=\"Error\">second_x0009_line _xD83D__xDE00_ Überprüfung_x000A_</S></Objs>"
	got := DecodeCLIXML(in)
	want := "Exception calling \"Start\" with \"0\" argument(s): \"Cannot start service MSSQL_x on computer '.'.\"\n" +
		"second\tline \U0001F600 Überprüfung"
	if got != want {
		t.Fatalf("decoded:\n%q\nwant:\n%q", got, want)
	}
}

func TestDecodeCLIXMLPlainAndTruncated(t *testing.T) {
	if got := DecodeCLIXML("  'pwsh' is not recognized as an internal or external command\r\n"); got != "'pwsh' is not recognized as an internal or external command" {
		t.Fatalf("plain stderr = %q", got)
	}
	// A document cut off mid-stream (the process was killed) still yields what was read.
	in := `#< CLIXML
<Objs Version="1.1.0.1" xmlns="http://schemas.microsoft.com/powershell/2004/04"><S S="Error">first error_x000D__x000A_</S><S S="Error">half a li`
	if got := DecodeCLIXML(in); got != "first error\nhalf a li" {
		t.Fatalf("truncated = %q", got)
	}
}
