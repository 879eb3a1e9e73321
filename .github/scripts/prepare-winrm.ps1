# Makes the runner a WinRM host as Windows Server ships one, plus an HTTPS listener:
# - turns WinRM on only if it is off (Enable-PSRemoting -Force; note that it, like
#   `winrm quickconfig`, also sets LocalAccountTokenFilterPolicy to 1, which
#   set-token-filter.ps1 undoes and redoes on purpose);
# - keeps (or puts back, saying so) Windows' service defaults: an HTTP listener on
#   5985, Basic off, AllowUnencrypted false, CbtHardeningLevel Relaxed (Microsoft
#   Learn, "Installation and configuration for Windows Remote Management");
# - adds an HTTPS listener on 5986 with a self-signed certificate for localhost and
#   the computer name, and writes its PEM for MSSQLIFI_ACC_CA_CERT, so the suite's
#   HTTPS run verifies the certificate instead of skipping verification.
[CmdletBinding()]
param()
. "$PSScriptRoot\ci-common.ps1"

$service = Get-Service -Name WinRM
$summary = @('### WinRM', '')
if ($service.Status -ne 'Running') {
    $summary += "- WinRM was $($service.Status): turned on with Enable-PSRemoting -Force."
    Enable-PSRemoting -Force -SkipNetworkProfileCheck | Out-Host
} else {
    $summary += '- WinRM was running: left as the image has it.'
}
$http = @(Get-ChildItem -Path WSMan:\localhost\Listener | Where-Object { $_.Keys -contains 'Transport=HTTP' })
if ($http.Count -eq 0) {
    $summary += '- No HTTP listener: made one with Enable-PSRemoting -Force.'
    Enable-PSRemoting -Force -SkipNetworkProfileCheck | Out-Host
}

# Windows' defaults for the service; anything else is put back and reported.
$defaults = [ordered]@{ 'Auth\Basic' = 'false'; 'AllowUnencrypted' = 'false'; 'Auth\Negotiate' = 'true'; 'Auth\Kerberos' = 'true'; 'Auth\CbtHardeningLevel' = 'Relaxed' }
foreach ($name in $defaults.Keys) {
    $item = Get-Item -Path "WSMan:\localhost\Service\$name"
    if ([string]$item.Value -ne $defaults[$name]) {
        $summary += "- Service\$name was $($item.Value) on this image: set back to Windows' default $($defaults[$name])."
        Set-Item -Path "WSMan:\localhost\Service\$name" -Value $defaults[$name] -Force
    }
}

$certificate = New-SelfSignedCertificate -DnsName @('localhost', $env:COMPUTERNAME) -CertStoreLocation 'Cert:\LocalMachine\My' -NotAfter (Get-Date).AddDays(2) -FriendlyName 'mssqlifi real-host CI (WinRM HTTPS)'
Get-ChildItem -Path WSMan:\localhost\Listener | Where-Object { $_.Keys -contains 'Transport=HTTPS' } | Remove-Item -Recurse -Force
New-Item -Path WSMan:\localhost\Listener -Transport HTTPS -Address * -CertificateThumbPrint $certificate.Thumbprint -Force | Out-Null
$pem = Join-Path -Path $env:RUNNER_TEMP -ChildPath 'winrm-https.pem'
$base64 = [Convert]::ToBase64String($certificate.RawData, [Base64FormattingOptions]::InsertLineBreaks)
Set-Content -LiteralPath $pem -Value @('-----BEGIN CERTIFICATE-----', $base64, '-----END CERTIFICATE-----') -Encoding ASCII
Set-JobEnv -Name 'MSSQLIFI_ACC_CA_CERT' -Value $pem
$summary += '- HTTPS listener on 5986 with a self-signed certificate (localhost, the computer name), verified by the suite through MSSQLIFI_ACC_CA_CERT.'

$rows = foreach ($name in @('Auth\Basic', 'AllowUnencrypted', 'Auth\Negotiate', 'Auth\Kerberos', 'Auth\CbtHardeningLevel')) {
    "| Service\$name | $((Get-Item -Path "WSMan:\localhost\Service\$name").Value) |"
}
$listeners = foreach ($listener in Get-ChildItem -Path WSMan:\localhost\Listener) {
    "| listener | $($listener.Keys -join ', ') |"
}
Add-JobSummary -Lines ($summary + @('', '| setting | value |', '|---|---|') + $rows + $listeners + @(''))
