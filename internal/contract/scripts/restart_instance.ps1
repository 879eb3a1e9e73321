# restart_instance: restart the Engine and the dependents that were running, as
# Restart-Service -Force does (stop the dependents and the Engine, start the Engine),
# then start those dependents again. The start is split out of Restart-Service so the
# wait honours the timeout (Start-Service waits without a limit).
# Parameters: $Params.instance, $Params.timeout_seconds.
$instanceName = [string]$Params.instance
$timeoutSeconds = 0
if (-not (Test-SqlInstanceName -Name $instanceName)) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "'$instanceName' is not a SQL Server instance name."
}
if (-not [int]::TryParse([string]$Params.timeout_seconds, [ref]$timeoutSeconds) -or $timeoutSeconds -lt 1 -or $timeoutSeconds -gt 86400) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message 'timeout_seconds must be a whole number of seconds between 1 and 86400.'
}

$computerName = $env:COMPUTERNAME
$instance = Find-SqlInstance -Name $instanceName
if (-not $instance.Name) {
    Exit-WithError -Code 5 -ErrorName 'not_found' -Message "SQL Server instance $instanceName is not installed on $computerName."
}
$serviceName = $instance.ServiceName
if ($serviceName -notmatch '^[A-Za-z0-9_$]+\z') {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "'$serviceName' is not a SQL Server service name."
}
if (Test-Path -LiteralPath "$($instance.Root)\Cluster") {
    Exit-WithError -Code 3 -ErrorName 'clustered' -Message "$instanceName on $computerName is a failover cluster instance: it must not be stopped through the service control manager. Restart its SQL Server resource through the cluster (Failover Cluster Manager, or Stop-ClusterResource/Start-ClusterResource)."
}
$engine = Get-Service -Name $serviceName -ErrorAction SilentlyContinue
if (-not $engine) {
    Exit-WithError -Code 5 -ErrorName 'not_found' -Message "The service $serviceName of instance $instanceName does not exist on $computerName."
}

$deadline = [DateTime]::UtcNow.AddSeconds($timeoutSeconds)
$startedAt = Format-UtcTime -Time ([DateTime]::UtcNow)
$stopped = New-Object System.Collections.Generic.List[string]
$started = New-Object System.Collections.Generic.List[string]

# DependentServices lists them in the order they stop.
$runningDependents = @($engine.DependentServices | Where-Object { $_.Status -eq 'Running' })
foreach ($dependent in $runningDependents) {
    $stopped.Add($dependent.Name)
}
if ($engine.Status -ne 'Stopped') {
    $stopped.Add($serviceName)
}
Stop-Service -Name $serviceName -Force

function Wait-Running {
    param($Service)
    $left = $deadline - [DateTime]::UtcNow
    if ($left -lt [TimeSpan]::Zero) {
        $left = [TimeSpan]::Zero
    }
    try {
        $Service.WaitForStatus([System.ServiceProcess.ServiceControllerStatus]::Running, $left)
    }
    catch {
        $null = $_
    }
    $Service.Refresh()
    if ($Service.Status -ne 'Running') {
        Exit-WithError -Code 4 -ErrorName 'timeout' -Message "$($Service.Name) on $computerName did not reach Running within $timeoutSeconds seconds (it is $(ConvertTo-ServiceState -Status $Service.Status)). Look at the service's event log and the SQL Server error log."
    }
}

$engine.Refresh()
$engine.Start()
$started.Add($serviceName)
Wait-Running -Service $engine
$finishedAt = Format-UtcTime -Time ([DateTime]::UtcNow)

[array]::Reverse($runningDependents)
foreach ($dependent in $runningDependents) {
    $dependent.Refresh()
    if ($dependent.Status -ne 'Running') {
        $dependent.Start()
        $started.Add($dependent.Name)
        Wait-Running -Service $dependent
    }
}

$service = Get-CimInstance -ClassName Win32_Service -Filter "Name = '$serviceName'" | Select-Object -First 1
Write-Result -Value ([ordered]@{
        service_name       = $serviceName
        stopped            = $stopped.ToArray()
        started            = $started.ToArray()
        service_state      = [string]$service.State
        process_start_time = (Get-ServiceProcessStart -ProcessId ([int]$service.ProcessId))
        started_at         = $startedAt
        finished_at        = $finishedAt
    })
