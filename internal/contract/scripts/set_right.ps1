# set_right: grant or revoke one right for one SID through the LSA API (idempotent;
# Set-UserRight, right_change.ps1), then read the instance back when asked
# (Get-InstanceReport, instance_report.ps1), in this same process.
# Parameters: $Params.right, $Params.sid, $Params.grant, $Params.read_back.
$right = [string]$Params.right
$readBack = [string]$Params.read_back
if (-not (Test-RightName -Name $right)) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "'$right' is not a user right name (Se...Privilege)."
}
# Only the rights behind Instant File Initialization and Lock Pages in Memory,
# whoever sends the parameters.
if (-not (Test-ManagedRight -Name $right)) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "set_right changes only $($ManagedRights -join ' and '); '$right' is refused on $($env:COMPUTERNAME)."
}
if ($readBack -and -not (Test-SqlInstanceName -Name $readBack)) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "read_back '$readBack' is not a SQL Server instance name."
}

Register-ChangeEventSource # before the change, so that its entry can be written
$result = Set-UserRight -Right $right -SidText $Params.sid -Grant $Params.grant -Instance $readBack
if ($EventLogNotes.warning) { $result.event_log_warning = $EventLogNotes.warning }
if ($readBack) {
    # As restart_instance reads back: right_holders and group_policy are IFI's right,
    # lock_pages Lock Pages in Memory's, whichever right was changed.
    $result.instance = Get-InstanceReport -InstanceName $readBack -Right 'SeManageVolumePrivilege'
}
Write-Result -Value $result
