package provider

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// Import and identity. An import receives nothing of the configuration, so what it
// needs to reach the host travels in the import ID (HOST/INSTANCE,
// HOST:PORT/INSTANCE, [IPv6]:PORT/INSTANCE) or in the resource identity (host, port,
// instance) of an import block (Terraform 1.12+, OpenTofu 1.12+). The resource's
// id stays HOST/INSTANCE, as in existing states.

var _ resource.ResourceWithIdentity = &ifiResource{}

// ifiIdentity is the resource identity: the host, the WinRM port when the resource
// sets one (null: the provider's winrm.port or the scheme's default), the instance.
type ifiIdentity struct {
	Host     types.String `tfsdk:"host"`
	Port     wholeNumber  `tfsdk:"port"`
	Instance types.String `tfsdk:"instance"`
}

func (r *ifiResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = identityschema.Schema{
		Attributes: map[string]identityschema.Attribute{
			"host": identityschema.StringAttribute{
				RequiredForImport: true,
				Description:       "DNS name or IP address of the Windows host, as the resource's host.",
			},
			"port": identityschema.Int64Attribute{
				CustomType:        wholeNumberType{},
				OptionalForImport: true,
				Description:       "WinRM port of the host, as the resource's port; unset: the provider's winrm.port.",
			},
			"instance": identityschema.StringAttribute{
				OptionalForImport: true,
				Description:       "SQL Server instance name, as the resource's instance; unset: MSSQLSERVER.",
			},
		},
	}
}

// setIdentity records the identity of a resource whose state is m; identity is
// nil when the CLI does not know identities.
func setIdentity(ctx context.Context, identity *tfsdk.ResourceIdentity, m ifiResourceModel) diag.Diagnostics {
	if identity == nil {
		return nil
	}
	return identity.Set(ctx, ifiIdentity{Host: m.Host, Port: m.Port, Instance: m.Instance})
}

func (r *ifiResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	var host, instance string
	var port int
	var err error
	if req.ID == "" && req.Identity != nil {
		host, port, instance, err = identityTarget(ctx, req.Identity)
		if err != nil {
			resp.Diagnostics.AddError("Invalid import identity", err.Error())
			return
		}
	} else {
		host, port, instance, err = parseImportID(req.ID)
		if err != nil {
			resp.Diagnostics.AddError("Invalid import ID", err.Error())
			return
		}
	}
	m := ifiResourceModel{Host: types.StringValue(host), Instance: types.StringValue(instance), Port: int64Null()}
	if port != 0 {
		m.Port = int64Value(int64(port))
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), importID(host, instance))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("host"), m.Host)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("instance"), m.Instance)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("port"), m.Port)...)
	resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, m)...)
}

// identityTarget reads and checks an import block's identity.
func identityTarget(ctx context.Context, identity *tfsdk.ResourceIdentity) (host string, port int, instance string, err error) {
	var id ifiIdentity
	if d := identity.Get(ctx, &id); d.HasError() {
		return "", 0, "", fmt.Errorf("the identity cannot be read: %s", diagText(d))
	}
	host, instance = id.Host.ValueString(), id.Instance.ValueString()
	if instance == "" {
		instance = DefaultInstance
	}
	if err := checkHost(host); err != nil {
		return "", 0, "", fmt.Errorf("identity host: %v", err)
	}
	if err := checkInstanceName(instance); err != nil {
		return "", 0, "", fmt.Errorf("identity instance: %v", err)
	}
	if !id.Port.IsNull() && !id.Port.IsUnknown() {
		p := id.Port.ValueInt64()
		if p < 1 || p > 65535 {
			return "", 0, "", fmt.Errorf("identity port %d is not a TCP port (1 to 65535)", p)
		}
		port = int(p)
	}
	return host, port, instance, nil
}

func diagText(ds diag.Diagnostics) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, d.Summary()+": "+d.Detail())
	}
	return strings.Join(parts, "; ")
}

const importIDForms = "HOST/INSTANCE, HOST:PORT/INSTANCE or [IPv6-ADDRESS]:PORT/INSTANCE, for example sql01.example.com/MSSQLSERVER, " +
	"sql01.example.com:15986/REPORTING or [2001:db8::10]:5986/MSSQLSERVER"

// parseImportID splits an import ID into host, WinRM port (0: none given) and
// instance, and checks each. An IPv6 address takes brackets when a port follows;
// a bare one (fe80::1/MSSQLSERVER) is a host without port, as before ports were
// accepted.
// formatImportID is the import ID parseImportID reads back as host, port and
// instance: HOST/INSTANCE, or with a port HOST:PORT/INSTANCE ([ADDRESS]:PORT for
// an IPv6 address).
func formatImportID(host string, port int, instance string) string {
	if port == 0 {
		return importID(host, instance)
	}
	return net.JoinHostPort(host, strconv.Itoa(port)) + "/" + instance
}

func parseImportID(id string) (host string, port int, instance string, err error) {
	bad := func(format string, args ...any) (string, int, string, error) {
		return "", 0, "", fmt.Errorf("the import ID %q must be %s: %s", id, importIDForms, fmt.Sprintf(format, args...))
	}
	hostPort, instance, ok := strings.Cut(id, "/")
	if !ok || hostPort == "" || instance == "" || strings.Contains(instance, "/") {
		return bad("it needs exactly one / between the host and the instance")
	}
	switch {
	case strings.HasPrefix(hostPort, "["):
		end := strings.Index(hostPort, "]")
		if end < 0 {
			return bad("the [ of the IPv6 address has no ]")
		}
		host = hostPort[1:end]
		if ip := net.ParseIP(host); ip == nil || ip.To4() != nil && !strings.Contains(host, ":") {
			return bad("%q in brackets is not an IPv6 address", host)
		}
		rest := hostPort[end+1:]
		switch {
		case rest == "":
		case strings.HasPrefix(rest, ":"):
			if port, err = parsePort(rest[1:]); err != nil {
				return bad("%v", err)
			}
		default:
			return bad("after the ] of the IPv6 address only :PORT may follow, not %q", rest)
		}
	case strings.Count(hostPort, ":") > 1:
		// A bare IPv6 address: no port can follow without brackets.
		if net.ParseIP(hostPort) == nil {
			return bad("%q is not an IPv6 address; write an IPv6 address with a port as [ADDRESS]:PORT", hostPort)
		}
		host = hostPort
	case strings.Contains(hostPort, ":"):
		var p string
		host, p, _ = strings.Cut(hostPort, ":")
		if port, err = parsePort(p); err != nil {
			return bad("%v", err)
		}
	default:
		host = hostPort
	}
	if err := checkHost(host); err != nil {
		return bad("host: %v", err)
	}
	if err := checkInstanceName(instance); err != nil {
		return bad("instance: %v", err)
	}
	return host, port, instance, nil
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 || strings.HasPrefix(s, "+") || strings.HasPrefix(s, "0") {
		return 0, fmt.Errorf("the port %q is not a TCP port (1 to 65535)", s)
	}
	return p, nil
}
