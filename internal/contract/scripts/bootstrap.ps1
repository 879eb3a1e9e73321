# mssqlifi bootstrap: sent on the command line (-EncodedCommand), so it stays short.
# stdin: a line of base64 UTF-8 JSON parameters, a line with the script's line count,
# then the script. It reads exactly that and never waits for end-of-input, which a
# console-mode stdin under WinRS never delivers.
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
