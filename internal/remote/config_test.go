package remote

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSetDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Config
		want Config
	}{
		{"http", Config{}, Config{Port: 5985, Auth: "negotiate", Timeout: 60 * time.Second}},
		{"https", Config{HTTPS: true}, Config{HTTPS: true, Port: 5986, Auth: "negotiate", Timeout: 60 * time.Second}},
		{"explicit port kept", Config{HTTPS: true, Port: 15986}, Config{HTTPS: true, Port: 15986, Auth: "negotiate", Timeout: 60 * time.Second}},
		{"auth lower-cased", Config{Auth: " Basic "}, Config{Port: 5985, Auth: "basic", Timeout: 60 * time.Second}},
		{"timeout kept", Config{Timeout: 5 * time.Second}, Config{Port: 5985, Auth: "negotiate", Timeout: 5 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in
			got.SetDefaults()
			if got.Port != tc.want.Port || got.Auth != tc.want.Auth || got.Timeout != tc.want.Timeout || got.HTTPS != tc.want.HTTPS {
				t.Errorf("SetDefaults(%+v) = port %d auth %q timeout %v; want port %d auth %q timeout %v",
					tc.in, got.Port, got.Auth, got.Timeout, tc.want.Port, tc.want.Auth, tc.want.Timeout)
			}
			again := got
			again.SetDefaults()
			if again.Port != got.Port || again.Auth != got.Auth || again.Timeout != got.Timeout {
				t.Errorf("SetDefaults is not idempotent: %+v then %+v", got, again)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ok := Config{Host: "sql01", Username: "u", Password: "p"}
	ok.SetDefaults()
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(%+v) = %v; want nil", ok, err)
	}
	for _, tc := range []struct {
		name     string
		mutate   func(*Config)
		sentinel error
		setting  Setting
	}{
		{"no host", func(c *Config) { c.Host = " " }, ErrNoHost, SettingHost},
		{"no username", func(c *Config) { c.Username = "" }, ErrNoUsername, SettingUsername},
		{"kerberos without a user but a password", func(c *Config) { c.Auth, c.Username = "kerberos", "" }, ErrNoUsername, SettingUsername},
		{"kerberos with allow_unencrypted", func(c *Config) { c.Auth, c.AllowUnencrypted = "kerberos", true }, ErrUnencryptedUnused, SettingAllowUnencrypted},
		{"digest", func(c *Config) { c.Auth = "digest" }, ErrUnsupportedAuth, SettingAuth},
		{"basic over http", func(c *Config) { c.Auth = "basic" }, ErrClearText, SettingAuth},
		{"port 0 without defaults", func(c *Config) { c.Port = 0 }, ErrPortRange, SettingPort},
		{"port too high", func(c *Config) { c.Port = 65536 }, ErrPortRange, SettingPort},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, ErrTimeout, SettingTimeout},
		{"CA not PEM", func(c *Config) { c.CACert = []byte("nope") }, ErrCACert, SettingCACert},
		{"ntlm without a password", func(c *Config) { c.Auth, c.Password = "ntlm", "" }, ErrNoPassword, SettingPassword},
		{"basic without a password", func(c *Config) { c.Auth, c.Password, c.HTTPS = "basic", "", true }, ErrNoPassword, SettingPassword},
		{"allow_unencrypted over https", func(c *Config) { c.HTTPS, c.AllowUnencrypted = true, true }, ErrUnencryptedUnused, SettingAllowUnencrypted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mutate(&c)
			err := c.Validate()
			var ce *ConfigError
			if !errors.Is(err, tc.sentinel) || !errors.As(err, &ce) || ce.Setting != tc.setting {
				t.Errorf("Validate = %v; want an error wrapping %v for setting %s", err, tc.sentinel, tc.setting)
			}
		})
	}
	// Every problem is reported, each errors.Is-able.
	err := Config{Auth: "x"}.Validate()
	for _, s := range []error{ErrNoHost, ErrNoUsername, ErrUnsupportedAuth, ErrPortRange} {
		if !errors.Is(err, s) {
			t.Errorf("Validate of an empty config = %v; lacks %v", err, s)
		}
	}
}

// TestWarnings: the settings that work but weaken security, each at its setting.
func TestWarnings(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want map[Setting]error
	}{
		{"defaults over https", Config{HTTPS: true}, map[Setting]error{}},
		{"negotiate over http", Config{}, map[Setting]error{}},
		{"basic over http, allowed", Config{Auth: "basic", AllowUnencrypted: true},
			map[Setting]error{SettingAuth: WarnClearTextPassword, SettingAllowUnencrypted: WarnClearTextMessages}},
		{"basic over https", Config{Auth: "basic", HTTPS: true}, map[Setting]error{}},
		{"insecure over https", Config{HTTPS: true, Insecure: true}, map[Setting]error{SettingInsecure: WarnUnverifiedCertificate}},
		{"insecure over http means nothing", Config{Insecure: true}, map[Setting]error{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.SetDefaults()
			got := c.Warnings()
			if len(got) != len(tc.want) {
				t.Fatalf("Warnings = %v; want %v", got, tc.want)
			}
			for _, w := range got {
				if !errors.Is(w, tc.want[w.Setting]) {
					t.Errorf("warning %v at %s; want %v", w, w.Setting, tc.want[w.Setting])
				}
			}
		})
	}
}

// TestNoCallerAdvice: remote and sqlcheck state facts and host-side remedies; which
// Terraform argument or environment variable to change is the provider's to say. No
// string in their code may name one.
func TestNoCallerAdvice(t *testing.T) {
	forbidden := []string{"winrm.", "sql.", "MSSQLIFI_", "terraform apply", "terraform plan", "ca_cert", "sql_port",
		"tls_server_name", "trust_server_certificate", "https =", "https = ", "auth =", "insecure =", "encrypt =",
		"resource's timeouts", "provider's", "sql block", "winrm block"}
	for _, dir := range []string{".", "krb", filepath.Join("..", "sqlcheck")} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					s = lit.Value
				}
				for _, w := range forbidden {
					if strings.Contains(s, w) {
						t.Errorf("%s: the string %q names %q, a setting of the provider's user; return a Kind/Setting instead", f, s, w)
					}
				}
				return true
			})
		}
	}
}
