// Copyright (c) mssqlifi contributors
// SPDX-License-Identifier: MPL-2.0

package main

import (
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/provider"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const address = "registry.terraform.io/mssqlifi/mssqlifi"

func main() {
	debug := flag.Bool("debug", false, "run the provider with support for debuggers such as delve")
	flag.Parse()
	// What providerserver.Serve does for protocol 6, with the framework's server
	// wrapped so that it does not keep every request's context (release.go).
	var opts []tf6server.ServeOpt
	if *debug {
		opts = append(opts, tf6server.WithManagedDebug())
	}
	if err := tf6server.Serve(address, newServer, opts...); err != nil {
		log.Fatal(err.Error())
	}
}

// newServer is the provider's protocol 6 server.
func newServer() tfprotov6.ProviderServer {
	return releaseContexts(providerserver.NewProtocol6(provider.New(version)())())
}
