package remote

import (
	"fmt"
	"strings"
)

// Authentication kinds of Config.Auth.
const (
	AuthNegotiate = "negotiate"
	AuthKerberos  = "kerberos"
	AuthNTLM      = "ntlm"
	AuthBasic     = "basic"
)

// checkSecurity validates the authentication settings of cfg and returns the
// normalised auth kind. The provider checks the same rules at plan time
// (provider.checkWinRMSecurity); this is the last line for other callers.
func checkSecurity(cfg Config) (string, *Error) {
	auth := strings.ToLower(cfg.Auth)
	if auth == "" {
		auth = AuthNegotiate
	}
	switch auth {
	case AuthNegotiate, AuthNTLM:
	case AuthBasic:
		if !cfg.HTTPS && !cfg.AllowUnencrypted {
			return "", configError(cfg, `auth "basic" over plain HTTP would send the password in clear text, so it was not sent`,
				`Use auth = "negotiate" (NTLM with encrypted messages works over HTTP 5985), or https = true; `+
					`only if the host really accepts clear text (AllowUnencrypted=true, Basic=true) set allow_unencrypted = true`)
		}
	case AuthKerberos:
		return "", configError(cfg, `auth "kerberos" is not implemented yet`,
			`Use auth = "negotiate" (NTLM inside Negotiate), which a default domain host accepts`)
	default:
		return "", configError(cfg, fmt.Sprintf("auth %q is not supported", cfg.Auth),
			`Use auth = "negotiate" (the default), "ntlm" or "basic"`)
	}
	if cfg.AllowUnencrypted && auth != AuthBasic {
		return "", configError(cfg, fmt.Sprintf("allow_unencrypted has no effect with auth %q", auth),
			"NTLM encrypts every message over HTTP and HTTPS encrypts the channel: remove allow_unencrypted")
	}
	if cfg.AllowUnencrypted && cfg.HTTPS {
		return "", configError(cfg, "allow_unencrypted has no effect over HTTPS",
			"HTTPS encrypts the channel: remove allow_unencrypted")
	}
	return auth, nil
}
