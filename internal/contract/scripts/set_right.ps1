# set_right: grant or revoke one right for one SID through the LSA API (idempotent;
# Set-UserRight, right_change.ps1), or make each of $Params.changes in turn, then
# read the instance back when asked (Get-InstanceReport, instance_report.ps1), in
# this same process.
# Parameters: $Params.right, $Params.sid, $Params.grant, or $Params.changes (a list
# of { right, sid, grant }, at most 8; right absent: SeManageVolumePrivilege), and
# $Params.read_back.
$readBack = [string]$Params.read_back
$changes = @()
if ($null -ne $Params.changes -and @($Params.changes).Count -gt 0) {
    $changes = @($Params.changes)
}
else {
    $changes = @([pscustomobject]@{ right = [string]$Params.right; sid = $Params.sid; grant = $Params.grant })
}
if ($changes.Count -gt 8) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message 'changes lists at most 8 changes.'
}
# Every change's right is checked before anything changes.
foreach ($change in $changes) {
    $right = [string]$change.right
    if (-not $right -and $null -ne $Params.changes) { $right = 'SeManageVolumePrivilege' }
    if (-not (Test-RightName -Name $right)) {
        Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "'$right' is not a user right name (Se...Privilege)."
    }
    # Only the rights behind Instant File Initialization and Lock Pages in Memory,
    # whoever sends the parameters.
    if (-not (Test-ManagedRight -Name $right)) {
        Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "set_right changes only $($ManagedRights -join ' and '); '$right' is refused on $($env:COMPUTERNAME)."
    }
}
if ($readBack -and -not (Test-SqlInstanceName -Name $readBack)) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "read_back '$readBack' is not a SQL Server instance name."
}

Register-ChangeEventSource # before the change, so that its entry can be written
# In order; the first that fails ends the script (Set-UserRight's error names its
# right and SID), the ones before it made.
$result = $null
$changed = $false
foreach ($change in $changes) {
    $right = [string]$change.right
    if (-not $right) { $right = 'SeManageVolumePrivilege' }
    $result = Set-UserRight -Right $right -SidText $change.sid -Grant $change.grant -Instance $readBack
    if ($result.changed) { $changed = $true }
}
$result.changed = $changed
if ($EventLogNotes.warning) { $result.event_log_warning = $EventLogNotes.warning }
if ($readBack) {
    # As restart_instance reads back: right_holders and group_policy are IFI's right,
    # lock_pages Lock Pages in Memory's, whichever right was changed.
    $result.instance = Get-InstanceReport -InstanceName $readBack -Right 'SeManageVolumePrivilege'
}
Write-Result -Value $result
