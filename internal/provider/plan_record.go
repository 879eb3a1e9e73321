package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// The plan record: what the last plan of a create predicted, kept on this machine.
//
// Terraform plans every change again during the apply ("final plan") and stops the
// apply with "Provider produced inconsistent final plan" when a value the plan knew
// comes out differently. For an update the final plan predicts from the private
// state, as the plan did. For a create nothing of the plan reaches the provider: the
// final plan's request holds the configuration and a null prior state, no private
// state, and the framework gives Create no planned private state
// (docs/design/plan.md, "A create's final plan"). So a create's plan writes down
// its prediction here, in the user's cache, per working directory and instance; a
// later plan of the same create that reads the host differently refuses with the
// provider's own error (ifi.CreatePlanChanged) instead of letting Terraform blame
// the provider, and the record takes the new prediction, so that the next plan
// shows it. Create and Delete remove the record. Without a record (the plan was made
// on another machine or in another directory) Terraform's own check still stops the
// apply before anything changes.

// planRecordMaxAge is how long a record counts: a saved plan applied later than this
// falls back to Terraform's check.
const planRecordMaxAge = 7 * 24 * time.Hour

type planRecord struct {
	Host     string     `json:"host"`
	Instance string     `json:"instance"`
	Desired  string     `json:"desired"` // the arguments the prediction was made for
	Action   ifi.Action `json:"action"`
	At       time.Time  `json:"at"`
}

// planRecordPath is where the record of host/instance's create in the current
// working directory lives ("" when there is no user cache directory).
func planRecordPath(host, instance string) string {
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	cwd, err := os.Getwd()
	if err != nil {
		return ""
	}
	k := newInstanceKey(host, instance)
	sum := sha256.Sum256([]byte(cwd + "\x00" + k.host + "\x00" + k.instance))
	return filepath.Join(cache, "terraform-provider-mssqlifi", "plans", hex.EncodeToString(sum[:16])+".json")
}

// loadPlanRecord is the record of host/instance's create for the arguments desired,
// nil when there is none (or it is for other arguments, unreadable or too old).
func loadPlanRecord(host, instance, desired string, now time.Time) *planRecord {
	p := planRecordPath(host, instance)
	if p == "" {
		return nil
	}
	b, err := os.ReadFile(p) //nolint:gosec // the path is built from a hash under the user's cache
	if err != nil {
		return nil
	}
	var r planRecord
	if json.Unmarshal(b, &r) != nil || r.Desired != desired || r.Action == "" || now.Sub(r.At) > planRecordMaxAge || r.At.After(now) {
		return nil
	}
	return &r
}

// savePlanRecord writes r (best effort: without a record the apply falls back to
// Terraform's own check).
func savePlanRecord(r planRecord) {
	p := planRecordPath(r.Host, r.Instance)
	if p == "" {
		return
	}
	b, err := json.Marshal(r)
	if err != nil || os.MkdirAll(filepath.Dir(p), 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".plan-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), p) != nil {
		_ = os.Remove(tmp.Name())
	}
}

// dropPlanRecord removes the record of host/instance's create: the plan was applied
// (or the resource destroyed).
func dropPlanRecord(host, instance string) {
	if p := planRecordPath(host, instance); p != "" {
		_ = os.Remove(p)
	}
}
