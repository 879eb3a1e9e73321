package provider

import "strings"

// QuietLogVars are the level variables of terraform-plugin-log's loggers in this
// provider: the SDK's root, terraform-plugin-go's protocol subsystem, the
// framework's subsystem and the provider's own logger (TF_LOG_PROVIDER_ and the
// provider's type name, tf6server).
var QuietLogVars = []string{"TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK", "TF_LOG_PROVIDER_MSSQLIFI"}

// QuietLogEnv is what a provider process whose environment is environ (in
// os.Environ's form) adds to it so that it logs nothing terraform would throw away
// (main.quietLogs says why): each of QuietLogVars set to off, or nothing when any
// TF_LOG* variable has a value.
func QuietLogEnv(environ []string) []string {
	for _, kv := range environ {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "TF_LOG") && v != "" {
			return nil
		}
	}
	out := make([]string, 0, len(QuietLogVars))
	for _, k := range QuietLogVars {
		out = append(out, k+"=off")
	}
	return out
}
