# Set-UserRight: grant or revoke one of the managed rights (SeManageVolumePrivilege,
# SeLockMemoryPrivilege) for one SID through the LSA API (idempotent), and say
# whether that changed anything and who holds the right now
# (contract.SetRightResult). set_right and restart_instance use it. Only those
# rights (Test-ManagedRight, checked here again), whoever sends the parameters.
function Set-UserRight {
    param([string] $Right, $SidText, $Grant, [string] $Instance)
    if (-not (Test-ManagedRight -Name $Right)) {
        Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "Only $($ManagedRights -join ' and ') can be changed; '$Right' is refused on $($env:COMPUTERNAME)."
    }
    if ($Grant -isnot [bool]) {
        Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message 'grant must be true or false.'
    }
    $sid = $null
    if ([string]$SidText -match '^S-1-\d+(-\d+)+\z') {
        try {
            $sid = (New-Object System.Security.Principal.SecurityIdentifier([string]$SidText)).Value
        }
        catch {
            $sid = $null
        }
    }
    if (-not $sid) {
        Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "'$SidText' is not a SID (S-1-...)."
    }
    try {
        $before = @(Get-LsaAccountsWithRight -Right $Right) -contains $sid
        if ($Grant) {
            Add-LsaAccountRight -Sid $sid -Right $Right
        }
        else {
            Remove-LsaAccountRight -Sid $sid -Right $Right
        }
        $after = @(Get-LsaAccountsWithRight -Right $Right) -contains $sid
        $holders = Get-RightHolder -Right $Right
    }
    catch {
        Exit-WithError -Code 1 -ErrorName 'lsa_error' -Message "Changing $Right for $sid on $($env:COMPUTERNAME) failed: $($_.Exception.Message)"
    }
    if ($after -ne $Grant) {
        Exit-WithError -Code 1 -ErrorName 'lsa_error' -Message "LSA reported success, but $sid still does$(if (-not $after) { ' not' }) hold $Right on $($env:COMPUTERNAME)."
    }
    if ($before -ne $after) { Write-ChangeEvent -Instance $Instance -Sid $sid -Right $Right -Change $(if ($Grant) { 'grant' } else { 'revoke' }) -Agent ([string]$Params.agent) }
    return [ordered]@{
        changed = ($before -ne $after)
        holders = $holders.ToArray()
    }
}
