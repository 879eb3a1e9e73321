package winsim_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/masterzen/winrm"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/hostsuite/transcript"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// The recorded answers of real hosts (testdata/realhost/README.md) hold the
// simulator to Windows: each transcript is replayed through the real clients
// (masterzen/winrm on internal/remote's transport, go-mssqldb) against a simulated
// host built from the transcript's facts, and every answer must have the recorded
// shape. A mismatch means the simulator (and FIDELITY.md) is wrong, not the
// transcript.

// realhostDir is testdata/realhost at the repository root.
const realhostDir = "../../testdata/realhost"

// Credentials of the simulated host a replay builds; the transcript never holds any.
const (
	replayWinRMUser     = "Administrator"
	replayWinRMPassword = "Replay-Adm1n!"
	replaySQLLogin      = "replay-login"
	replaySQLPassword   = "Replay-Sql1!"
)

func TestReplayRealHostTranscripts(t *testing.T) {
	all, paths, err := transcript.LoadDir(realhostDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no transcript in %s: the synthetic one (synthetic-sql2022-ws2022.json) must be there", realhostDir)
	}
	real := 0
	for _, p := range paths {
		if all[p].Source == transcript.SourceReal {
			real++
		}
	}
	if real == 0 {
		t.Log("no real-host transcript yet: replaying the synthetic one")
	}
	for _, p := range paths {
		tr := all[p]
		t.Run(filepath.Base(p), func(t *testing.T) {
			t.Logf("%s: source %s, SQL Server %s, Windows %s, %d entries", filepath.Base(p), tr.Source, tr.SQLVersion, tr.Windows, len(tr.Entries))
			for _, m := range replay(t, tr) {
				t.Error(m)
			}
		})
	}
}

// A transcript the simulator does not match fails the replay with the difference:
// a copy of the synthetic transcript, altered where a real host could differ.
func TestReplayReportsAMismatch(t *testing.T) {
	tr, err := transcript.Load(filepath.Join(realhostDir, "synthetic-sql2022-ws2022.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr.Source = transcript.SourceReal
	altered := map[string]string{}
	for i := range tr.Entries {
		e := &tr.Entries[i]
		switch {
		case e.Kind == transcript.KindOperation && e.Operation == string(contract.OpReadInstance) && altered["op"] == "":
			// Windows answering process_id as a string.
			var m map[string]any
			if err := json.Unmarshal(e.Stdout, &m); err != nil {
				t.Fatal(err)
			}
			m["process_id"] = "4312"
			e.Stdout, _ = json.Marshal(m)
			altered["op"] = "$.process_id: real host answered string, simulator answered number"
		case e.Kind == transcript.KindSQL && strings.Contains(e.SQL, "sys.availability_groups") && altered["sql"] == "":
			// A catalog view showing its row to a login without VIEW ANY DEFINITION.
			e.Rows = [][]any{{"AG1"}}
			altered["sql"] = "rows: real host answered 1 row(s), simulator answered none"
		case e.Kind == transcript.KindError && e.Operation == transcript.ProbeClearText:
			e.Shape.SOAPFault, e.Shape.FaultCode = true, "2150858817"
			altered["fault"] = "real host answered HTTP 500 with SOAP fault 2150858817"
		}
	}
	if len(altered) != 3 {
		t.Fatalf("the synthetic transcript lacks an entry to alter: altered %v", altered)
	}
	// The altered copy goes through the same loading as every transcript.
	dir := t.TempDir()
	raw, err := transcript.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "altered.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := transcript.Load(filepath.Join(dir, "altered.json"))
	if err != nil {
		t.Fatal(err)
	}
	got := replay(t, back)
	t.Logf("the replay of the altered copy reported:\n%s", strings.Join(got, "\n"))
	for what, want := range altered {
		found := false
		for _, m := range got {
			found = found || strings.Contains(m, want)
		}
		if !found {
			t.Errorf("altered %s: no mismatch says %q; the replay reported:\n%s", what, want, strings.Join(got, "\n"))
		}
	}
	if len(got) != len(altered) {
		t.Errorf("the replay reported %d mismatches, want exactly the %d planted:\n%s", len(got), len(altered), strings.Join(got, "\n"))
	}
}

// replayHost is the simulated host of one transcript and the clients on it.
type replayHost struct {
	sim       *winsim.Sim
	info      winsim.HostInfo
	winrmHost string
	winrmPort int
	https     bool
	sqlAddr   string
	instance  string
}

// replayConfig builds a simulated host like the one the transcript describes.
func replayConfig(tr *transcript.Transcript) host.HostConfig {
	f := tr.Facts
	in := host.InstanceConfig{Name: f.Instance, Version: tr.SQLVersion, Edition: f.Edition, Clustered: f.Clustered, HADREnabled: f.HADREnabled}
	login := host.LoginConfig{Name: replaySQLLogin, Password: replaySQLPassword}
	if f.SQLLogin != nil {
		vss, sysadmin := f.SQLLogin.ViewServerState, f.SQLLogin.Sysadmin
		login.ViewServerState, login.ViewAnyDefinition, login.Sysadmin = &vss, f.SQLLogin.ViewAnyDefinition, &sysadmin
	}
	in.Logins = []host.LoginConfig{login}
	if f.AvailabilityGroup != nil {
		in.AvailabilityGroup = &host.AvailabilityGroupConfig{Name: f.AvailabilityGroup.Name, Role: f.AvailabilityGroup.Role, ClusterType: f.AvailabilityGroup.ClusterType}
	}
	engine := "MSSQLSERVER"
	if !strings.EqualFold(f.Instance, "MSSQLSERVER") {
		engine = "MSSQL$" + f.Instance
	}
	agent := false
	var services []host.ServiceConfig
	for _, d := range f.Dependents {
		if strings.EqualFold(d, "SQLSERVERAGENT") || strings.HasPrefix(strings.ToUpper(d), "SQLAGENT$") {
			agent = true
			continue
		}
		services = append(services, host.ServiceConfig{Name: d, DependsOn: []string{engine}})
	}
	in.Agent = &agent
	hc := host.HostConfig{
		Name:      "replay",
		Address:   "127.0.0.41",
		WinRM:     host.WinRMConfig{Users: []host.UserConfig{{Name: replayWinRMUser, Password: replayWinRMPassword}}},
		Services:  services,
		Instances: []host.InstanceConfig{in},
	}
	if f.AllowUnencrypted != nil {
		hc.WinRM.AllowUnencrypted = *f.AllowUnencrypted
	}
	if f.LanguageMode != "" {
		hc.PowerShellLanguageMode = f.LanguageMode
	}
	if f.ASRRuleAction != nil {
		hc.Defender.ASRRules = map[string]int{host.ASRRulePsExecWMI: *f.ASRRuleAction}
	}
	return hc
}

func startReplayHost(t *testing.T, tr *transcript.Transcript) *replayHost {
	t.Helper()
	cfg := &winsim.Config{Hosts: []host.HostConfig{replayConfig(tr)}}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the transcript's facts make no simulated host: %v", err)
	}
	sim, err := winsim.Start(cfg, winsim.Options{CertDir: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	h := &replayHost{sim: sim, info: sim.Info().Hosts[0], https: tr.Facts.HTTPS, instance: tr.Facts.Instance}
	addr := h.info.WinRM
	if h.https {
		addr = h.info.WinRMHTTPS
	}
	hostname, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	h.winrmHost = hostname
	h.winrmPort, _ = strconv.Atoi(port)
	for _, in := range h.info.Instances {
		if strings.EqualFold(in.Name, tr.Facts.Instance) {
			h.sqlAddr = in.SQL
		}
	}
	return h
}

func (h *replayHost) remoteConfig() remote.Config {
	cfg := remote.Config{Host: h.winrmHost, Port: h.winrmPort, HTTPS: h.https, Auth: remote.AuthNTLM,
		Username: replayWinRMUser, Password: replayWinRMPassword, Timeout: 60 * time.Second}
	if h.https {
		cfg.CACert = h.sim.CACertPEM()
	}
	return cfg
}

// runRaw runs one operation with masterzen/winrm's client on internal/remote's
// transport (NTLM, sealed over HTTP), as the suite records it: exit code, stdout,
// stderr as the host sent them.
func (h *replayHost) runRaw(ctx context.Context, op string, params json.RawMessage) (int, []byte, []byte, error) {
	tr, err := remote.NewTransporter(h.remoteConfig())
	if err != nil {
		return 0, nil, nil, err
	}
	wp := winrm.NewParameters("PT60S", "en-US", 153600)
	wp.TransportDecorator = func() winrm.Transporter { return tr }
	c, err := winrm.NewClientWithParameters(winrm.NewEndpoint(h.winrmHost, h.winrmPort, h.https, false, h.caCert(), nil, nil, 90*time.Second), "", "", wp)
	if err != nil {
		return 0, nil, nil, err
	}
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	input, err := contract.EncodeInput(contract.Operation(op), params)
	if err != nil {
		return 0, nil, nil, err
	}
	var stdout, stderr bytes.Buffer
	code, err := c.RunWithContextWithInput(ctx, contract.CommandLine(), &stdout, &stderr, bytes.NewReader(input))
	return code, stdout.Bytes(), stderr.Bytes(), err
}

func (h *replayHost) caCert() []byte {
	if h.https {
		return h.sim.CACertPEM()
	}
	return nil
}

func (h *replayHost) db(t *testing.T, password string) *sql.DB {
	t.Helper()
	u := url.URL{Scheme: "sqlserver", User: url.UserPassword(replaySQLLogin, password), Host: h.sqlAddr, RawQuery: "encrypt=disable&dial+timeout=5"}
	db, err := sql.Open("sqlserver", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// replay answers every entry of tr on a simulated host built from its facts, and
// returns one sentence per shape that differs.
func replay(t *testing.T, tr *transcript.Transcript) []string {
	t.Helper()
	h := startReplayHost(t, tr)
	var out []string
	for i, e := range tr.Entries {
		where := fmt.Sprintf("entry %d (stage %s, %s %s)", i, e.Stage, e.Kind, e.Operation)
		if e.Kind == transcript.KindSQL {
			where = fmt.Sprintf("entry %d (stage %s, sql %q)", i, e.Stage, abbreviate(e.SQL))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		var diffs []string
		switch e.Kind {
		case transcript.KindOperation:
			diffs = h.replayOperation(ctx, e)
		case transcript.KindSQL:
			diffs = h.replaySQL(ctx, t, e)
		case transcript.KindError:
			diffs = h.replayError(ctx, t, e)
		}
		cancel()
		for _, d := range diffs {
			out = append(out, where+": "+d)
		}
	}
	return out
}

func abbreviate(s string) string {
	if len(s) > 70 {
		return s[:67] + "..."
	}
	return s
}

func (h *replayHost) replayOperation(ctx context.Context, e transcript.Entry) []string {
	code, stdout, stderr, err := h.runRaw(ctx, e.Operation, e.Params)
	if err != nil {
		return []string{fmt.Sprintf("real host answered exit code %d, simulator answered no answer (%v)", e.ExitCode, err)}
	}
	var diffs []string
	if code != e.ExitCode {
		diffs = append(diffs, fmt.Sprintf("exit code: real host answered %d, simulator answered %d", e.ExitCode, code))
	}
	gotOut := bytes.TrimSpace(bytes.TrimPrefix(stdout, []byte("\xef\xbb\xbf")))
	want, wantOK := decodeJSON(e.Stdout)
	got, gotOK := decodeJSON(gotOut)
	switch {
	case len(e.Stdout) == 0 && len(gotOut) != 0:
		diffs = append(diffs, fmt.Sprintf("stdout: real host answered nothing, simulator answered %q", abbreviate(string(gotOut))))
	case len(e.Stdout) != 0 && wantOK && !gotOK:
		diffs = append(diffs, fmt.Sprintf("stdout: real host answered JSON, simulator answered %q", abbreviate(string(gotOut))))
	case wantOK && gotOK:
		diffs = append(diffs, compareShape("$", want, got)...)
		if code != 0 || e.ExitCode != 0 {
			// A ScriptError: its code is the shape.
			if wc, gc := jsonErrorCode(want), jsonErrorCode(got); wc != gc {
				diffs = append(diffs, fmt.Sprintf("ScriptError code: real host answered %q, simulator answered %q", wc, gc))
			}
		}
	}
	if w, g := stderrShape(e.Stderr), stderrShape(string(stderr)); w != g {
		diffs = append(diffs, fmt.Sprintf("stderr: real host answered %s, simulator answered %s", w, g))
	}
	return diffs
}

// stderrShape is what stderr says: PowerShell over WinRM may write CLIXML progress
// records there on success (module loading), so only error records count.
func stderrShape(s string) string {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return "no error records"
	case !strings.HasPrefix(s, "#< CLIXML"):
		return "text that is not CLIXML"
	case strings.Contains(s, `S="Error"`):
		return "CLIXML error records"
	}
	return "no error records"
}

func jsonErrorCode(v any) string {
	if m, ok := v.(map[string]any); ok {
		if c, ok := m["error"].(string); ok {
			return c
		}
	}
	return ""
}

func decodeJSON(raw []byte) (any, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

// jsonType names a decoded JSON value's type.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// compareShape compares keys and value types; an array's elements are compared
// with the first element of the other side (an empty array matches any array).
func compareShape(path string, want, got any) []string {
	wt, gt := jsonType(want), jsonType(got)
	if wt != gt {
		return []string{fmt.Sprintf("%s: real host answered %s, simulator answered %s", path, wt, gt)}
	}
	var diffs []string
	switch w := want.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		keys := map[string]bool{}
		for k := range w {
			keys[k] = true
		}
		for k := range g {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			wv, inW := w[k]
			gv, inG := g[k]
			switch {
			case !inW:
				diffs = append(diffs, fmt.Sprintf("%s.%s: real host answered no such key, simulator answered %s", path, k, jsonType(gv)))
			case !inG:
				diffs = append(diffs, fmt.Sprintf("%s.%s: real host answered %s, simulator answered no such key", path, k, jsonType(wv)))
			default:
				diffs = append(diffs, compareShape(path+"."+k, wv, gv)...)
			}
		}
	case []any:
		g, _ := got.([]any)
		if len(w) > 0 && len(g) > 0 {
			for i := range w {
				diffs = append(diffs, compareShape(fmt.Sprintf("%s[%d]", path, i), w[i], g[min(i, len(g)-1)])...)
			}
		}
	}
	return diffs
}

func (h *replayHost) replaySQL(ctx context.Context, t *testing.T, e transcript.Entry) []string {
	rows, err := h.db(t, replaySQLPassword).QueryContext(ctx, e.SQL)
	var cols []string
	var types []string
	n := 0
	if err == nil {
		defer rows.Close()
		cts, cerr := rows.ColumnTypes()
		if cerr != nil {
			err = cerr
		}
		for _, ct := range cts {
			cols = append(cols, ct.Name())
			types = append(types, ct.DatabaseTypeName())
		}
		for err == nil && rows.Next() {
			n++
		}
		if err == nil {
			err = rows.Err()
		}
	}
	var diffs []string
	if e.Shape != nil {
		if err == nil {
			return []string{fmt.Sprintf("real host answered SQL error %d, simulator answered %d row(s) and no error", e.Shape.SQLNumber, n)}
		}
		if g := transcript.ShapeOf(err); g.SQLNumber != e.Shape.SQLNumber || g.SQLClass != e.Shape.SQLClass {
			diffs = append(diffs, fmt.Sprintf("SQL error: real host answered %d (severity %d), simulator answered %d (severity %d): %v", e.Shape.SQLNumber, e.Shape.SQLClass, g.SQLNumber, g.SQLClass, err))
		}
		return diffs
	}
	if err != nil {
		return []string{fmt.Sprintf("real host answered %d row(s) and no error, simulator answered %v", len(e.Rows), err)}
	}
	if w, g := strings.Join(e.Columns, ", "), strings.Join(cols, ", "); !strings.EqualFold(w, g) {
		diffs = append(diffs, fmt.Sprintf("columns: real host answered [%s], simulator answered [%s]", w, g))
	}
	if w, g := strings.Join(e.Types, ", "), strings.Join(types, ", "); w != g {
		diffs = append(diffs, fmt.Sprintf("column types: real host answered [%s], simulator answered [%s]", w, g))
	}
	if (len(e.Rows) == 0) != (n == 0) {
		rowsOf := func(k int) string {
			if k == 0 {
				return "none"
			}
			return fmt.Sprintf("%d row(s)", k)
		}
		diffs = append(diffs, fmt.Sprintf("rows: real host answered %s, simulator answered %s", rowsOf(len(e.Rows)), rowsOf(n)))
	}
	return diffs
}

func (h *replayHost) replayError(ctx context.Context, t *testing.T, e transcript.Entry) []string {
	want := *e.Shape
	switch e.Operation {
	case transcript.ProbeClearText:
		if h.https {
			return []string{"the clear-text probe needs an HTTP listener, and the transcript's host was reached over HTTPS"}
		}
		got, err := transcript.ProbeClearTextBody(ctx, h.winrmHost, h.winrmPort, replayWinRMUser, replayWinRMPassword)
		if got.HTTPStatus == 0 {
			return []string{fmt.Sprintf("real host answered HTTP %d, simulator answered no HTTP answer (%v)", want.HTTPStatus, err)}
		}
		if describeHTTP(want) != describeHTTP(got) {
			return []string{fmt.Sprintf("real host answered %s, simulator answered %s", describeHTTP(want), describeHTTP(got))}
		}
		return nil
	case transcript.ProbeSQLLogin:
		password := replaySQLPassword
		if want.SQLNumber == contract.SQLErrLoginFailed {
			password = "not-" + replaySQLPassword // the recorded logon failed: fail it the same way
		}
		err := h.db(t, password).PingContext(ctx)
		got := transcript.ShapeOf(err)
		if got.SQLNumber != want.SQLNumber || got.SQLClass != want.SQLClass {
			return []string{fmt.Sprintf("SQL logon: real host answered error %d (severity %d), simulator answered error %d (severity %d)", want.SQLNumber, want.SQLClass, got.SQLNumber, got.SQLClass)}
		}
		return nil
	}
	switch want.Kind {
	case "unreachable", "timeout", "tls", "auth", "config":
		// The network's, the credentials' or the run's own doing (the suite cuts
		// WinRM in stage 4): no answer of the host to replay.
		t.Logf("entry %s: a %s error is not an answer of the host; not replayed", e.Operation, want.Kind)
		return nil
	}
	op := contract.Operation(e.Operation)
	if contract.Params(op) == nil {
		return []string{fmt.Sprintf("the replay does not know the step %q: teach internal/winsim/replay_test.go how to take it", e.Operation)}
	}
	got := h.typedError(ctx, op, e.Params)
	if got.Kind != want.Kind || got.Code != want.Code || got.ExitCode != want.ExitCode {
		return []string{fmt.Sprintf("real host answered %s, simulator answered %s", describeScript(want), describeScript(got))}
	}
	return nil
}

// typedError runs an operation through internal/remote's Host, as the provider does,
// and returns its error's shape (the zero shape when it succeeded).
func (h *replayHost) typedError(ctx context.Context, op contract.Operation, raw json.RawMessage) transcript.ErrorShape {
	rh, err := remote.New(h.remoteConfig())
	if err != nil {
		return transcript.ShapeOf(err)
	}
	p := contract.Params(op)
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, p); err != nil {
			return transcript.ErrorShape{Kind: "params: " + err.Error()}
		}
	}
	switch v := p.(type) {
	case *contract.ReadInstanceParams:
		_, err = rh.ReadInstance(ctx, *v)
	case *contract.SetRightParams:
		_, err = rh.SetRight(ctx, *v)
	case *contract.RestartInstanceParams:
		_, err = rh.RestartInstance(ctx, *v)
	case *contract.RestartStatusParams:
		_, err = rh.RestartStatus(ctx, *v)
	}
	if err == nil {
		return transcript.ErrorShape{}
	}
	return transcript.ShapeOf(err)
}

func describeHTTP(s transcript.ErrorShape) string {
	d := fmt.Sprintf("HTTP %d", s.HTTPStatus)
	switch {
	case s.SOAPFault && s.FaultCode != "":
		d += " with SOAP fault " + s.FaultCode
	case s.SOAPFault:
		d += " with a SOAP fault"
	case s.BodyBytes == 0:
		d += " with an empty body"
	default:
		d += " with a body that is no SOAP fault"
	}
	if s.ContentType != "" {
		d += " (" + s.ContentType + ")"
	}
	return d
}

func describeScript(s transcript.ErrorShape) string {
	if s.Kind == "" {
		return "success"
	}
	d := "a " + s.Kind + " error"
	if s.Code != "" {
		d += " " + s.Code
	}
	if s.ExitCode != 0 {
		d += fmt.Sprintf(" (exit %d)", s.ExitCode)
	}
	return d
}

// The clear-text probe the suite sends (and the replay repeats) tells a host with
// Windows' default, AllowUnencrypted false, from one that allows clear text.
func TestClearTextProbeShapes(t *testing.T) {
	for _, tc := range []struct {
		allow bool
		want  string
	}{
		{false, "HTTP 500 with an empty body"},
		{true, "HTTP 200 with a body that is no SOAP fault (application/soap+xml)"},
	} {
		t.Run(fmt.Sprintf("allow_unencrypted=%v", tc.allow), func(t *testing.T) {
			allow := tc.allow
			h := startReplayHost(t, &transcript.Transcript{Facts: transcript.Facts{Instance: "MSSQLSERVER", AllowUnencrypted: &allow}})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			got, err := transcript.ProbeClearTextBody(ctx, h.winrmHost, h.winrmPort, replayWinRMUser, replayWinRMPassword)
			if d := describeHTTP(got); d != tc.want {
				t.Errorf("the probe saw %s (error %v), want %s", d, err, tc.want)
			}
			if (err == nil) != tc.allow {
				t.Errorf("the probe's error = %v; want one only when the body is refused", err)
			}
		})
	}
}
