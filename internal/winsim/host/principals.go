package host

import (
	"crypto/sha1" // only to derive stable fake machine/domain SIDs
	"encoding/binary"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// wellKnownNames are the SIDs every Windows host translates (LookupAccountSid).
var wellKnownNames = map[string]string{
	winsid.Administrators:     `BUILTIN\Administrators`,
	winsid.Users:              `BUILTIN\Users`,
	"S-1-5-32-551":            `BUILTIN\Backup Operators`,
	"S-1-5-32-555":            `BUILTIN\Remote Desktop Users`,
	"S-1-5-32-580":            `BUILTIN\Remote Management Users`,
	winsid.LocalSystem:        `NT AUTHORITY\SYSTEM`,
	winsid.LocalService:       `NT AUTHORITY\LOCAL SERVICE`,
	winsid.NetworkService:     `NT AUTHORITY\NETWORK SERVICE`,
	winsid.Everyone:           `Everyone`,
	winsid.AuthenticatedUsers: `NT AUTHORITY\Authenticated Users`,
	winsid.ServiceLogon:       `NT AUTHORITY\SERVICE`,
	winsid.AllServices:        `NT SERVICE\ALL SERVICES`,
}

// sidPattern is the string form ConvertStringSidToSid accepts: S-1-<authority>
// followed by one to fifteen sub-authorities.
var sidPattern = regexp.MustCompile(`^[Ss]-1-[0-9]+(-[0-9]+){1,15}$`)

// ParseSID checks a SID's syntax as ConvertStringSidToSid would (revision 1, a 48-bit
// identifier authority, 1 to 15 32-bit sub-authorities) and returns it with an
// upper-case "S". The set_right and read_instance operations reject other strings
// with invalid_parameters.
func ParseSID(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !sidPattern.MatchString(s) {
		return "", fmt.Errorf("%q is not a SID in string form (S-1-<authority>-<sub-authority>..., at most 15 sub-authorities)", s)
	}
	parts := strings.Split(s, "-")
	if a, err := strconv.ParseUint(parts[2], 10, 64); err != nil || a >= 1<<48 {
		return "", fmt.Errorf("%q: the identifier authority %s does not fit 48 bits", s, parts[2])
	}
	for _, p := range parts[3:] {
		if _, err := strconv.ParseUint(p, 10, 32); err != nil {
			return "", fmt.Errorf("%q: the sub-authority %s does not fit 32 bits", s, p)
		}
	}
	return "S" + s[1:], nil
}

// derivedSID returns a stable S-1-5-21-x-y-z prefix for a machine or domain name, so
// the same configuration always yields the same SIDs.
func derivedSID(seed string) string {
	sum := sha1.Sum([]byte(strings.ToUpper(seed)))
	return fmt.Sprintf("S-1-5-21-%d-%d-%d",
		binary.LittleEndian.Uint32(sum[0:])%4000000000,
		binary.LittleEndian.Uint32(sum[4:])%4000000000,
		binary.LittleEndian.Uint32(sum[8:])%4000000000)
}

// rightNames lists the privileges and account rights Windows knows; the LSA answers
// STATUS_NO_SUCH_PRIVILEGE for any other name.
var rightNames = func() map[string]string {
	names := []string{
		"SeAssignPrimaryTokenPrivilege", "SeAuditPrivilege", "SeBackupPrivilege",
		"SeChangeNotifyPrivilege", "SeCreateGlobalPrivilege", "SeCreatePagefilePrivilege",
		"SeCreatePermanentPrivilege", "SeCreateSymbolicLinkPrivilege", "SeCreateTokenPrivilege",
		"SeDebugPrivilege", "SeDelegateSessionUserImpersonatePrivilege", "SeEnableDelegationPrivilege",
		"SeImpersonatePrivilege", "SeIncreaseBasePriorityPrivilege", "SeIncreaseQuotaPrivilege",
		"SeIncreaseWorkingSetPrivilege", "SeLoadDriverPrivilege", "SeLockMemoryPrivilege",
		"SeMachineAccountPrivilege", "SeManageVolumePrivilege", "SeProfileSingleProcessPrivilege",
		"SeRelabelPrivilege", "SeRemoteShutdownPrivilege", "SeRestorePrivilege", "SeSecurityPrivilege",
		"SeShutdownPrivilege", "SeSyncAgentPrivilege", "SeSystemEnvironmentPrivilege",
		"SeSystemProfilePrivilege", "SeSystemtimePrivilege", "SeTakeOwnershipPrivilege",
		"SeTcbPrivilege", "SeTimeZonePrivilege", "SeTrustedCredManAccessPrivilege", "SeUndockPrivilege",
		"SeBatchLogonRight", "SeDenyBatchLogonRight", "SeDenyInteractiveLogonRight",
		"SeDenyNetworkLogonRight", "SeDenyRemoteInteractiveLogonRight", "SeDenyServiceLogonRight",
		"SeInteractiveLogonRight", "SeNetworkLogonRight", "SeRemoteInteractiveLogonRight",
		"SeServiceLogonRight",
	}
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[strings.ToLower(n)] = n
	}
	return m
}()

// rightNamePattern is the syntax the operations' scripts accept for a right name
// before the LSA is asked about it (common.ps1 Test-RightName, case-sensitive).
var rightNamePattern = regexp.MustCompile(`^Se[A-Za-z]+Privilege$`)

// canonicalRight returns the right's canonical spelling, or false when Windows does
// not know it.
func canonicalRight(right string) (string, bool) {
	n, ok := rightNames[strings.ToLower(strings.TrimSpace(right))]
	return n, ok
}
