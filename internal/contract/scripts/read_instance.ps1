# read_instance: everything the provider needs about one SQL Server instance, in one
# call (Get-InstanceReport, instance_report.ps1). Reads only. Parameters:
# $Params.instance, $Params.right.
$instanceName = [string]$Params.instance
$right = [string]$Params.right
if (-not (Test-SqlInstanceName -Name $instanceName)) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "'$instanceName' is not a SQL Server instance name (MSSQLSERVER, or 1-16 letters, digits, _ or `$ starting with a letter or _)."
}
if (-not (Test-RightName -Name $right)) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "'$right' is not a user right name (Se...Privilege)."
}

Write-Result -Value (Get-InstanceReport -InstanceName $instanceName -Right $right)
