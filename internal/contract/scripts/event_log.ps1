# Write-ChangeEvent: every grant, revoke and restart leaves an entry in the host's
# Application event log, where auditors look: the instance, the SID, the change (and
# the right granted or revoked), the
# logged-on account and the provider's User-Agent, under the event source mssqlifi
# (contract.EventSource). The source is registered before the change
# (Register-ChangeEventSource, which needs an administrator): a write right after
# CreateEventSource can fail until the system has refreshed its list of sources
# (.NET EventLog.CreateEventSource), so a failed write is tried once more a second
# later. The change stands when the entry cannot be written: $EventLogNotes.warning
# then says why, and the result carries it (event_log_warning).
$EventLogNotes = @{ warning = $null; registration = $null }
function Register-ChangeEventSource {
    try {
        if (-not [System.Diagnostics.EventLog]::SourceExists('mssqlifi')) {
            [System.Diagnostics.EventLog]::CreateEventSource('mssqlifi', 'Application')
        }
    }
    catch {
        $EventLogNotes.registration = "the event source could not be registered: $($_.Exception.Message)"
    }
}
function Write-ChangeEvent {
    param([string] $Instance, [string] $Sid, [string] $Change, [string] $Agent, [string] $Right = '')
    $source = 'mssqlifi'
    $eventId = @{ grant = 1001; revoke = 1002; restart = 1003 }[$Change]
    $account = [System.Security.Principal.WindowsIdentity]::GetCurrent().Name
    $feature = @{ SeManageVolumePrivilege = 'Instant File Initialization'; SeLockMemoryPrivilege = 'Lock Pages in Memory' }[$Right]
    $what = @{ grant = "granted $Right ($feature)"; revoke = "revoked $Right ($feature)"; restart = 'restarted the SQL Server service' }[$Change]
    $text = "mssqlifi $what`r`nChange: $Change`r`nRight: $Right`r`nInstance: $Instance`r`nSID: $Sid`r`nAccount: $account`r`nUser-Agent: $Agent"
    $why = ''
    foreach ($attempt in 1, 2) {
        try {
            Write-EventLog -LogName 'Application' -Source $source -EventId $eventId -EntryType Information -Message $text -ErrorAction Stop
            return
        }
        catch {
            $why = $_.Exception.Message
        }
        if ($attempt -eq 1) {
            Start-Sleep -Seconds 1
        }
    }
    if ($EventLogNotes.registration) {
        $why = "$($EventLogNotes.registration); $why"
    }
    $EventLogNotes.warning = "The $Change was made, but it could not be written to the Application event log of $($env:COMPUTERNAME) (event source $source, tried twice): $why"
}
