package hostsuite

import (
	"context"
	"errors"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/hostsuite/transcript"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
)

// NewRecorder starts the transcript of a run (MSSQLIFI_ACC_RECORD): from the
// simulator when MSSQLIFI_ACC_SIM_CONTROL is set, else from a real host. It knows
// the names and secrets of cfg, which Redact replaces.
func NewRecorder(cfg Config) *transcript.Recorder {
	source := transcript.SourceReal
	if cfg.SimControl != "" {
		source = transcript.SourceSimulator
	}
	var secrets, users []string
	for _, s := range []string{cfg.WinRMPassword, cfg.SQLPassword, cfg.SeedPass} {
		if s != "" {
			secrets = append(secrets, s)
		}
	}
	for _, u := range []string{cfg.WinRMUser, cfg.SQLUser, cfg.SeedUser} {
		if u != "" {
			users = append(users, u)
		}
	}
	return transcript.NewRecorder(source, transcript.Known{Secrets: secrets, Hosts: []string{cfg.Host}, Users: users})
}

// recordingHost passes every operation to h and, when it ends without an answer
// from the host's script (the answer itself is recorded by remote.Config.Answer),
// its error's shape to rec.
type recordingHost struct {
	h     contract.Host
	rec   *transcript.Recorder
	stage func() string
}

func (r *recordingHost) failed(op contract.Operation, err error) {
	var re *remote.Error
	if err != nil && !(errors.As(err, &re) && re.Kind == remote.KindScript) {
		r.rec.Error(r.stage(), string(op), transcript.ErrorShape{}, err)
	}
}

func (r *recordingHost) ReadInstance(ctx context.Context, p contract.ReadInstanceParams) (*contract.ReadInstanceResult, error) {
	res, err := r.h.ReadInstance(ctx, p)
	r.failed(contract.OpReadInstance, err)
	return res, err
}

// ReadHost is read_host where the host has it (remote.Host does).
func (r *recordingHost) ReadHost(ctx context.Context, p contract.ReadHostParams) (*contract.ReadHostResult, error) {
	hr, ok := r.h.(contract.HostReader)
	if !ok {
		return nil, errors.New("this host's client cannot run read_host")
	}
	res, err := hr.ReadHost(ctx, p)
	r.failed(contract.OpReadHost, err)
	return res, err
}

func (r *recordingHost) SetRight(ctx context.Context, p contract.SetRightParams) (*contract.SetRightResult, error) {
	res, err := r.h.SetRight(ctx, p)
	r.failed(contract.OpSetRight, err)
	return res, err
}

func (r *recordingHost) RestartInstance(ctx context.Context, p contract.RestartInstanceParams) (*contract.RestartInstanceResult, error) {
	res, err := r.h.RestartInstance(ctx, p)
	r.failed(contract.OpRestartInstance, err)
	return res, err
}

func (r *recordingHost) RestartStatus(ctx context.Context, p contract.RestartStatusParams) (*contract.RestartInstanceResult, error) {
	res, err := r.h.RestartStatus(ctx, p)
	r.failed(contract.OpRestartStatus, err)
	return res, err
}

// Logon passes the mechanism through, so the preflight sees it with a recorder too.
func (r *recordingHost) ReadCluster(ctx context.Context, p contract.ReadClusterParams) (*contract.ReadClusterResult, error) {
	res, err := r.h.ReadCluster(ctx, p)
	r.failed(contract.OpReadCluster, err)
	return res, err
}

func (r *recordingHost) ClusterMove(ctx context.Context, p contract.ClusterMoveParams) (*contract.ClusterActionResult, error) {
	res, err := r.h.ClusterMove(ctx, p)
	r.failed(contract.OpClusterMove, err)
	return res, err
}

func (r *recordingHost) ClusterRestart(ctx context.Context, p contract.ClusterRestartParams) (*contract.ClusterActionResult, error) {
	res, err := r.h.ClusterRestart(ctx, p)
	r.failed(contract.OpClusterRestart, err)
	return res, err
}

func (r *recordingHost) Logon() remote.Logon {
	if lr, ok := r.h.(remote.LogonReporter); ok {
		return lr.Logon()
	}
	return remote.Logon{}
}

// describe puts what the preflight learnt into the transcript's header.
func (s *Suite) describe(r *contract.ReadInstanceResult) {
	rec := s.opt.Recorder
	if rec == nil || r == nil {
		return
	}
	rec.Know(transcript.Known{Hosts: []string{r.ComputerName}})
	rec.Describe(func(t *transcript.Transcript) {
		t.Host = r.ComputerName
		t.PowerShell = r.PowerShellVersion
		t.Facts.Instance = r.Instance
		t.Facts.Auth = s.logon.Mechanism
		t.Facts.HTTPS = s.cfg.HTTPS
		t.Facts.LanguageMode = "FullLanguage"
		t.Facts.Clustered = r.Clustered
		t.Facts.Dependents = nil
		for _, d := range r.Dependents {
			t.Facts.Dependents = append(t.Facts.Dependents, d.Name)
		}
		if rep := s.sqlRep; rep != nil {
			t.SQLVersion = rep.ProductVersion
			t.Facts.Edition = rep.Edition
			hadr := rep.HADREnabled
			t.Facts.HADREnabled = &hadr
			t.Facts.SQLLogin = &transcript.LoginFacts{ViewServerState: true, ViewAnyDefinition: s.catalogVisible}
			for _, rp := range rep.Replicas {
				if rp.Local {
					t.Facts.AvailabilityGroup = &transcript.AGFacts{Name: rp.Group, Role: strings.ToLower(rp.Role)}
				}
			}
		}
	})
}
