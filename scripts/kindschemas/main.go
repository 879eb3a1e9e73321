// Command kindschemas puts the provider's action and list resource schemas into a
// `providers schema -json` document, as Terraform 1.14 and later print them, so
// that make docs generates the same pages whichever CLI printed the rest: Terraform
// 1.11 and OpenTofu know neither kind and leave them out. The schemas come from the
// provider itself (its protocol 6 server's GetProviderSchema), not from a CLI.
//
//	go run ./scripts/kindschemas SCHEMA.json
//
// It rewrites SCHEMA.json in place; the provider's key is the one the file has for
// registry.terraform.io/hashicorp/mssqlifi.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/zclconf/go-cty/cty"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/provider"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kindschemas SCHEMA.json")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "kindschemas:", err)
		os.Exit(1)
	}
}

func run(file string) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var doc tfjson.ProviderSchemas
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var ps *tfjson.ProviderSchema
	for addr, s := range doc.Schemas {
		if strings.HasSuffix(addr, "/mssqlifi") {
			ps = s
		}
	}
	if ps == nil {
		return fmt.Errorf("%s has no schema of the mssqlifi provider", file)
	}
	server, err := providerserver.NewProtocol6WithError(provider.New("docs")())()
	if err != nil {
		return err
	}
	resp, err := server.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		return err
	}
	for _, d := range resp.Diagnostics {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			return fmt.Errorf("GetProviderSchema: %s: %s", d.Summary, d.Detail)
		}
	}
	ps.ActionSchemas = map[string]*tfjson.ActionSchema{}
	for name, s := range resp.ActionSchemas {
		b, err := block(s.Schema.Block)
		if err != nil {
			return fmt.Errorf("action %s: %w", name, err)
		}
		ps.ActionSchemas[name] = &tfjson.ActionSchema{Block: b}
	}
	ps.ListResourceSchemas = map[string]*tfjson.Schema{}
	for name, s := range resp.ListResourceSchemas {
		b, err := block(s.Block)
		if err != nil {
			return fmt.Errorf("list resource %s: %w", name, err)
		}
		ps.ListResourceSchemas[name] = &tfjson.Schema{Version: uint64(s.Version), Block: b}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(file, out, 0o600)
}

// block is a protocol schema block as the CLI's JSON has it.
func block(b *tfprotov6.SchemaBlock) (*tfjson.SchemaBlock, error) {
	out := &tfjson.SchemaBlock{Attributes: map[string]*tfjson.SchemaAttribute{}, Description: b.Description,
		DescriptionKind: kind(b.DescriptionKind), Deprecated: b.Deprecated}
	for _, a := range b.Attributes {
		if a.NestedType != nil {
			return nil, fmt.Errorf("attribute %s: nested attributes are not converted (kindschemas needs extending)", a.Name)
		}
		tj, err := a.Type.MarshalJSON() //nolint:staticcheck // SA1019: the attribute type's JSON as the schema JSON that terraform providers schema -json prints holds it; tftypes has no other encoder
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", a.Name, err)
		}
		var ct cty.Type
		if err := ct.UnmarshalJSON(tj); err != nil {
			return nil, fmt.Errorf("attribute %s: %w", a.Name, err)
		}
		out.Attributes[a.Name] = &tfjson.SchemaAttribute{AttributeType: ct, Description: a.Description, DescriptionKind: kind(a.DescriptionKind),
			Deprecated: a.Deprecated, Required: a.Required, Optional: a.Optional, Computed: a.Computed, Sensitive: a.Sensitive,
			WriteOnly: a.WriteOnly}
	}
	if len(b.BlockTypes) > 0 {
		return nil, fmt.Errorf("nested blocks are not converted (kindschemas needs extending)")
	}
	return out, nil
}

func kind(k tfprotov6.StringKind) tfjson.SchemaDescriptionKind {
	if k == tfprotov6.StringKindMarkdown {
		return tfjson.SchemaDescriptionKindMarkdown
	}
	return tfjson.SchemaDescriptionKindPlain
}
