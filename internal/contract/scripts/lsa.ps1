# Account rights through the LSA API of advapi32 (never secedit). SIDs are strings end
# to end; names are translated for display only, and a SID that does not translate
# (an orphaned account) is still listed.
if (-not ('Mssqlifi.Lsa' -as [type])) {
    Add-Type -TypeDefinition @'
using System;
using System.Collections.Generic;
using System.ComponentModel;
using System.Runtime.InteropServices;
using System.Security.Principal;

namespace Mssqlifi
{
    public static class Lsa
    {
        [StructLayout(LayoutKind.Sequential)]
        private struct LSA_UNICODE_STRING
        {
            public ushort Length;
            public ushort MaximumLength;
            public IntPtr Buffer;
        }

        [StructLayout(LayoutKind.Sequential)]
        private struct LSA_OBJECT_ATTRIBUTES
        {
            public int Length;
            public IntPtr RootDirectory;
            public IntPtr ObjectName;
            public uint Attributes;
            public IntPtr SecurityDescriptor;
            public IntPtr SecurityQualityOfService;
        }

        private const uint POLICY_VIEW_LOCAL_INFORMATION = 0x00000001;
        private const uint POLICY_CREATE_ACCOUNT = 0x00000010;
        private const uint POLICY_LOOKUP_NAMES = 0x00000800;
        private const uint STATUS_SUCCESS = 0x00000000;
        private const uint STATUS_NO_MORE_ENTRIES = 0x8000001A;
        private const uint STATUS_OBJECT_NAME_NOT_FOUND = 0xC0000034;

        [DllImport("advapi32.dll")]
        private static extern uint LsaOpenPolicy(IntPtr systemName, ref LSA_OBJECT_ATTRIBUTES objectAttributes, uint desiredAccess, out IntPtr policyHandle);

        [DllImport("advapi32.dll")]
        private static extern uint LsaEnumerateAccountsWithUserRight(IntPtr policyHandle, ref LSA_UNICODE_STRING userRight, out IntPtr buffer, out uint countReturned);

        [DllImport("advapi32.dll")]
        private static extern uint LsaAddAccountRights(IntPtr policyHandle, byte[] accountSid, LSA_UNICODE_STRING[] userRights, uint countOfRights);

        [DllImport("advapi32.dll")]
        private static extern uint LsaRemoveAccountRights(IntPtr policyHandle, byte[] accountSid, [MarshalAs(UnmanagedType.U1)] bool allRights, LSA_UNICODE_STRING[] userRights, uint countOfRights);

        [DllImport("advapi32.dll")]
        private static extern int LsaNtStatusToWinError(uint status);

        [DllImport("advapi32.dll")]
        private static extern uint LsaFreeMemory(IntPtr buffer);

        [DllImport("advapi32.dll")]
        private static extern uint LsaClose(IntPtr policyHandle);

        private static Exception Failure(string call, uint status)
        {
            int win32 = LsaNtStatusToWinError(status);
            return new Win32Exception(win32, string.Format("{0} failed: {1} (NTSTATUS 0x{2:X8})", call, new Win32Exception(win32).Message, status));
        }

        private static IntPtr Open(uint access)
        {
            LSA_OBJECT_ATTRIBUTES attributes = new LSA_OBJECT_ATTRIBUTES();
            attributes.Length = Marshal.SizeOf(typeof(LSA_OBJECT_ATTRIBUTES));
            IntPtr handle;
            uint status = LsaOpenPolicy(IntPtr.Zero, ref attributes, access, out handle);
            if (status != STATUS_SUCCESS)
            {
                throw Failure("LsaOpenPolicy", status);
            }
            return handle;
        }

        private static LSA_UNICODE_STRING ToLsaString(string value)
        {
            LSA_UNICODE_STRING s = new LSA_UNICODE_STRING();
            s.Buffer = Marshal.StringToHGlobalUni(value);
            s.Length = (ushort)(value.Length * 2);
            s.MaximumLength = (ushort)(value.Length * 2 + 2);
            return s;
        }

        private static byte[] SidBytes(string sid)
        {
            SecurityIdentifier identifier = new SecurityIdentifier(sid);
            byte[] bytes = new byte[identifier.BinaryLength];
            identifier.GetBinaryForm(bytes, 0);
            return bytes;
        }

        // The SIDs that hold the right directly (no group expansion).
        public static string[] GetAccountsWithRight(string right)
        {
            List<string> sids = new List<string>();
            IntPtr handle = Open(POLICY_LOOKUP_NAMES | POLICY_VIEW_LOCAL_INFORMATION);
            LSA_UNICODE_STRING name = ToLsaString(right);
            try
            {
                IntPtr buffer;
                uint count;
                uint status = LsaEnumerateAccountsWithUserRight(handle, ref name, out buffer, out count);
                if (status == STATUS_NO_MORE_ENTRIES)
                {
                    return sids.ToArray();
                }
                if (status != STATUS_SUCCESS)
                {
                    throw Failure("LsaEnumerateAccountsWithUserRight", status);
                }
                try
                {
                    for (int i = 0; i < count; i++)
                    {
                        IntPtr sidPointer = Marshal.ReadIntPtr(buffer, i * IntPtr.Size);
                        sids.Add(new SecurityIdentifier(sidPointer).Value);
                    }
                }
                finally
                {
                    LsaFreeMemory(buffer);
                }
                return sids.ToArray();
            }
            finally
            {
                Marshal.FreeHGlobal(name.Buffer);
                LsaClose(handle);
            }
        }

        // Adds the right; adding a right already held is a no-op.
        public static void AddRight(string sid, string right)
        {
            IntPtr handle = Open(POLICY_LOOKUP_NAMES | POLICY_CREATE_ACCOUNT);
            LSA_UNICODE_STRING[] rights = new LSA_UNICODE_STRING[] { ToLsaString(right) };
            try
            {
                uint status = LsaAddAccountRights(handle, SidBytes(sid), rights, 1);
                if (status != STATUS_SUCCESS)
                {
                    throw Failure("LsaAddAccountRights", status);
                }
            }
            finally
            {
                Marshal.FreeHGlobal(rights[0].Buffer);
                LsaClose(handle);
            }
        }

        // Removes the right only (AllRights = false); an account without it is a no-op.
        public static void RemoveRight(string sid, string right)
        {
            IntPtr handle = Open(POLICY_LOOKUP_NAMES);
            LSA_UNICODE_STRING[] rights = new LSA_UNICODE_STRING[] { ToLsaString(right) };
            try
            {
                uint status = LsaRemoveAccountRights(handle, SidBytes(sid), false, rights, 1);
                if (status != STATUS_SUCCESS && status != STATUS_OBJECT_NAME_NOT_FOUND)
                {
                    throw Failure("LsaRemoveAccountRights", status);
                }
            }
            finally
            {
                Marshal.FreeHGlobal(rights[0].Buffer);
                LsaClose(handle);
            }
        }
    }
}
'@
}

# A contract Principal: the SID, with the account name when Windows can translate it.
function New-Principal {
    param([string] $Sid, [string] $Name)
    if (-not $Name) {
        try {
            $identifier = New-Object System.Security.Principal.SecurityIdentifier($Sid)
            $Name = $identifier.Translate([System.Security.Principal.NTAccount]).Value
        }
        catch {
            $Name = ''
        }
    }
    $principal = [ordered]@{ sid = $Sid }
    if ($Name) {
        $principal.name = $Name
    }
    return $principal
}

# The direct holders of a right, as a List of principals.
function Get-RightHolder {
    param([Parameter(Mandatory = $true)] [string] $Right)
    $holders = New-Object System.Collections.Generic.List[object]
    foreach ($sid in [Mssqlifi.Lsa]::GetAccountsWithRight($Right)) {
        $holders.Add((New-Principal -Sid $sid))
    }
    return , $holders
}
