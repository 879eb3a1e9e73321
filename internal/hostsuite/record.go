package hostsuite

import (
	"context"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
)

// Recorder receives what the suite met, for a transcript (MSSQLIFI_ACC_RECORD):
// each operation's answer and error, and each SQL result. The command adapts
// internal/hostsuite/transcript's Recorder to it (see cmd/hostsuite).
type Recorder interface {
	Operation(stage string, op contract.Operation, params, result any, err error)
	SQL(stage, query string, columns []string, rows [][]any, err error)
}

// recordingHost passes every operation to h and its answer to rec.
type recordingHost struct {
	h     contract.Host
	rec   Recorder
	stage func() string
}

func (r *recordingHost) ReadInstance(ctx context.Context, p contract.ReadInstanceParams) (*contract.ReadInstanceResult, error) {
	res, err := r.h.ReadInstance(ctx, p)
	r.rec.Operation(r.stage(), contract.OpReadInstance, p, res, err)
	return res, err
}

func (r *recordingHost) SetRight(ctx context.Context, p contract.SetRightParams) (*contract.SetRightResult, error) {
	res, err := r.h.SetRight(ctx, p)
	r.rec.Operation(r.stage(), contract.OpSetRight, p, res, err)
	return res, err
}

func (r *recordingHost) RestartInstance(ctx context.Context, p contract.RestartInstanceParams) (*contract.RestartInstanceResult, error) {
	res, err := r.h.RestartInstance(ctx, p)
	r.rec.Operation(r.stage(), contract.OpRestartInstance, p, res, err)
	return res, err
}

func (r *recordingHost) RestartStatus(ctx context.Context, p contract.RestartStatusParams) (*contract.RestartInstanceResult, error) {
	res, err := r.h.RestartStatus(ctx, p)
	r.rec.Operation(r.stage(), contract.OpRestartStatus, p, res, err)
	return res, err
}

// Logon passes the mechanism through, so the preflight sees it with a recorder too.
func (r *recordingHost) Logon() remote.Logon {
	if lr, ok := r.h.(remote.LogonReporter); ok {
		return lr.Logon()
	}
	return remote.Logon{}
}
