# read_host: several instances of this host in one process, each as read_instance
# reports it (Get-InstanceReport, instance_report.ps1), the host-wide part read once.
# Reads only. Parameters: $Params.instances (empty: every installed instance whose
# name has an instance name's syntax), $Params.right.
$right = [string]$Params.right
if (-not (Test-RightName -Name $right)) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "'$right' is not a user right name (Se...Privilege)."
}
$maxInstances = 50
# $null piped on runs ForEach-Object once (about_Pipelines), so a null list is none.
$names = @()
if ($null -ne $Params.instances) {
    $names = @($Params.instances | ForEach-Object { [string]$_ })
}
if ($names.Count -gt $maxInstances) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "read_host reads at most $maxInstances instances; $($names.Count) were asked."
}
foreach ($name in $names) {
    if (-not (Test-SqlInstanceName -Name $name)) {
        Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "'$name' is not a SQL Server instance name (MSSQLSERVER, or 1-16 letters, digits, _ or `$ starting with a letter or _)."
    }
}
$installed = @((Find-SqlInstance -Name '').Installed)
if ($names.Count -eq 0) {
    $names = @($installed | Where-Object { Test-SqlInstanceName -Name $_ })
}

$facts = Get-HostRightFact -Right $right
$reports = New-Object System.Collections.Generic.List[object]
foreach ($name in $names) {
    $reports.Add((Get-InstanceReport -InstanceName $name -Right $right -HostFacts $facts))
}
Write-Result -Value ([ordered]@{
        computer_name       = $env:COMPUTERNAME
        installed_instances = $installed
        instances           = $reports.ToArray()
    })
