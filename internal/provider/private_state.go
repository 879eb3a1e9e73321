package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// privateDesired is the private-state key holding what the user last applied: a
// refresh stores `enabled` as "not converged" on drift, so the wish itself lives here.
const privateDesired = "desired"

type desiredPrivate struct {
	Enabled bool `json:"enabled"`
}

// privateSetter and privateGetter are the parts of the framework's private state
// (resp.Private, req.Private) used here.
type privateSetter interface {
	SetKey(context.Context, string, []byte) diag.Diagnostics
}

type privateGetter interface {
	GetKey(context.Context, string) ([]byte, diag.Diagnostics)
}

// setDesired records the asked `enabled` in the private state.
func setDesired(ctx context.Context, p privateSetter, enabled bool) diag.Diagnostics {
	b, _ := json.Marshal(desiredPrivate{Enabled: enabled})
	return p.SetKey(ctx, privateDesired, b)
}

// getDesired is the asked `enabled` from the private state, or fallback when none
// is recorded.
func getDesired(ctx context.Context, p privateGetter, fallback bool) (bool, diag.Diagnostics) {
	b, ds := p.GetKey(ctx, privateDesired)
	if ds.HasError() || len(b) == 0 {
		return fallback, ds
	}
	var dp desiredPrivate
	if err := json.Unmarshal(b, &dp); err != nil {
		return fallback, ds
	}
	return dp.Enabled, ds
}

// privateIneffectiveRestart is the private-state key holding what an apply learned
// from a restart that left IFI on against the holders the host reports
// (ifi.IneffectiveRestart): fed back into every later read and apply, it keeps the
// provider from restarting SQL Server again for nothing on each apply.
const privateIneffectiveRestart = "ineffective_restart"

// setIneffectiveRestart records m in the private state; nil removes the key.
func setIneffectiveRestart(ctx context.Context, p privateSetter, m *ifi.IneffectiveRestart) diag.Diagnostics {
	if m == nil {
		return p.SetKey(ctx, privateIneffectiveRestart, nil)
	}
	b, err := json.Marshal(m)
	if err != nil {
		var ds diag.Diagnostics
		ds.AddWarning("Cannot record the ineffective restart", fmt.Sprintf("Encoding it for the private state failed: %v. "+
			"The next apply may restart SQL Server again. This is a bug in the provider; please report it.", err))
		return ds
	}
	return p.SetKey(ctx, privateIneffectiveRestart, b)
}

// getIneffectiveRestart is the recorded lesson, nil when none (or unreadable: the
// provider then only loses the lesson, and may restart once more to learn it again).
func getIneffectiveRestart(ctx context.Context, p privateGetter) (*ifi.IneffectiveRestart, diag.Diagnostics) {
	b, ds := p.GetKey(ctx, privateIneffectiveRestart)
	if ds.HasError() || len(b) == 0 {
		return nil, ds
	}
	var m ifi.IneffectiveRestart
	if err := json.Unmarshal(b, &m); err != nil || m.StartAccountSID == "" {
		return nil, ds
	}
	return &m, ds
}

// privateSQLPort is the private-state key holding the TCP port SQL Server listened
// on when the instance was last observed: the next read asks SQL Server there while
// the host is read (converge.Target.SQLPortHint). It is only a hint; the host's
// answer decides where SQL Server is asked.
const privateSQLPort = "sql_port"

type sqlPortPrivate struct {
	Port int `json:"port"`
}

// setSQLPortHint records the port seen; 0 (none reported) removes the key.
func setSQLPortHint(ctx context.Context, p privateSetter, port int) diag.Diagnostics {
	if port <= 0 {
		return p.SetKey(ctx, privateSQLPort, nil)
	}
	b, _ := json.Marshal(sqlPortPrivate{Port: port})
	return p.SetKey(ctx, privateSQLPort, b)
}

// getSQLPortHint is the recorded port, 0 when none (or unreadable: the SQL check
// then only waits for the host's answer, as on the first read).
func getSQLPortHint(ctx context.Context, p privateGetter) (int, diag.Diagnostics) {
	b, ds := p.GetKey(ctx, privateSQLPort)
	if ds.HasError() || len(b) == 0 {
		return 0, ds
	}
	var sp sqlPortPrivate
	if err := json.Unmarshal(b, &sp); err != nil || sp.Port <= 0 || sp.Port > 65535 {
		return 0, ds
	}
	return sp.Port, ds
}

// privateHostRead is the private-state key holding the last read_instance of the
// instance and when it was asked: an apply right after the plan's refresh uses it
// instead of reading the host again (converge.Target.Read, within
// converge.DefaultReadFreshness). Only read_instance's answer is kept: SQL Server is
// asked again by every apply.
const privateHostRead = "host_read"

type hostReadPrivate struct {
	At       time.Time                    `json:"at"`
	Host     string                       `json:"host"`
	Instance string                       `json:"instance"`
	Read     *contract.ReadInstanceResult `json:"read"`
}

// setHostRead records the outcome's read of t's instance; none removes the key.
func setHostRead(ctx context.Context, p privateSetter, t converge.Target, out *converge.Outcome) diag.Diagnostics {
	if out == nil || out.Read == nil || !out.Read.Found {
		return p.SetKey(ctx, privateHostRead, nil)
	}
	b, err := json.Marshal(hostReadPrivate{At: out.ReadAt.UTC(), Host: t.Host, Instance: t.Instance, Read: out.Read})
	if err != nil {
		return p.SetKey(ctx, privateHostRead, nil)
	}
	return p.SetKey(ctx, privateHostRead, b)
}

// getHostRead puts the recorded read into t when it is of t's host and instance;
// anything else (none, unreadable, another instance) leaves t to read the host.
func getHostRead(ctx context.Context, p privateGetter, t *converge.Target) diag.Diagnostics {
	b, ds := p.GetKey(ctx, privateHostRead)
	if ds.HasError() || len(b) == 0 {
		return ds
	}
	var hr hostReadPrivate
	if err := json.Unmarshal(b, &hr); err != nil || hr.Read == nil ||
		!strings.EqualFold(hr.Host, t.Host) || !strings.EqualFold(hr.Instance, t.Instance) {
		return ds
	}
	t.Read, t.ReadAt = hr.Read, hr.At
	return ds
}

// privateUnverified is the private-state key marking a resource whose last create
// or update failed once its change was sent: the state holds the new intent and
// what was known, not a verified outcome. The next plan of an update verifies and
// finishes it (ModifyPlan); a failed create is tainted by Terraform, and the
// refresh says whether its replace needs a restart (Read). A successful apply
// removes the mark.
const privateUnverified = "unverified"

type unverifiedPrivate struct {
	Op    string    `json:"op"` // "create" or "update"
	At    time.Time `json:"at"`
	Error string    `json:"error"` // the failure, for the plan's warning
}

// setUnverified marks the resource unverified after a failed op; an empty op
// removes the mark.
func setUnverified(ctx context.Context, p privateSetter, op string, at time.Time, err error) diag.Diagnostics {
	if op == "" {
		return p.SetKey(ctx, privateUnverified, nil)
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	b, _ := json.Marshal(unverifiedPrivate{Op: op, At: at.UTC(), Error: msg})
	return p.SetKey(ctx, privateUnverified, b)
}

// getUnverified is the mark, nil when there is none (or it is unreadable).
func getUnverified(ctx context.Context, p privateGetter) (*unverifiedPrivate, diag.Diagnostics) {
	b, ds := p.GetKey(ctx, privateUnverified)
	if ds.HasError() || len(b) == 0 {
		return nil, ds
	}
	var u unverifiedPrivate
	if err := json.Unmarshal(b, &u); err != nil || u.Op == "" {
		return nil, ds
	}
	return &u, ds
}
