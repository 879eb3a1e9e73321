# mssqlifi bootstrap: sent on the command line (-EncodedCommand), so it stays short.
# stdin: a line of base64 UTF-8 JSON parameters, a line with the script's line count,
# then the script. It reads exactly that and never waits for end-of-input, which a
# console-mode stdin under WinRS never delivers.
# First, with core types only: under an AppLocker or App Control policy that
# enforces script rules, PowerShell runs commands in ConstrainedLanguage mode, where
# [Console] and the scripts fail (contract.ConstrainedLanguageMessage).
$mssqlifiMode = [string]$ExecutionContext.SessionState.LanguageMode
if ($mssqlifiMode -ne 'FullLanguage') {
    '{"error":"constrained_language","message":"Windows PowerShell runs in ' + $mssqlifiMode + ' mode for this user (an AppLocker or App Control policy enforces script rules), so the provider scripts cannot run"}'
    exit 3
}
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$mssqlifiIn = [Console]::In
$mssqlifiJson = [Text.Encoding]::UTF8.GetString([Convert]::FromBase64String($mssqlifiIn.ReadLine().Trim()))
$mssqlifiCount = [int]$mssqlifiIn.ReadLine().Trim()
$mssqlifiLines = New-Object 'System.Collections.Generic.List[string]'
for ($mssqlifiIndex = 0; $mssqlifiIndex -lt $mssqlifiCount; $mssqlifiIndex++) {
    $mssqlifiLine = $mssqlifiIn.ReadLine()
    if ($null -eq $mssqlifiLine) {
        throw "stdin ended after $mssqlifiIndex of $mssqlifiCount script lines"
    }
    $mssqlifiLines.Add($mssqlifiLine)
}
$Params = ConvertFrom-Json -InputObject $mssqlifiJson
& ([ScriptBlock]::Create([string]::Join("`n", $mssqlifiLines)))
exit $LASTEXITCODE
