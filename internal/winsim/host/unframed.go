package host

// unframedBootstrap is the bootstrap of mssqlifi 0.1.0 verbatim. It read stdin with
// [Console]::In.ReadToEnd(), so it needed an end-of-input, which a console-mode stdin
// under WinRS never delivers (design/winrm-stdin-and-cost-model.md). The
// simulator still recognises it, to show that it hangs there: the provider no
// longer sends it.
const unframedBootstrap = `# mssqlifi bootstrap: sent on the command line (-EncodedCommand), so it stays short.
# stdin carries one line of base64 UTF-8 JSON parameters, then the operation's script.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$mssqlifiInput = [Console]::In.ReadToEnd()
$mssqlifiSplit = $mssqlifiInput.IndexOf("` + "`" + `n")
$mssqlifiJson = [Text.Encoding]::UTF8.GetString([Convert]::FromBase64String($mssqlifiInput.Substring(0, $mssqlifiSplit).Trim()))
$Params = ConvertFrom-Json -InputObject $mssqlifiJson
& ([ScriptBlock]::Create($mssqlifiInput.Substring($mssqlifiSplit + 1)))
exit $LASTEXITCODE
`

// UnframedBootstrap returns the 0.1.0 bootstrap, for tests that show it hangs.
func UnframedBootstrap() string { return unframedBootstrap }
