package provider

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// DefaultInstance is the name of SQL Server's default instance.
const DefaultInstance = contract.DefaultInstance

// checkInstanceName applies the one instance-name rule (contract.ValidateInstanceName).
func checkInstanceName(name string) error {
	return contract.ValidateInstanceName(name)
}

// checkHost accepts a DNS name (letters, digits, "-" and "_" in dot-separated labels
// of at most 63 characters, 253 in all) or an IPv4/IPv6 literal; anything else
// (spaces, quotes, backslashes, semicolons, URLs, ports) is refused.
func checkHost(host string) error {
	if host == "" {
		return fmt.Errorf("the host is empty: give a DNS name such as sql01.example.com or an IP address")
	}
	if net.ParseIP(host) != nil {
		return nil
	}
	name := strings.TrimSuffix(host, ".")
	if len(name) == 0 || len(name) > 253 {
		return fmt.Errorf("%q is not a DNS name of 1 to 253 characters", host)
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("%q is not a DNS name: each dot-separated part has 1 to 63 characters", host)
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("%q is not a DNS name: a part may not start or end with \"-\"", host)
		}
		for _, r := range label {
			if !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) || r == '-' || r == '_') {
				return fmt.Errorf("%q is not a DNS name or IP address: the character %q is not allowed (give the name only, without scheme, port or path)", host, r)
			}
		}
	}
	return nil
}

// checkSPN accepts a service principal name SERVICE/host[:port], such as
// HTTP/sql01.contoso.com, where host is a DNS name or an IP address.
func checkSPN(spn string) error {
	class, host, ok := strings.Cut(spn, "/")
	if !ok || class == "" || strings.ContainsAny(class, " \\@:") {
		return fmt.Errorf("%q is not a service principal name: write it as SERVICE/host, for example HTTP/sql01.contoso.com", spn)
	}
	if h, port, ok := strings.Cut(host, ":"); ok && net.ParseIP(host) == nil {
		if _, err := strconv.Atoi(port); err != nil {
			return fmt.Errorf("%q is not a service principal name: the part after the host's \":\" must be a port number", spn)
		}
		host = h
	}
	if err := checkHost(host); err != nil {
		return fmt.Errorf("%q is not a service principal name: %v", spn, err)
	}
	return nil
}

// checkDuration accepts a positive Go duration such as "60s" or "2m".
func checkDuration(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("%q is not a positive duration such as \"60s\" or \"2m\"", s)
	}
	return nil
}

// checkPEM accepts one or more PEM-encoded certificates.
func checkPEM(s string) error {
	rest := []byte(s)
	n := 0
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return fmt.Errorf("a PEM block does not hold a valid certificate: %v", err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("no PEM certificate found: give the CA certificate's text, starting with -----BEGIN CERTIFICATE-----" +
			" (for a file, use file(\"ca.pem\"))")
	}
	return nil
}

// stringCheck adapts a check function to a schema validator.
type stringCheck struct {
	desc  string
	check func(string) error
}

var (
	_ validator.String = stringCheck{}

	instanceNameValidator = stringCheck{"a SQL Server instance name: " + contract.InstanceNameRule, checkInstanceName}
	hostValidator         = stringCheck{"a DNS name or an IP address", checkHost}
	durationValidator     = stringCheck{"a positive duration such as \"60s\"", checkDuration}
	pemValidator          = stringCheck{"PEM-encoded certificates", checkPEM}
	spnValidator          = stringCheck{"a service principal name such as HTTP/sql01.contoso.com", checkSPN}
)

func (v stringCheck) Description(context.Context) string         { return "value must be " + v.desc }
func (v stringCheck) MarkdownDescription(context.Context) string { return "value must be " + v.desc }

func (v stringCheck) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := v.check(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid value", err.Error())
	}
}

// checkNodeName accepts a cluster node's name as the cluster names it: a computer
// name, one DNS label (letters, digits, "-"), without the domain. The address that
// reaches the node goes in the value, not in the name.
func checkNodeName(name string) error {
	if strings.Contains(name, ".") {
		return fmt.Errorf("%q is not a cluster node name: give the node's computer name as the cluster lists it (for example NODE1), "+
			"and its DNS name or address as the value", name)
	}
	if err := checkHost(name); err != nil || net.ParseIP(name) != nil || strings.Contains(name, "_") {
		return fmt.Errorf("%q is not a cluster node name: a computer name has 1 to 63 letters, digits and \"-\" (for example NODE1)", name)
	}
	return nil
}

// nodesValidator checks the `nodes` map: each key a node name (checkNodeName), no
// two keys that differ only in case (Windows compares computer names without case),
// each value a host (checkHost).
type nodesValidator struct{}

var _ validator.Map = nodesValidator{}

func (nodesValidator) Description(context.Context) string {
	return "keys must be cluster node names (computer names such as NODE1), each once; values DNS names or IP addresses"
}

func (v nodesValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (nodesValidator) ValidateMap(_ context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	seen := map[string]string{}
	elems := req.ConfigValue.Elements()
	for _, name := range slices.Sorted(maps.Keys(elems)) {
		v := elems[name]
		p := req.Path.AtMapKey(name)
		if err := checkNodeName(name); err != nil {
			resp.Diagnostics.AddAttributeError(p, "Invalid node name", err.Error())
			continue
		}
		if other, dup := seen[strings.ToUpper(name)]; dup {
			resp.Diagnostics.AddAttributeError(p, "Node named twice",
				fmt.Sprintf("%q and %q name the same node (Windows compares computer names without case): keep one of them.", other, name))
		}
		seen[strings.ToUpper(name)] = name
		s, ok := v.(types.String)
		if !ok || s.IsUnknown() {
			continue
		}
		if s.IsNull() {
			resp.Diagnostics.AddAttributeError(p, "Invalid node address", fmt.Sprintf("node %q has no address: give its DNS name or IP address, or leave it out of nodes.", name))
			continue
		}
		if err := checkHost(s.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(p, "Invalid node address", fmt.Sprintf("node %q: %v", name, err))
		}
	}
}
