package remote

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// resultOf is an empty result value of each operation.
var resultOf = map[contract.Operation]any{
	contract.OpReadInstance:    contract.ReadInstanceResult{},
	contract.OpReadHost:        contract.ReadHostResult{},
	contract.OpSetRight:        contract.SetRightResult{},
	contract.OpRestartInstance: contract.RestartInstanceResult{},
	contract.OpRestartStatus:   contract.RestartInstanceResult{},
	contract.OpReadCluster:     contract.ReadClusterResult{},
	contract.OpClusterMove:     contract.ClusterActionResult{},
	contract.OpClusterRestart:  contract.ClusterActionResult{},
}

// notWritten are the result fields (with what they hold) an operation's script does
// not write although its result type has them: restart_status reports the marker,
// without the changes, the read-back and the event log warning of the request that
// made it.
// administrators_digest (ReadInstanceResult, in every result that holds one) is the
// engine's, set when it keeps a read (ifi.KeepForDecisions); no host sends it.
var notWritten = map[contract.Operation]map[string]bool{
	contract.OpReadInstance:    {"administrators_digest": true},
	contract.OpReadHost:        {"administrators_digest": true},
	contract.OpSetRight:        {"administrators_digest": true},
	contract.OpRestartInstance: {"administrators_digest": true},
	contract.OpRestartStatus:   {"changed": true, "instance": true, "event_log_warning": true, "administrators_digest": true},
}

// jsonTags lists the JSON names of t's fields, and of the structs it holds,
// recursively, leaving out the fields named in skip.
func jsonTags(t reflect.Type, into map[string]bool, skip map[string]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == reflect.TypeOf(time.Time{}) {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if skip[name] {
			continue
		}
		if name != "" && name != "-" {
			into[name] = true
		}
		jsonTags(f.Type, into, skip)
	}
}

// topTags lists the JSON names of the struct t's own fields.
func topTags(t reflect.Type) map[string]bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	into := map[string]bool{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		into[name] = true
	}
	return into
}

// The scripts read exactly the parameters the contract sends.
func TestScriptsReadTheContractParameters(t *testing.T) {
	ref := regexp.MustCompile(`\$Params\.([A-Za-z_][A-Za-z0-9_]*)`)
	for _, op := range contract.Operations {
		script, err := contract.Script(op)
		if err != nil {
			t.Fatal(err)
		}
		tags := map[string]bool{}
		jsonTags(reflect.TypeOf(contract.Params(op)), tags, nil)
		top := topTags(reflect.TypeOf(contract.Params(op)))
		used := map[string]bool{}
		for _, m := range ref.FindAllStringSubmatch(script, -1) {
			// PowerShell property names are case-insensitive; the scripts spell them
			// as the JSON does anyway.
			name := strings.ToLower(m[1])
			used[name] = true
			if !tags[name] {
				t.Errorf("%s reads $Params.%s, which %T does not send", op, m[1], contract.Params(op))
			}
		}
		for tag := range tags {
			// A field of a nested parameter (a change's sid) is read from the item.
			nested := !top[tag] && regexp.MustCompile(`\$[A-Za-z]+\.`+regexp.QuoteMeta(tag)+`\b`).MatchString(script)
			if !used[tag] && !nested {
				t.Errorf("%s never reads the parameter %q", op, tag)
			}
		}
	}
}

// Every field of each result type is written by the script under its JSON name.
func TestScriptsWriteTheContractResults(t *testing.T) {
	for _, op := range contract.Operations {
		script, _ := contract.Script(op)
		tags := map[string]bool{}
		jsonTags(reflect.TypeOf(resultOf[op]), tags, notWritten[op])
		var missing []string
		for tag := range tags {
			if !regexp.MustCompile(`(?m)(^|[\s{;.])` + regexp.QuoteMeta(tag) + `\s*=`).MatchString(script) {
				missing = append(missing, tag)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("%s never sets the result fields %v", op, missing)
		}
	}
}

// Each operation's whole script (as sent on stdin) and the bootstrap parse as
// PowerShell, checked with the project's pslint (tree-sitter grammar under node).
func TestScriptsParse(t *testing.T) {
	if testing.Short() {
		t.Skip("pslint takes tens of seconds on a busy machine; run without -short")
	}
	lint := os.Getenv("MSSQLIFI_PSLINT")
	if lint == "" {
		lint = filepath.Join("..", "..", "..", "shared", "tools", "pslint", "pslint")
	}
	if _, err := os.Stat(lint); err != nil {
		t.Skipf("pslint not found at %s (set MSSQLIFI_PSLINT): %v", lint, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed; pslint needs it")
	}
	dir := t.TempDir()
	for _, op := range contract.Operations {
		script, _ := contract.Script(op)
		if err := os.WriteFile(filepath.Join(dir, string(op)+".ps1"), []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "bootstrap.ps1"), []byte(contract.Bootstrap()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(lint, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("pslint %s: %v\n%s", dir, err, out)
	}
	if !strings.Contains(string(out), "0 with syntax errors") {
		t.Fatalf("pslint output: %s", out)
	}
}
