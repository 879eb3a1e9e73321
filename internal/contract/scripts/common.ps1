# Shared by every operation: result and error output in the contract's shapes.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

function Write-Result {
    param([Parameter(Mandatory = $true)] $Value)
    [Console]::Out.Write((ConvertTo-Json -InputObject $Value -Depth 6 -Compress))
    exit 0
}

function Exit-WithError {
    param(
        [Parameter(Mandatory = $true)] [int] $Code,
        [Parameter(Mandatory = $true)] [string] $ErrorName,
        [Parameter(Mandatory = $true)] [string] $Message
    )
    [Console]::Out.Write((ConvertTo-Json -InputObject ([ordered]@{ error = $ErrorName; message = $Message }) -Compress))
    exit $Code
}
