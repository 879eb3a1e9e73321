package remote

import (
	"context"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// ReadCluster reads the failover cluster and the instance's role (read_cluster);
// it only reads, so a transient failure is sent again as read_instance's is.
func (h *winrmHost) ReadCluster(ctx context.Context, p contract.ReadClusterParams) (*contract.ReadClusterResult, error) {
	var r contract.ReadClusterResult
	if err := h.runIdempotent(ctx, contract.OpReadCluster, p, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ClusterMove asks the cluster to move the role (cluster_move). Sent once: after a
// lost connection the engine follows the move with ReadCluster instead, since the
// cluster service finishes a move it accepted.
func (h *winrmHost) ClusterMove(ctx context.Context, p contract.ClusterMoveParams) (*contract.ClusterActionResult, error) {
	var r contract.ClusterActionResult
	if err := h.run(ctx, contract.OpClusterMove, p, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ClusterRestart takes the instance's SQL Server resource offline and brings the
// group online (cluster_restart). Sent once, followed with ReadCluster as ClusterMove.
func (h *winrmHost) ClusterRestart(ctx context.Context, p contract.ClusterRestartParams) (*contract.ClusterActionResult, error) {
	var r contract.ClusterActionResult
	if err := h.run(ctx, contract.OpClusterRestart, p, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
