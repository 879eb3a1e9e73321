# Write-ChangeEvent: every grant, revoke and restart leaves an entry in the host's
# Application event log, where auditors look: the instance, the SID, the change, the
# logged-on account and the provider's User-Agent, under the event source mssqlifi
# (contract.EventSource; registered on first use, which needs an administrator). The
# change stands when the entry cannot be written: $EventLogNotes.warning then says
# why, and the result carries it (event_log_warning).
$EventLogNotes = @{ warning = $null }
function Write-ChangeEvent {
    param([string] $Instance, [string] $Sid, [string] $Change, [string] $Agent)
    $source = 'mssqlifi'
    $eventId = @{ grant = 1001; revoke = 1002; restart = 1003 }[$Change]
    try {
        if (-not [System.Diagnostics.EventLog]::SourceExists($source)) {
            [System.Diagnostics.EventLog]::CreateEventSource($source, 'Application')
        }
        $account = [System.Security.Principal.WindowsIdentity]::GetCurrent().Name
        $what = @{ grant = 'granted SeManageVolumePrivilege (Instant File Initialization)'; revoke = 'revoked SeManageVolumePrivilege (Instant File Initialization)'; restart = 'restarted the SQL Server service' }[$Change]
        $text = "mssqlifi $what`r`nChange: $Change`r`nInstance: $Instance`r`nSID: $Sid`r`nAccount: $account`r`nUser-Agent: $Agent"
        Write-EventLog -LogName 'Application' -Source $source -EventId $eventId -EntryType Information -Message $text
    }
    catch {
        $EventLogNotes.warning = "The $Change was made, but it could not be written to the Application event log of $($env:COMPUTERNAME) (event source $source): $($_.Exception.Message)"
    }
}
