# mssqlifi bootstrap: sent on the command line (-EncodedCommand), so it stays short.
# stdin carries one line of base64 UTF-8 JSON parameters, then the operation's script.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$mssqlifiInput = [Console]::In.ReadToEnd()
$mssqlifiSplit = $mssqlifiInput.IndexOf("`n")
$mssqlifiJson = [Text.Encoding]::UTF8.GetString([Convert]::FromBase64String($mssqlifiInput.Substring(0, $mssqlifiSplit).Trim()))
$Params = ConvertFrom-Json -InputObject $mssqlifiJson
& ([ScriptBlock]::Create($mssqlifiInput.Substring($mssqlifiSplit + 1)))
exit $LASTEXITCODE
