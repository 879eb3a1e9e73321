# A registry key's last write time (RegQueryInfoKeyW's lpftLastWriteTime) in UTC, or
# $null when it cannot be read.
function Get-RegistryKeyWriteTime {
    param([Microsoft.Win32.RegistryKey] $Key)
    $fileTime = $mssqlifiMarshal::AllocHGlobal(8)
    try {
        $none = [IntPtr]::Zero
        $status = [uint32]$mssqlifiLsa::RegQueryInfoKey($Key.Handle.DangerousGetHandle(), $none, $none, $none, $none, $none, $none, $none, $none, $none, $none, $fileTime)
        if ($status -ne 0) {
            return $null
        }
        return (Format-UtcTime -Time ([DateTime]::FromFileTimeUtc($mssqlifiMarshal::ReadInt64($fileTime))))
    }
    finally {
        $mssqlifiMarshal::FreeHGlobal($fileTime)
    }
}

# Always On as Windows tells it without SQL Server (contract.HADRInfo): HADR_Enabled
# under the instance's MSSQLServer\HADR key and when the key was last written (SQL
# Server reads the value when it starts), and the "SQL Server Availability Group"
# cluster resources whose owner node is this computer (it holds their primary),
# each tied to its instance where Windows says which: by the resource's dependency
# on a "SQL Server" resource (MSCluster_ResourceToDependentResource; its private
# property InstanceName), or because $InstanceName is the only instance installed on
# this node. A resource tied to another instance is not this one's; one that cannot
# be tied is reported in untied_groups, and the provider refuses to guess.
function Get-HadrReport {
    param([string] $Root, [string] $InstanceName, [int] $InstalledCount)
    $report = [ordered]@{ key_found = $false; cluster_known = $false; owned_groups = @(); untied_groups = @(); detail = '' }
    $details = New-Object System.Collections.Generic.List[string]
    $keyPath = "$Root\MSSQLServer\HADR"
    try {
        if (Test-Path -LiteralPath $keyPath) {
            $key = Get-Item -LiteralPath $keyPath
            $report.key_found = $true
            $value = $key.GetValue('HADR_Enabled', $null)
            if ($null -ne $value) {
                $report.enabled = [int]$value
            }
            $written = Get-RegistryKeyWriteTime -Key $key
            if ($written) {
                $report.key_written = $written
            }
        }
    }
    catch {
        $details.Add("the HADR registry key could not be read: $($_.Exception.Message)")
    }
    try {
        $resources = @(Get-CimInstance -Namespace 'root\MSCluster' -ClassName 'MSCluster_Resource' -Filter "Type = 'SQL Server Availability Group'")
        $report.cluster_known = $true
        $owned = New-Object System.Collections.Generic.List[string]
        $untied = New-Object System.Collections.Generic.List[string]
        foreach ($resource in $resources) {
            if ([string]$resource.OwnerNode -ine $env:COMPUTERNAME) {
                continue
            }
            $tie = ''
            try {
                foreach ($other in @(Get-CimAssociatedInstance -InputObject $resource -Association 'MSCluster_ResourceToDependentResource')) {
                    if ([string]$other.Type -eq 'SQL Server' -and $other.PrivateProperties) {
                        $tie = [string]$other.PrivateProperties.InstanceName
                    }
                }
            }
            catch {
                $details.Add("the dependencies of cluster resource $($resource.Name) could not be read: $($_.Exception.Message)")
            }
            if ($tie) {
                if ($tie -ieq $InstanceName) {
                    $owned.Add([string]$resource.Name)
                }
            }
            elseif ($InstalledCount -eq 1) {
                $owned.Add([string]$resource.Name)
            }
            else {
                $untied.Add([string]$resource.Name)
            }
        }
        $report.owned_groups = $owned.ToArray()
        $report.untied_groups = $untied.ToArray()
    }
    catch {
        $details.Add("root\MSCluster could not be read (not a failover cluster node?): $($_.Exception.Message)")
    }
    $report.detail = $details -join '; '
    return $report
}

# Where RSoP logging is turned off: the registry value that turns it off
# (RSoPLogging = 0; the policy under Software\Policies wins over the preference under
# Winlogon), or '' when logging is on (the default: the value absent or not 0).
function Get-RSoPLoggingOff {
    foreach ($key in @('HKLM:\SOFTWARE\Policies\Microsoft\Windows\System', 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Winlogon')) {
        $item = Get-Item -LiteralPath $key -ErrorAction SilentlyContinue
        if (-not $item) {
            continue
        }
        $value = $item.GetValue('RSoPLogging', $null)
        if ($null -ne $value) {
            if ([int]$value -eq 0) {
                return ($key -replace '^HKLM:', 'HKLM') + '\RSoPLogging = 0'
            }
            return ''
        }
    }
    return ''
}

# The Group Policy setting of each right in $Rights, from one RSoP query: the winning
# (precedence 1) RSOP_UserPrivilegeRight setting, if any. RSoP without any Group
# Policy object (not even the local one) has no data: unknown, not "no policy defines
# the right". Returns right -> contract.GroupPolicyInfo.
function Get-RightPolicy {
    param([string[]] $Rights)
    $policies = @{}
    foreach ($right in $Rights) {
        $policies[$right] = [ordered]@{ known = $false; defined = $false; holders = @(); detail = '' }
    }
    $loggingOff = ''
    try {
        # RSoP logging turned off (RSoPLogging = 0: the policy "Turn off Resultant Set
        # of Policy logging" under Software\Policies, else the preference under
        # Winlogon; logging is on by default): root\rsop\computer then holds what was
        # logged before, if anything, not the policy in force. Unknown, not "no policy
        # defines the right".
        $loggingOff = Get-RSoPLoggingOff
        if ($loggingOff) {
            throw "RSoP logging is turned off on this host ($loggingOff), so root\rsop\computer may hold stale data and cannot say whether a Group Policy defines the right"
        }
        $gpoCount = @(Get-CimInstance -Namespace 'root\rsop\computer' -ClassName 'RSOP_GPO').Count
        if ($gpoCount -eq 0) {
            throw 'RSoP has no data on this host (root\rsop\computer lists no Group Policy object: RSoP logging may be off, or policy was never processed)'
        }
        $allSettings = @(Get-CimInstance -Namespace 'root\rsop\computer' -ClassName 'RSOP_UserPrivilegeRight' -Filter 'precedence = 1')
        foreach ($right in $Rights) {
            $groupPolicy = $policies[$right]
            $policyHolders = New-Object System.Collections.Generic.List[object]
            $settings = @($allSettings | Where-Object { $_.UserRight -eq $right })
            $groupPolicy.known = $true
            if ($settings.Count -gt 0) {
                $groupPolicy.defined = $true
                foreach ($entry in @($settings[0].AccountList)) {
                    $text = ([string]$entry).TrimStart('*')
                    if ($text -match '^S-1-\d+(-\d+)+\z') {
                        # Shown in a warning, so named; only when a policy defines the right.
                        $policyHolders.Add((New-Principal -Sid $text -Name (Get-SidName -Sid $text)))
                    }
                    else {
                        try {
                            $sid = (New-Object System.Security.Principal.NTAccount($text)).Translate([System.Security.Principal.SecurityIdentifier]).Value
                            $policyHolders.Add((New-Principal -Sid $sid -Name $text))
                        }
                        catch {
                            $policyHolders.Add([ordered]@{ sid = ''; name = $text })
                        }
                    }
                }
            }
            else {
                $groupPolicy.detail = "No Group Policy setting defines the right (RSoP lists $gpoCount Group Policy objects)."
            }
            $groupPolicy.holders = $policyHolders.ToArray()
        }
    }
    catch {
        $why = "Group Policy (RSoP) could not be read: $($_.Exception.Message)"
        foreach ($right in $Rights) {
            $policies[$right] = [ordered]@{ known = $false; defined = $false; holders = @(); detail = $why; rsop_logging_off = [string]$loggingOff }
        }
    }
    return $policies
}

# What every instance of the host shares (Get-InstanceReport's host-wide part): the
# right's direct holders, the direct members of Administrators and the Group Policy
# setting of the right, and the same for SeLockMemoryPrivilege (Lock Pages in
# Memory, contract.RightRead) whatever $Right names. read_host reads it once for all
# the instances it reports.
function Get-HostRightFact {
    param([string] $Right)
    # SIDs only: the provider compares SIDs, and translating every holder can ask a
    # domain controller on each refresh.
    $holders = Get-RightHolder -Right $Right
    $lockHolders = Get-RightHolder -Right 'SeLockMemoryPrivilege'

    # Direct members of BUILTIN\Administrators, as SIDs. Get-LocalGroupMember fails on
    # orphaned SIDs and is missing before WMF 5.1: fall back to ADSI.
    $administrators = New-Object System.Collections.Generic.List[object]
    try {
        foreach ($member in @(Get-LocalGroupMember -SID 'S-1-5-32-544')) {
            $administrators.Add((New-Principal -Sid $member.SID.Value -Name ([string]$member.Name)))
        }
    }
    catch {
        $administrators.Clear()
        $groupSid = New-Object System.Security.Principal.SecurityIdentifier('S-1-5-32-544')
        $groupName = $groupSid.Translate([System.Security.Principal.NTAccount]).Value.Split('\')[-1]
        $group = [ADSI]"WinNT://$computerName/$groupName,group"
        foreach ($member in @($group.Invoke('Members'))) {
            $sidBytes = $member.GetType().InvokeMember('objectSid', 'GetProperty', $null, $member, $null)
            $memberSid = New-Object System.Security.Principal.SecurityIdentifier($sidBytes, 0)
            $administrators.Add((New-Principal -Sid $memberSid.Value))
        }
    }

    $policies = Get-RightPolicy -Rights @($Right, 'SeLockMemoryPrivilege')

    return [ordered]@{
        right_holders          = $holders.ToArray()
        administrators_members = $administrators.ToArray()
        group_policy           = $policies[$Right]
        lock_pages             = [ordered]@{
            right        = 'SeLockMemoryPrivilege'
            holders      = $lockHolders.ToArray()
            group_policy = $policies['SeLockMemoryPrivilege']
        }
    }
}

# Get-InstanceReport: everything the provider needs about one SQL Server instance
# (contract.ReadInstanceResult), read only. read_instance returns it; set_right and
# restart_instance return it as their read-back, in the same process. $InstanceName
# and $Right were validated by the caller (Test-SqlInstanceName, Test-RightName).
function Get-InstanceReport {
    param([string] $InstanceName, [string] $Right, $HostFacts = $null)
    $computerName = $env:COMPUTERNAME
    $instance = Find-SqlInstance -Name $InstanceName
    if (-not $instance.Name) {
        return [ordered]@{
            computer_name       = $computerName
            found               = $false
            installed_instances = $instance.Installed
            powershell_version  = [string]$PSVersionTable.PSVersion
        }
    }

    $root = $instance.Root
    $serviceName = $instance.ServiceName

    $version = Get-RegistryValue -Path "$root\Setup" -Name 'PatchLevel'
    if (-not $version) {
        $version = Get-RegistryValue -Path "$root\Setup" -Name 'Version'
    }

    # IPAll: a static port wins over a dynamic one; either may be empty or a list.
    $tcpPort = 0
    foreach ($valueName in @('TcpPort', 'TcpDynamicPorts')) {
        $value = [string](Get-RegistryValue -Path "$root\MSSQLServer\SuperSocketNetLib\Tcp\IPAll" -Name $valueName)
        $first = ($value -split ',')[0].Trim()
        $port = 0
        if ($tcpPort -eq 0 -and [int]::TryParse($first, [ref]$port) -and $port -gt 0) {
            $tcpPort = $port
        }
    }

    # Startup parameters SQLArg0..N in numeric order; -e names the error log.
    $startupParameters = New-Object System.Collections.Generic.List[string]
    $errorLogPath = ''
    $parametersPath = "$root\MSSQLServer\Parameters"
    if (Test-Path -LiteralPath $parametersPath) {
        $parametersKey = Get-Item -LiteralPath $parametersPath
        $argNames = @($parametersKey.GetValueNames() | Where-Object { $_ -match '^SQLArg\d+\z' } | Sort-Object { [int]($_.Substring(6)) })
        foreach ($argName in $argNames) {
            $value = [string]$parametersKey.GetValue($argName)
            $startupParameters.Add($value)
            if ($value.StartsWith('-e')) {
                $errorLogPath = $value.Substring(2)
            }
        }
    }

    $clustered = Test-Path -LiteralPath "$root\Cluster"

    # Only this service, filtered by WMI (not every service on the host). The name comes
    # from the validated instance name (letters, digits, _ and $ only); it is checked
    # again before it goes into the WQL filter.
    if ($serviceName -notmatch '^[A-Za-z0-9_$]+\z') {
        Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "'$serviceName' is not a SQL Server service name."
    }
    $service = Get-CimInstance -ClassName Win32_Service -Filter "Name = '$serviceName'" | Select-Object -First 1
    if (-not $service) {
        Exit-WithError -Code 5 -ErrorName 'not_found' -Message "Instance $($instance.Name) is registered ($($instance.Id)) but its service $serviceName does not exist on $computerName."
    }
    $processId = [int]$service.ProcessId
    $processStart = Get-ServiceProcessStart -ProcessId $processId
    $startAccount = [string]$service.StartName

    $startAccountSid = ''
    if ($startAccount -ieq 'LocalSystem') {
        $startAccountSid = 'S-1-5-18'
    }
    else {
        $accountName = $startAccount
        if ($accountName.StartsWith('.\')) {
            $accountName = $computerName + $accountName.Substring(1)
        }
        try {
            $account = New-Object System.Security.Principal.NTAccount($accountName)
            $startAccountSid = $account.Translate([System.Security.Principal.SecurityIdentifier]).Value
        }
        catch {
            $startAccountSid = ''
        }
    }

    $sidType = Get-RegistryValue -Path "HKLM:\SYSTEM\CurrentControlSet\Services\$serviceName" -Name 'ServiceSidType'
    if ($null -eq $sidType) {
        $sidType = 0
    }

    if ($null -eq $HostFacts) {
        $HostFacts = Get-HostRightFact -Right $Right
    }

    # The current error log's startup lines about Instant File Initialization and the
    # memory manager's model (contract.MemoryLines: a Go test holds the texts here to
    # it), searched in the startup section only: at most the first $maxErrorLogLines
    # lines and about $maxErrorLogBytes bytes, never a whole (possibly multi-GB) log.
    $maxErrorLogLines = 10000
    $maxErrorLogBytes = 1048576
    $memoryLines = @{
        'Using conventional memory in the memory manager.' = 'CONVENTIONAL'
        'Using locked pages in the memory manager.'        = 'LOCK_PAGES'
        'Using large pages in the memory manager.'         = 'LARGE_PAGES'
    }
    $errorLog = [ordered]@{ path = $errorLogPath; found = $false }
    if ($errorLogPath -and (Test-Path -LiteralPath $errorLogPath)) {
        try {
            $stream = New-Object System.IO.FileStream($errorLogPath, [System.IO.FileMode]::Open, [System.IO.FileAccess]::Read, [System.IO.FileShare]::ReadWrite)
            try {
                $reader = New-Object System.IO.StreamReader($stream, $true)
                $lineCount = 0
                while ($lineCount -lt $maxErrorLogLines -and $stream.Position -le $maxErrorLogBytes -and $null -ne ($line = $reader.ReadLine())) {
                    $lineCount++
                    if (-not $errorLog.found -and $line -match 'Database Instant File Initialization: (enabled|disabled)') {
                        $errorLog.found = $true
                        $errorLog.line = $line.Trim()
                        $errorLog.enabled = ($Matches[1] -eq 'enabled')
                    }
                    if (-not $errorLog.Contains('memory_line') -and $line -match 'Using (conventional memory|locked pages|large pages) in the memory manager\.') {
                        $errorLog.memory_line = $line.Trim()
                        $errorLog.memory_model = $memoryLines[$Matches[0]]
                    }
                    if ($errorLog.found -and $errorLog.Contains('memory_line')) {
                        break
                    }
                }
            }
            finally {
                $stream.Dispose()
            }
        }
        catch {
            $errorLog.found = $false
        }
    }

    $dependents = New-Object System.Collections.Generic.List[object]
    foreach ($dependent in @((Get-Service -Name $serviceName).DependentServices)) {
        $dependents.Add([ordered]@{ name = $dependent.Name; state = (ConvertTo-ServiceState -Status $dependent.Status) })
    }

    return [ordered]@{
        computer_name          = $computerName
        found                  = $true
        installed_instances    = $instance.Installed
        instance               = $instance.Name
        instance_id            = $instance.Id
        version                = [string]$version
        service_name           = $serviceName
        service_state          = [string]$service.State
        process_id             = $processId
        process_start_time     = $processStart
        start_account          = $startAccount
        start_account_sid      = $startAccountSid
        service_sid_type       = [int]$sidType
        tcp_port               = $tcpPort
        startup_parameters     = $startupParameters.ToArray()
        clustered              = $clustered
        right_holders          = $HostFacts.right_holders
        administrators_members = $HostFacts.administrators_members
        group_policy           = $HostFacts.group_policy
        lock_pages             = $HostFacts.lock_pages
        errorlog               = $errorLog
        dependents             = $dependents.ToArray()
        powershell_version     = [string]$PSVersionTable.PSVersion
        execution_policies     = @(Get-ExecutionPolicy -List | ForEach-Object { [ordered]@{ scope = [string]$_.Scope; policy = [string]$_.ExecutionPolicy } })
        hadr                   = (Get-HadrReport -Root $root -InstanceName $instance.Name -InstalledCount @($instance.Installed).Count)
    }
}
