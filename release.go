// Copyright (c) mssqlifi contributors
// SPDX-License-Identifier: MPL-2.0

package main

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// Why the provider's server is wrapped (issue 9, peak memory of a fleet plan):
//
// terraform-plugin-framework (v1.19.0, internal/proto6server registerContext) derives
// a cancellable context from every RPC's context and keeps its cancel function in a
// slice until StopProvider, which terraform sends only on an interrupt. A cancel
// function holds its context, and a context holds its parents: grpc's stream and
// terraform-plugin-log's logger options with every field set on them. So each RPC's
// whole context stayed in memory for the life of the provider process. A heap
// profile of the provider after a 100-instance plan showed it as the largest part of
// the live heap (about 6.5 of 11.8 MB; the RPCs of one resource keep about 60 KB).
//
// releasingServer hands the framework a context that forwards to the RPC's own while
// the call runs and lets go of it when the call returns, so what the framework keeps
// is a few dozen bytes per call. Only the RPCs that terraform sends per resource or
// data source are wrapped; the rest go straight to the framework.

// releasingServer is the framework's server with the per-resource RPCs given a
// releasable context. It keeps every optional interface the framework implements
// (list resources, actions, state stores), since terraform-plugin-go looks for them
// with type assertions.
type releasingServer struct {
	frameworkServer
}

// frameworkServer is every interface of terraform-plugin-go that the framework's
// server implements.
type frameworkServer interface {
	tfprotov6.ProviderServer
	tfprotov6.ListResourceServer
	tfprotov6.ActionServer
	tfprotov6.StateStoreServer
}

// releaseContexts wraps the framework's server; a server that lacks one of the
// interfaces above is returned as it is, so that nothing it offers is lost.
func releaseContexts(s tfprotov6.ProviderServer) tfprotov6.ProviderServer {
	fs, ok := s.(frameworkServer)
	if !ok {
		return s
	}
	return releasingServer{fs}
}

// callContext forwards to an RPC's context until release; afterwards it is a
// cancelled context without values or deadline (the RPC is over: grpc has cancelled
// its context too).
type callContext struct {
	parent atomic.Pointer[context.Context]
}

// doneContext is what a released callContext answers with.
var doneContext = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

func newCallContext(ctx context.Context) *callContext {
	c := &callContext{}
	c.parent.Store(&ctx)
	return c
}

func (c *callContext) ctx() context.Context {
	if p := c.parent.Load(); p != nil {
		return *p
	}
	return doneContext
}

func (c *callContext) release()                                { c.parent.Store(nil) }
func (c *callContext) Deadline() (deadline time.Time, ok bool) { return c.ctx().Deadline() }
func (c *callContext) Done() <-chan struct{}                   { return c.ctx().Done() }
func (c *callContext) Err() error                              { return c.ctx().Err() }
func (c *callContext) Value(key any) any                       { return c.ctx().Value(key) }

// call runs f with a context that is released when f returns.
func call[Req, Resp any](ctx context.Context, f func(context.Context, Req) (Resp, error), req Req) (Resp, error) {
	c := newCallContext(ctx)
	defer c.release()
	return f(c, req)
}

func (s releasingServer) ValidateResourceConfig(ctx context.Context, req *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	return call(ctx, s.frameworkServer.ValidateResourceConfig, req)
}

func (s releasingServer) UpgradeResourceState(ctx context.Context, req *tfprotov6.UpgradeResourceStateRequest) (*tfprotov6.UpgradeResourceStateResponse, error) {
	return call(ctx, s.frameworkServer.UpgradeResourceState, req)
}

func (s releasingServer) UpgradeResourceIdentity(ctx context.Context, req *tfprotov6.UpgradeResourceIdentityRequest) (*tfprotov6.UpgradeResourceIdentityResponse, error) {
	return call(ctx, s.frameworkServer.UpgradeResourceIdentity, req)
}

func (s releasingServer) ReadResource(ctx context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	return call(ctx, s.frameworkServer.ReadResource, req)
}

func (s releasingServer) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	return call(ctx, s.frameworkServer.PlanResourceChange, req)
}

func (s releasingServer) ApplyResourceChange(ctx context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	return call(ctx, s.frameworkServer.ApplyResourceChange, req)
}

func (s releasingServer) ImportResourceState(ctx context.Context, req *tfprotov6.ImportResourceStateRequest) (*tfprotov6.ImportResourceStateResponse, error) {
	return call(ctx, s.frameworkServer.ImportResourceState, req)
}

func (s releasingServer) MoveResourceState(ctx context.Context, req *tfprotov6.MoveResourceStateRequest) (*tfprotov6.MoveResourceStateResponse, error) {
	return call(ctx, s.frameworkServer.MoveResourceState, req)
}

func (s releasingServer) ValidateDataResourceConfig(ctx context.Context, req *tfprotov6.ValidateDataResourceConfigRequest) (*tfprotov6.ValidateDataResourceConfigResponse, error) {
	return call(ctx, s.frameworkServer.ValidateDataResourceConfig, req)
}

func (s releasingServer) ReadDataSource(ctx context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	return call(ctx, s.frameworkServer.ReadDataSource, req)
}
