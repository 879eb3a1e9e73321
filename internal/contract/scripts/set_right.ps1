# set_right: grant or revoke one right for one SID through the LSA API (idempotent;
# Set-ManageVolumeRight, right_change.ps1), then read the instance back when asked
# (Get-InstanceReport, instance_report.ps1), in this same process.
# Parameters: $Params.right, $Params.sid, $Params.grant, $Params.read_back.
$right = [string]$Params.right
$readBack = [string]$Params.read_back
if (-not (Test-RightName -Name $right)) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "'$right' is not a user right name (Se...Privilege)."
}
# Only the right behind Instant File Initialization, whoever sends the parameters.
if ($right -cne 'SeManageVolumePrivilege') {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "set_right changes only SeManageVolumePrivilege; '$right' is refused on $($env:COMPUTERNAME)."
}
if ($readBack -and -not (Test-SqlInstanceName -Name $readBack)) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "read_back '$readBack' is not a SQL Server instance name."
}

Register-ChangeEventSource # before the change, so that its entry can be written
$result = Set-ManageVolumeRight -SidText $Params.sid -Grant $Params.grant -Instance $readBack
if ($EventLogNotes.warning) { $result.event_log_warning = $EventLogNotes.warning }
if ($readBack) {
    $result.instance = Get-InstanceReport -InstanceName $readBack -Right $right
}
Write-Result -Value $result
