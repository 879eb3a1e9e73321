// Copyright (c) mssqlifi contributors
// SPDX-License-Identifier: MPL-2.0

package main

import (
	"flag"
	"log"
	"os"
	"runtime"
	rdebug "runtime/debug"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/provider"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const address = "registry.terraform.io/mssqlifi/mssqlifi"

func main() {
	runtime.MemProfileRate = memProfileRate(os.Getenv("GODEBUG"), runtime.MemProfileRate)
	if p, ok := gcPercent(os.Getenv("GOGC")); ok {
		rdebug.SetGCPercent(p)
	}
	debug := flag.Bool("debug", false, "run the provider with support for debuggers such as delve")
	flag.Parse()
	if !*debug {
		quietLogs()
	}
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

// quietLogs turns off the provider's logs (the SDK's, the framework's, the protocol's
// and the provider's own) when terraform would throw them away, so that they cost
// nothing.
//
// Without a level in the environment, terraform-plugin-log logs at TRACE
// (tfsdklog.NewRootSDKLogger), and the framework writes several TRACE lines per
// attribute for every validation, plan and read (fwserver: each validator, each plan
// modifier, each semantic equality check, with the attribute's path as a field):
// each is a JSON line on the provider's stderr. terraform reads that stream and
// keeps a line only when TF_LOG or TF_LOG_PROVIDER sets a level; with none, it
// discards every line. terraform also parses each line before dropping it. With the
// resource's 28 attributes (one a list of nested objects), a refresh-only plan spent
// about a quarter of the provider's CPU writing those lines, and terraform more
// reading them.
//
// So when no TF_LOG* variable is set to anything (terraform passes its environment to
// the provider; an empty value sets no level, for terraform as for
// terraform-plugin-log) the loggers are set off here, before the server reads their
// levels. Any TF_LOG* variable with a value leaves everything as it is: TF_LOG=DEBUG, TF_LOG_PROVIDER,
// TF_LOG_SDK_FRAMEWORK and the like give the same logs as before. A provider run
// with -debug writes to the terminal it was started in, and keeps its logs too.
func quietLogs() {
	for _, kv := range provider.QuietLogEnv(os.Environ()) {
		k, v, _ := strings.Cut(kv, "=")
		_ = os.Setenv(k, v)
	}
}

// defaultGCPercent is the GC's target the provider runs with when GOGC is unset:
// the heap may grow 75 % over what the last collection found live, not the
// runtime's 100 %. Half of a plan's peak resident set is the binary's own pages and
// most of the rest the heap at its GC target, so the target is what a provider can
// give back: at 200 instances 2.4 MiB of peak RSS (40.2 → 37.8 MiB, under issue
// 28's 40) for about 8 % more CPU per instance (paired runs), still under what it
// took before issue 28 (BENCHMARKS.md, "Where the memory goes"). It scales with
// the fleet, as a fixed memory limit would not.
const defaultGCPercent = 75

// gcPercent is the GC percent to set: defaultGCPercent when the user's GOGC is
// unset; nothing (false) when GOGC is set, which the runtime has read already.
func gcPercent(gogc string) (int, bool) {
	if strings.TrimSpace(gogc) != "" {
		return 0, false
	}
	return defaultGCPercent, true
}

// memProfileRate is the allocation sampling rate the provider runs with: none, unless
// GODEBUG sets one (memprofilerate=N, which the runtime has read before main; current
// is then its rate).
//
// Nothing in the provider writes a heap profile, so it does not sample its
// allocations for one: every distinct allocation stack sampled gets a profile bucket,
// in a hash table of 1.4 MB whose pages the buckets touch at random. A 200-instance
// plan sampled 755 stacks, which touched most of the table's pages: about 1.5 MB of
// the provider's peak resident set (issue 28, BENCHMARKS.md).
func memProfileRate(godebug string, current int) int {
	for _, kv := range strings.Split(godebug, ",") {
		if k, _, _ := strings.Cut(strings.TrimSpace(kv), "="); k == "memprofilerate" {
			return current
		}
	}
	return 0
}
