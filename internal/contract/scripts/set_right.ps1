# set_right: grant or revoke one right for one SID through the LSA API (idempotent).
# Parameters: $Params.right, $Params.sid, $Params.grant.
$right = [string]$Params.right
$sidText = [string]$Params.sid
if (-not (Test-RightName -Name $right)) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "'$right' is not a user right name (Se...Privilege)."
}
# Only the right behind Instant File Initialization, whoever sends the parameters:
# a stolen or relayed session must not grant anything else through this script.
if ($right -cne 'SeManageVolumePrivilege') {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "set_right changes only SeManageVolumePrivilege; '$right' is refused on $($env:COMPUTERNAME)."
}
if ($Params.grant -isnot [bool]) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message 'grant must be true or false.'
}
$sid = $null
if ($sidText -match '^S-1-\d+(-\d+)+\z') {
    try {
        $sid = (New-Object System.Security.Principal.SecurityIdentifier($sidText)).Value
    }
    catch {
        $sid = $null
    }
}
if (-not $sid) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "'$sidText' is not a SID (S-1-...)."
}

function Test-Holder {
    param([string] $Right, [string] $Sid)
    return (@(Get-LsaAccountsWithRight -Right $Right) -contains $Sid)
}

try {
    $before = Test-Holder -Right $right -Sid $sid
    if ($Params.grant) {
        Add-LsaAccountRight -Sid $sid -Right $right
    }
    else {
        Remove-LsaAccountRight -Sid $sid -Right $right
    }
    $after = Test-Holder -Right $right -Sid $sid
    $holders = Get-RightHolder -Right $right
}
catch {
    Exit-WithError -Code 1 -ErrorName 'lsa_error' -Message "Changing $right for $sid on $($env:COMPUTERNAME) failed: $($_.Exception.Message)"
}
if ($after -ne [bool]$Params.grant) {
    Exit-WithError -Code 1 -ErrorName 'lsa_error' -Message "LSA reported success, but $sid still does$(if (-not $after) { ' not' }) hold $right on $($env:COMPUTERNAME)."
}

Write-Result -Value ([ordered]@{
        changed = ($before -ne $after)
        holders = $holders.ToArray()
    })
