package winsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/wsfc"
)

// Config is the simulator's configuration file: the hosts of the fleet and a few
// settings of the simulator itself. README.md documents every field;
// examples/fleet.json is a complete example.
//
// Keys starting with "//" are comments: they are removed, at any depth, before the
// file is decoded, so an example can explain itself. Every other unknown key is an
// error, so a typo never passes silently.
type Config struct {
	// Version is the configuration format's version. Absent means 1; any other
	// value is refused, so a file written for a later simulator never half-works.
	Version int `json:"version,omitempty"`
	// Hosts are the simulated Windows hosts, each on its own loopback address.
	Hosts []host.HostConfig `json:"hosts"`
	// Clusters are Windows Server failover clusters over the hosts, with their
	// SQL Server failover cluster instances (wsfc.ClusterConfig).
	Clusters []wsfc.ClusterConfig `json:"clusters,omitempty"`
	// CertValidity is how long the generated CA and host certificates are valid, as a
	// Go duration ("8760h"). Default 8760h (one year).
	CertValidity string `json:"cert_validity,omitempty"`
}

const defaultCertValidity = 365 * 24 * time.Hour

// ConfigVersion is the only configuration format version this simulator reads.
const ConfigVersion = 1

func (c *Config) certValidity() time.Duration {
	if d, err := time.ParseDuration(c.CertValidity); err == nil && d > 0 {
		return d
	}
	return defaultCertValidity
}

// LoadConfig reads and validates a configuration file.
func LoadConfig(path string) (*Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the simulator configuration: %w (pass an existing file with --config; see internal/winsim/examples/fleet.json)", err)
	}
	cfg, err := ParseConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("configuration %s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig decodes and validates a configuration from JSON.
func ParseConfig(raw []byte) (*Config, error) {
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, describeJSONError(raw, err)
	}
	if _, ok := tree.(map[string]any); !ok {
		return nil, errors.New(`the file must hold one JSON object with a "hosts" list`)
	}
	clean, err := json.Marshal(stripComments(tree))
	if err != nil {
		return nil, fmt.Errorf("re-encoding the configuration without comments: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(clean))
	dec.DisallowUnknownFields()
	var cfg Config
	if err := dec.Decode(&cfg); err != nil {
		return nil, describeJSONError(nil, err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// stripComments removes every object key starting with "//".
func stripComments(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if strings.HasPrefix(k, "//") {
				delete(t, k)
				continue
			}
			t[k] = stripComments(e)
		}
	case []any:
		for i, e := range t {
			t[i] = stripComments(e)
		}
	}
	return v
}

// describeJSONError turns a decoding error into a sentence that says where.
func describeJSONError(raw []byte, err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) && raw != nil {
		line, col := lineCol(raw, syn.Offset)
		return fmt.Errorf("invalid JSON at line %d, column %d: %v", line, col, err)
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return fmt.Errorf("field %q holds a JSON %s where %s is expected", typ.Field, typ.Value, typ.Type)
	}
	if msg := err.Error(); strings.Contains(msg, "unknown field") {
		return fmt.Errorf("%s: check the spelling against internal/winsim/README.md (keys starting with \"//\" are comments)", strings.TrimPrefix(msg, "json: "))
	}
	return fmt.Errorf("decoding the configuration: %w", err)
}

func lineCol(raw []byte, offset int64) (int, int) {
	if offset > int64(len(raw)) {
		offset = int64(len(raw))
	}
	before := raw[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(offset) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// Validate checks the whole configuration once, and reports every problem. Each
// host's own settings (instance names, versions, ports' ranges, services) are
// checked by the host model, host.HostConfig.Validate, the same check host.New runs;
// this adds only what concerns the fleet: distinct host names and addresses,
// loopback addresses, listeners that do not share a port, the certificates' validity.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Version != 0 && c.Version != ConfigVersion {
		// Stop here: the rest of a file in another format would only add noise.
		return fmt.Errorf(`"version" %d is not a configuration format this winsim reads (it reads version %d, or no "version" key): use the winsim release the file was written for, or rewrite the file for version %d (internal/winsim/README.md)`, c.Version, ConfigVersion, ConfigVersion)
	}
	if len(c.Hosts) == 0 {
		bad(`"hosts" is empty: configure at least one host (see internal/winsim/examples/fleet.json)`)
	}
	if c.CertValidity != "" {
		if d, err := time.ParseDuration(c.CertValidity); err != nil || d <= 0 {
			bad(`"cert_validity" %q is not a positive Go duration such as "8760h"`, c.CertValidity)
		}
	}
	names := map[string]int{}
	addrs := map[string]int{}
	for i, hc := range c.Hosts {
		where := fmt.Sprintf("hosts[%d]", i)
		if name := strings.TrimSpace(hc.Name); name != "" {
			where = fmt.Sprintf("host %q (hosts[%d])", name, i)
			if !validHostName(name) {
				bad(`%s: the name may hold only letters, digits and hyphens, at most 63 characters, as a DNS label (it goes into the host's TLS certificate)`, where)
			}
			if j, dup := names[strings.ToLower(name)]; dup {
				bad(`%s: the name is already used by hosts[%d]; host names must be unique (case-insensitive)`, where, j)
			} else {
				names[strings.ToLower(name)] = i
			}
		}
		if err := hc.Validate(); err != nil {
			for _, e := range unjoin(err) {
				bad("%s: %v", where, e)
			}
		}
		ip := net.ParseIP(strings.TrimSpace(hc.Address))
		switch {
		case hc.Address == "":
			bad(`%s: "address" is empty: give the host its own loopback address such as "127.0.0.2"`, where)
		case ip == nil || ip.To4() == nil:
			bad(`%s: "address" %q is not an IPv4 address; use one in 127.0.0.0/8 such as "127.0.0.2"`, where, hc.Address)
		case !ip.IsLoopback():
			bad(`%s: "address" %s is outside 127.0.0.0/8: the simulator binds only loopback addresses; use one such as "127.0.0.2"`, where, hc.Address)
		default:
			key := ip.To4().String()
			if j, dup := addrs[key]; dup {
				bad(`%s: "address" %s is already used by hosts[%d]; each host needs its own address so it looks like a separate machine`, where, key, j)
			} else {
				addrs[key] = i
			}
		}
		// One host's listeners share its address: no two may share a port. (The
		// host model has checked each port's range.)
		ports := map[int]string{}
		usePort := func(field string, p int) {
			if p <= 0 || p > 65535 {
				return
			}
			if other, dup := ports[p]; dup {
				bad(`%s: %s %d is also %s; give each listener its own port or 0`, where, field, p, other)
				return
			}
			ports[p] = field
		}
		usePort(`"http_port"`, hostHTTPPort(hc))
		usePort(`"https_port"`, hostHTTPSPort(hc))
		for _, in := range hostInstances(hc) {
			usePort(fmt.Sprintf(`instance %s "sql_port"`, in.name), in.sqlPort)
		}
	}
	if err := host.ValidateClusters(c.Clusters, c.Hosts); err != nil {
		errs = append(errs, unjoin(err)...)
	}
	return errors.Join(errs...)
}

// unjoin lists the errors an errors.Join made, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func validHostName(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r))) {
			return false
		}
	}
	return true
}
