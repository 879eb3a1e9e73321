package sqlcheck

import (
	"errors"
	"testing"
)

// The login rules live here only: the provider maps each finding to its argument.
func TestConfigFindings(t *testing.T) {
	cases := []struct {
		name     string
		cfg      Config
		problem  error   // nil: none
		setting  Setting // of the problem
		warnings []error
	}{
		{"defaults", Config{Username: "check", Password: "p"}, nil, SettingNone, nil},
		{"windows name as a SQL login", Config{Username: `CONTOSO\check`, Password: "p"}, ErrAuthMismatch, SettingAuth, nil},
		{"windows name with ntlm", Config{Username: `CONTOSO\check`, Password: "p", Auth: "NTLM"}, nil, SettingNone, nil},
		{"ntlm without a domain", Config{Username: "check", Password: "p", Auth: AuthNTLM}, ErrAuthMismatch, SettingAuth, nil},
		{"kerberos with a password", Config{Username: "check@MSSQLIFI.TEST", Password: "p", Auth: AuthKerberos}, nil, SettingNone, nil},
		{"kerberos with a keytab", Config{Username: `MSSQLIFI\check`, Keytab: "/k", Auth: AuthKerberos}, nil, SettingNone, nil},
		{"kerberos from the credential cache", Config{Auth: AuthKerberos}, nil, SettingNone, nil},
		{"kerberos password without user", Config{Password: "p", Auth: AuthKerberos}, ErrNoUsername, SettingUsername, nil},
		{"kerberos keytab without user", Config{Keytab: "/k", Auth: AuthKerberos}, ErrNoUsername, SettingUsername, nil},
		{"kerberos spn", Config{Auth: AuthKerberos, SPN: "MSSQLSvc/sql01.mssqlifi.test:1433"}, nil, SettingNone, nil},
		{"kerberos bad spn", Config{Auth: AuthKerberos, SPN: "sql01.mssqlifi.test"}, ErrSPN, SettingSPN, nil},
		{"keytab with a SQL login", Config{Username: "check", Password: "p", Keytab: "/k"}, ErrKerberosOnly, SettingKeytab, nil},
		{"spn with ntlm", Config{Username: `CONTOSO\check`, Password: "p", Auth: AuthNTLM, SPN: "MSSQLSvc/x:1"}, ErrKerberosOnly, SettingSPN, nil},
		{"unknown kind", Config{Username: "check", Password: "p", Auth: "certificate"}, ErrUnsupportedAuth, SettingAuth, nil},
		{"no user", Config{Password: "p"}, ErrNoUsername, SettingUsername, nil},
		{"no password", Config{Username: "check"}, ErrNoPassword, SettingPassword, nil},
		{"bad encrypt", Config{Username: "check", Password: "p", Encrypt: "maybe"}, ErrEncrypt, SettingEncrypt, nil},
		{"clear text", Config{Username: "check", Password: "p", Encrypt: "Disable"}, nil, SettingNone, []error{WarnClearTextPassword}},
		{"unverified", Config{Username: "check", Password: "p", TrustServerCertificate: true}, nil, SettingNone, []error{WarnUnverifiedCertificate}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps := tc.cfg.Problems()
			switch {
			case tc.problem == nil && len(ps) > 0:
				t.Errorf("Problems = %v, want none", ps)
			case tc.problem != nil && (len(ps) != 1 || !errors.Is(ps[0], tc.problem) || ps[0].Setting != tc.setting):
				t.Errorf("Problems = %v, want one %v at setting %d", ps, tc.problem, tc.setting)
			}
			ws := tc.cfg.Warnings()
			if len(ws) != len(tc.warnings) {
				t.Fatalf("Warnings = %v, want %v", ws, tc.warnings)
			}
			for i, w := range tc.warnings {
				if !errors.Is(ws[i], w) {
					t.Errorf("warning %d = %v, want %v", i, ws[i], w)
				}
			}
		})
	}
	c := Config{}
	c.SetDefaults()
	if c.Encrypt != DefaultEncrypt || c.Auth != DefaultAuth {
		t.Errorf("SetDefaults: encrypt %q auth %q, want %q and %q", c.Encrypt, c.Auth, DefaultEncrypt, DefaultAuth)
	}
}
