# restart_status: the outcome of the instance's last restart, from its marker key
# (restart_common.ps1), waiting at most $Params.wait_seconds for it to finish.
# Parameters: $Params.instance, $Params.wait_seconds.
$instanceName = [string]$Params.instance
$waitSeconds = 0
if (-not (Test-SqlInstanceName -Name $instanceName)) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "'$instanceName' is not a SQL Server instance name."
}
if ($null -ne $Params.wait_seconds -and (-not [int]::TryParse([string]$Params.wait_seconds, [ref]$waitSeconds) -or $waitSeconds -lt 0 -or $waitSeconds -gt 600)) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message 'wait_seconds must be a whole number of seconds between 0 and 600.'
}
$instance = Find-SqlInstance -Name $instanceName
if (-not $instance.Name) {
    Exit-WithError -Code 5 -ErrorName 'not_found' -Message "SQL Server instance $instanceName is not installed on $($env:COMPUTERNAME)."
}
$state = Wait-RestartMarker -Instance $instance.Name -Until ([DateTime]::UtcNow.AddSeconds($waitSeconds))
# A restart prepared and not let go has done nothing: no record of a restart yet.
if (-not $state -or [string]$state.phase -ceq 'prepared') {
    $none = New-RestartState -RestartId '' -ServiceName $instance.ServiceName -ServiceState ''
    $none.found = $false
    Write-Result -Value $none
}
Write-Result -Value $state
