package winsim

import (
	"fmt"
	"strings"
	"time"

	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/wsman"
)

// wsmanKerberos loads a host's keytab for its WinRM listeners, or returns nil
// when the host has no "kerberos" block.
func wsmanKerberos(hc host.HostConfig) (*wsman.KerberosConfig, error) {
	kc := hostKerberos(hc)
	if kc == nil {
		return nil, nil
	}
	where := fmt.Sprintf("host %s: winrm.kerberos", hc.Name)
	if strings.TrimSpace(kc.Realm) == "" {
		return nil, fmt.Errorf(`%s: "realm" is empty: give the domain's Kerberos realm, such as "MSSQLIFI.TEST"`, where)
	}
	if hc.Domain == "" {
		return nil, fmt.Errorf(`%s: the host has no "domain": Kerberos users log on as DOMAIN\user, so set the host's NetBIOS domain (e.g. "MSSQLIFI")`, where)
	}
	if kc.Keytab == "" {
		return nil, fmt.Errorf(`%s: "keytab" is empty: give the path of a keytab with the host's HTTP/<fqdn>@%s keys (kadmin.local ktadd -k FILE HTTP/<fqdn>)`, where, kc.Realm)
	}
	kt, err := keytab.Load(kc.Keytab)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot load the keytab %s: %w (export the host's service keys with kadmin ktadd or ktpass)", where, kc.Keytab, err)
	}
	if kc.ExtraCount < 0 || kc.ExtraCount > 0xffff {
		return nil, fmt.Errorf("%s: extra_count %d is not a 16-bit count of filler bytes", where, kc.ExtraCount)
	}
	return &wsman.KerberosConfig{Keytab: kt, Realm: strings.ToUpper(kc.Realm), AcceptorSubkey: kc.AcceptorSubkey, ExtraCount: kc.ExtraCount,
		ClockOffset: time.Duration(kc.ClockOffsetSeconds) * time.Second}, nil
}
