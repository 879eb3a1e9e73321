// Package winsid computes Windows security identifiers that can be derived offline.
//
// A per-service SID ("NT SERVICE\<name>") is S-1-5-80- followed by the SHA-1 of the
// upper-cased service name in UTF-16LE, read as five little-endian uint32 values.
// Computing it locally avoids LookupAccountName, which fails with error 1332 for a
// mistyped name or a machine with a broken domain trust.
package winsid

import (
	"crypto/sha1" // SHA-1 is what Windows uses for service SIDs; not a security choice of ours.
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/utf16le"
)

// Well-known SIDs the provider and the simulator reason about.
const (
	LocalSystem        = "S-1-5-18"
	LocalService       = "S-1-5-19"
	NetworkService     = "S-1-5-20"
	Administrators     = "S-1-5-32-544"
	Users              = "S-1-5-32-545"
	Everyone           = "S-1-1-0"
	AuthenticatedUsers = "S-1-5-11"
	ServiceLogon       = "S-1-5-6"
	// AllServices is NT SERVICE\ALL SERVICES, "a group that includes all service
	// processes that are configured on the system" (Microsoft Learn, "Security
	// identifiers", well-known SIDs). The provider and the simulator count it in the
	// token of a service whose SID type is unrestricted or restricted only
	// (FIDELITY.md, "NT SERVICE\ALL SERVICES").
	AllServices = "S-1-5-80-0"
)

// ServiceSID returns the per-service SID of the named service, as Windows computes it.
func ServiceSID(serviceName string) string {
	sum := sha1.Sum(utf16le.Encode(strings.ToUpper(serviceName)))
	var sb strings.Builder
	sb.WriteString("S-1-5-80")
	for i := 0; i < 5; i++ {
		fmt.Fprintf(&sb, "-%d", binary.LittleEndian.Uint32(sum[4*i:]))
	}
	return sb.String()
}

// ServiceAccountName is the account name of a per-service SID: NT SERVICE\<name>.
func ServiceAccountName(serviceName string) string {
	return `NT SERVICE\` + serviceName
}

// WellKnownAccountSID maps the start-account spellings Windows uses for built-in
// service accounts to their SIDs. ok is false for any other account.
func WellKnownAccountSID(account string) (sid string, ok bool) {
	a := strings.ToLower(strings.TrimSpace(account))
	switch a {
	case "localsystem", `nt authority\system`, ".\\localsystem", "system":
		return LocalSystem, true
	case `nt authority\localservice`, `nt authority\local service`:
		return LocalService, true
	case `nt authority\networkservice`, `nt authority\network service`:
		return NetworkService, true
	}
	if rest, found := strings.CutPrefix(a, `nt service\`); found && rest != "" {
		return ServiceSID(rest), true
	}
	return "", false
}
