# Account rights through the LSA API of advapi32 (never secedit). SIDs are strings end
# to end; names are translated for display only, and a SID that does not translate
# (an orphaned account) is still listed.
#
# The LSA functions are declared at run time with System.Reflection.Emit
# (TypeBuilder.DefinePInvokeMethod on a dynamic assembly), which takes milliseconds.
# Add-Type would compile C# with csc.exe in every powershell.exe: seconds per call
# (design/winrm-stdin-and-cost-model.md). Every argument is an IntPtr, a
# number or a byte, and structures are written into unmanaged memory by hand, so no
# marshalling of structures or by-reference parameters is involved.

function New-LsaNativeType {
    $assemblyName = New-Object System.Reflection.AssemblyName('MssqlifiLsaNative')
    $assembly = [AppDomain]::CurrentDomain.DefineDynamicAssembly($assemblyName, [System.Reflection.Emit.AssemblyBuilderAccess]::Run)
    $module = $assembly.DefineDynamicModule('MssqlifiLsaNative')
    $builder = $module.DefineType('MssqlifiLsaNative', [System.Reflection.TypeAttributes]'Public, Class, Abstract, Sealed')
    # Name, return type (NTSTATUS or ULONG as UInt32), parameter types.
    $signatures = @(
        @('LsaOpenPolicy', [uint32], @([IntPtr], [IntPtr], [uint32], [IntPtr])),
        @('LsaEnumerateAccountsWithUserRight', [uint32], @([IntPtr], [IntPtr], [IntPtr], [IntPtr])),
        @('LsaAddAccountRights', [uint32], @([IntPtr], [IntPtr], [IntPtr], [uint32])),
        @('LsaRemoveAccountRights', [uint32], @([IntPtr], [IntPtr], [byte], [IntPtr], [uint32])),
        @('LsaNtStatusToWinError', [uint32], @([uint32])),
        @('LsaFreeMemory', [uint32], @([IntPtr])),
        @('LsaClose', [uint32], @([IntPtr])),
        # Not LSA, but advapi32 as well: a registry key's last write time, which
        # .NET's RegistryKey does not expose (instance_report.ps1, Get-HadrReport).
        @('RegQueryInfoKey', [uint32], @([IntPtr], [IntPtr], [IntPtr], [IntPtr], [IntPtr], [IntPtr], [IntPtr], [IntPtr], [IntPtr], [IntPtr], [IntPtr], [IntPtr]))
    )
    foreach ($signature in $signatures) {
        $method = $builder.DefinePInvokeMethod(
            [string]$signature[0],
            'advapi32.dll',
            [System.Reflection.MethodAttributes]'Public, Static, PinvokeImpl',
            [System.Reflection.CallingConventions]::Standard,
            [Type]$signature[1],
            [Type[]]$signature[2],
            [System.Runtime.InteropServices.CallingConvention]::Winapi,
            [System.Runtime.InteropServices.CharSet]::Unicode)
        # Return the NTSTATUS as it is (without PreserveSig the call returns nothing).
        $flags = [int]$method.GetMethodImplementationFlags() -bor [int][System.Reflection.MethodImplAttributes]::PreserveSig
        $method.SetImplementationFlags([System.Reflection.MethodImplAttributes]$flags)
    }
    return $builder.CreateType()
}

$mssqlifiLsa = New-LsaNativeType
$mssqlifiMarshal = [System.Runtime.InteropServices.Marshal]

# Access masks and NTSTATUS values (ntsecapi.h, ntstatus.h). The statuses are written
# in decimal: a hexadecimal literal above 0x7FFFFFFF is a negative Int32 in PowerShell.
$mssqlifiPolicyViewLocalInformation = [uint32]1      # POLICY_VIEW_LOCAL_INFORMATION 0x00000001
$mssqlifiPolicyCreateAccount = [uint32]16            # POLICY_CREATE_ACCOUNT 0x00000010
$mssqlifiPolicyLookupNames = [uint32]2048            # POLICY_LOOKUP_NAMES 0x00000800
$mssqlifiStatusNoMoreEntries = [uint32]2147483674    # STATUS_NO_MORE_ENTRIES 0x8000001A
$mssqlifiStatusNameNotFound = [uint32]3221225524     # STATUS_OBJECT_NAME_NOT_FOUND 0xC0000034

function New-LsaFailure {
    param([string] $Call, [uint32] $Status)
    $win32 = [int]$mssqlifiLsa::LsaNtStatusToWinError($Status)
    $text = (New-Object System.ComponentModel.Win32Exception($win32)).Message
    return (New-Object System.ComponentModel.Win32Exception($win32, ('{0} failed: {1} (NTSTATUS 0x{2:X8})' -f $Call, $text, $Status)))
}

# Opens the local policy; the caller closes the handle with LsaClose.
function Open-LsaPolicy {
    param([uint32] $Access)
    # LSA_OBJECT_ATTRIBUTES: six pointer-sized fields (with padding), all zero but
    # Length.
    $size = 6 * [IntPtr]::Size
    $attributes = $mssqlifiMarshal::AllocHGlobal($size)
    $handleOut = $mssqlifiMarshal::AllocHGlobal([IntPtr]::Size)
    try {
        for ($offset = 0; $offset -lt $size; $offset += [IntPtr]::Size) {
            $mssqlifiMarshal::WriteIntPtr($attributes, $offset, [IntPtr]::Zero)
        }
        $mssqlifiMarshal::WriteInt32($attributes, 0, $size)
        $mssqlifiMarshal::WriteIntPtr($handleOut, [IntPtr]::Zero)
        $status = [uint32]$mssqlifiLsa::LsaOpenPolicy([IntPtr]::Zero, $attributes, $Access, $handleOut)
        if ($status -ne 0) {
            throw (New-LsaFailure -Call 'LsaOpenPolicy' -Status $status)
        }
        return $mssqlifiMarshal::ReadIntPtr($handleOut)
    }
    finally {
        $mssqlifiMarshal::FreeHGlobal($handleOut)
        $mssqlifiMarshal::FreeHGlobal($attributes)
    }
}

# An LSA_UNICODE_STRING in unmanaged memory: USHORT Length, USHORT MaximumLength, then
# the buffer pointer at offset IntPtr.Size. Free both with Remove-LsaString.
function New-LsaString {
    param([string] $Value)
    $buffer = $mssqlifiMarshal::StringToHGlobalUni($Value)
    $struct = $mssqlifiMarshal::AllocHGlobal(2 * [IntPtr]::Size)
    $mssqlifiMarshal::WriteIntPtr($struct, 0, [IntPtr]::Zero)
    $mssqlifiMarshal::WriteInt16($struct, 0, [int16]($Value.Length * 2))
    $mssqlifiMarshal::WriteInt16($struct, 2, [int16]($Value.Length * 2 + 2))
    $mssqlifiMarshal::WriteIntPtr($struct, [IntPtr]::Size, $buffer)
    return [pscustomobject]@{ Struct = $struct; Buffer = $buffer }
}

function Remove-LsaString {
    param($LsaString)
    $mssqlifiMarshal::FreeHGlobal($LsaString.Buffer)
    $mssqlifiMarshal::FreeHGlobal($LsaString.Struct)
}

# A SID's binary form in unmanaged memory; the caller frees it.
function New-LsaSid {
    param([string] $Sid)
    $identifier = New-Object System.Security.Principal.SecurityIdentifier($Sid)
    $bytes = New-Object byte[] $identifier.BinaryLength
    $identifier.GetBinaryForm($bytes, 0)
    $pointer = $mssqlifiMarshal::AllocHGlobal($bytes.Length)
    $mssqlifiMarshal::Copy($bytes, 0, $pointer, $bytes.Length)
    return $pointer
}

# The SIDs that hold the right directly (no group expansion).
function Get-LsaAccountsWithRight {
    param([Parameter(Mandatory = $true)] [string] $Right)
    $sids = New-Object System.Collections.Generic.List[string]
    $handle = Open-LsaPolicy -Access ($mssqlifiPolicyLookupNames -bor $mssqlifiPolicyViewLocalInformation)
    $name = New-LsaString -Value $Right
    $bufferOut = $mssqlifiMarshal::AllocHGlobal([IntPtr]::Size)
    $countOut = $mssqlifiMarshal::AllocHGlobal(4)
    try {
        $mssqlifiMarshal::WriteIntPtr($bufferOut, [IntPtr]::Zero)
        $mssqlifiMarshal::WriteInt32($countOut, 0)
        $status = [uint32]$mssqlifiLsa::LsaEnumerateAccountsWithUserRight($handle, $name.Struct, $bufferOut, $countOut)
        if ($status -eq $mssqlifiStatusNoMoreEntries) {
            return $sids.ToArray()
        }
        if ($status -ne 0) {
            throw (New-LsaFailure -Call 'LsaEnumerateAccountsWithUserRight' -Status $status)
        }
        $buffer = $mssqlifiMarshal::ReadIntPtr($bufferOut)
        $count = $mssqlifiMarshal::ReadInt32($countOut)
        try {
            # An array of LSA_ENUMERATION_INFORMATION, each one PSID.
            for ($index = 0; $index -lt $count; $index++) {
                $sidPointer = $mssqlifiMarshal::ReadIntPtr($buffer, $index * [IntPtr]::Size)
                $sids.Add((New-Object System.Security.Principal.SecurityIdentifier($sidPointer)).Value)
            }
        }
        finally {
            $null = $mssqlifiLsa::LsaFreeMemory($buffer)
        }
        return $sids.ToArray()
    }
    finally {
        $mssqlifiMarshal::FreeHGlobal($countOut)
        $mssqlifiMarshal::FreeHGlobal($bufferOut)
        Remove-LsaString -LsaString $name
        $null = $mssqlifiLsa::LsaClose($handle)
    }
}

# Adds the right; adding a right already held is a no-op.
function Add-LsaAccountRight {
    param([Parameter(Mandatory = $true)] [string] $Sid, [Parameter(Mandatory = $true)] [string] $Right)
    $handle = Open-LsaPolicy -Access ($mssqlifiPolicyLookupNames -bor $mssqlifiPolicyCreateAccount)
    $name = New-LsaString -Value $Right
    $sidPointer = New-LsaSid -Sid $Sid
    try {
        $status = [uint32]$mssqlifiLsa::LsaAddAccountRights($handle, $sidPointer, $name.Struct, [uint32]1)
        if ($status -ne 0) {
            throw (New-LsaFailure -Call 'LsaAddAccountRights' -Status $status)
        }
    }
    finally {
        $mssqlifiMarshal::FreeHGlobal($sidPointer)
        Remove-LsaString -LsaString $name
        $null = $mssqlifiLsa::LsaClose($handle)
    }
}

# Removes the right only (AllRights = FALSE); an account without it is a no-op.
function Remove-LsaAccountRight {
    param([Parameter(Mandatory = $true)] [string] $Sid, [Parameter(Mandatory = $true)] [string] $Right)
    $handle = Open-LsaPolicy -Access $mssqlifiPolicyLookupNames
    $name = New-LsaString -Value $Right
    $sidPointer = New-LsaSid -Sid $Sid
    try {
        $status = [uint32]$mssqlifiLsa::LsaRemoveAccountRights($handle, $sidPointer, [byte]0, $name.Struct, [uint32]1)
        if ($status -ne 0 -and $status -ne $mssqlifiStatusNameNotFound) {
            throw (New-LsaFailure -Call 'LsaRemoveAccountRights' -Status $status)
        }
    }
    finally {
        $mssqlifiMarshal::FreeHGlobal($sidPointer)
        Remove-LsaString -LsaString $name
        $null = $mssqlifiLsa::LsaClose($handle)
    }
}

# A contract Principal: the SID, with the account name when one is given.
function New-Principal {
    param([string] $Sid, [string] $Name)
    $principal = [ordered]@{ sid = $Sid }
    if ($Name) {
        $principal.name = $Name
    }
    return $principal
}

# The account name of a SID, or '' when Windows cannot translate it (an orphaned
# account). A lookup can reach a domain controller: translate only what is shown.
function Get-SidName {
    param([string] $Sid)
    try {
        $identifier = New-Object System.Security.Principal.SecurityIdentifier($Sid)
        return $identifier.Translate([System.Security.Principal.NTAccount]).Value
    }
    catch {
        return ''
    }
}

# The direct holders of a right, as a List of principals; -Translate adds names.
function Get-RightHolder {
    param([Parameter(Mandatory = $true)] [string] $Right, [switch] $Translate)
    $holders = New-Object System.Collections.Generic.List[object]
    foreach ($sid in (Get-LsaAccountsWithRight -Right $Right)) {
        $name = ''
        if ($Translate) {
            $name = Get-SidName -Sid $sid
        }
        $holders.Add((New-Principal -Sid $sid -Name $name))
    }
    return , $holders
}
