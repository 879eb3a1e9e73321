package winsim_test

import (
	"io"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
)

// The control plane has no authentication, so it refuses what a web page could
// make a browser send to it: a "simple" cross-site POST (text/plain or a form), a
// request with a foreign Origin, and one whose Host is a name that resolves to it
// (DNS rebinding). Tools that send application/json to its address still work.
func TestControlRefusesCrossSiteRequests(t *testing.T) {
	sim := startFleet(t)
	addr := sim.ControlAddr()
	stop := `{"action":"stop_service","service":"MSSQLSERVER","force":true}`
	send := func(method, host, origin, contentType, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+addr+"/v1/hosts/sql01"+map[bool]string{true: "/actions"}[method == http.MethodPost], strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	port := addr[strings.LastIndex(addr, ":"):]
	for _, tc := range []struct {
		name                           string
		method, host, origin, ct, body string
		status                         int
		want                           string
	}{
		{"text/plain POST", http.MethodPost, "", "", "text/plain", stop, http.StatusUnsupportedMediaType, "application/json"},
		{"form POST", http.MethodPost, "", "", "application/x-www-form-urlencoded", stop, http.StatusUnsupportedMediaType, "application/json"},
		{"POST without Content-Type", http.MethodPost, "", "", "", stop, http.StatusUnsupportedMediaType, "application/json"},
		{"foreign Origin", http.MethodPost, "", "http://evil.example", "application/json", stop, http.StatusForbidden, "evil.example"},
		{"null Origin", http.MethodPost, "", "null", "application/json", stop, http.StatusForbidden, "cross-site"},
		{"foreign Origin on GET", http.MethodGet, "", "http://evil.example", "", "", http.StatusForbidden, "cross-site"},
		{"DNS rebinding", http.MethodGet, "evil.example" + port, "", "", "", http.StatusForbidden, "DNS rebinding"},
		{"another port", http.MethodGet, "127.0.0.1:1", "", "", "", http.StatusForbidden, "DNS rebinding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := send(tc.method, tc.host, tc.origin, tc.ct, tc.body); code != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("answered %d %s; want %d naming %q", code, body, tc.status, tc.want)
			}
		})
	}
	if up, err := sim.SQLListening("sql01", "MSSQLSERVER"); err != nil || !up {
		t.Fatalf("after the refused requests SQL Server listens: %v, %v; want it untouched", up, err)
	}
	// The control plane's own address, as "localhost" too, and its own Origin.
	if code, body := send(http.MethodGet, "localhost"+port, "http://localhost"+port, "", ""); code != http.StatusOK {
		t.Fatalf("GET with Host localhost and the control plane's own Origin: %d %s", code, body)
	}
	if code, body := send(http.MethodPost, "", "", "application/json; charset=utf-8", stop); code != http.StatusOK {
		t.Fatalf("a JSON POST from a tool: %d %s", code, body)
	}
	if code, body := send(http.MethodGet, "", "", "", ""); code != http.StatusOK {
		t.Fatalf("GET from a tool: %d %s", code, body)
	}
	resp, err := http.Get("http://" + addr + "/v1/hosts/sql01/eventlog")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(b)) != "[]" {
		t.Fatalf("GET /v1/hosts/sql01/eventlog before any change: %d %s", resp.StatusCode, b)
	}
	if up, _ := sim.SQLListening("sql01", "MSSQLSERVER"); up {
		t.Fatal("the JSON stop_service was accepted but SQL Server still listens")
	}
}

func TestControlExposed(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:1": false, "[::1]:1": false, "0.0.0.0:1": true, "[::]:1": true, "192.0.2.7:1": true, "sim.example:1": true} {
		if got := winsim.ControlExposed(addr); got != want {
			t.Errorf("ControlExposed(%q) = %v, want %v", addr, got, want)
		}
	}
}

// README.md's "Control plane" documents every endpoint the control plane
// registers, every action of POST /v1/hosts/{host}/actions and of POST
// /v1/clusters/{cluster}/actions in its tables, and every field of their bodies;
// and names none that the code does not have.
func TestControlPlaneDocumentedInReadme(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := func(text, heading string) string {
		t.Helper()
		i := strings.Index(text, "\n"+heading+"\n")
		if i < 0 {
			t.Fatalf("README.md has no %q section", heading)
		}
		rest := text[i+len(heading)+2:]
		level := heading[:strings.Index(heading, " ")+1]
		if j := strings.Index(rest, "\n"+level); j >= 0 {
			rest = rest[:j]
		}
		return rest
	}
	control := section(string(b), "## Control plane")
	code := regexp.MustCompile("`([^`]+)`")
	// firstColumn is the names in backquotes in the first column of the section's tables.
	firstColumn := func(text string) map[string]bool {
		out := map[string]bool{}
		for _, line := range strings.Split(text, "\n") {
			cells := strings.Split(line, "|")
			if len(cells) < 3 || cells[0] != "" {
				continue
			}
			for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
				out[m[1]] = true
			}
		}
		return out
	}
	same := func(what string, inCode []string, inReadme map[string]bool) {
		t.Helper()
		for _, n := range inCode {
			if !inReadme[n] {
				t.Errorf("the control plane has the %s %q; README.md's \"Control plane\" does not document it", what, n)
			}
		}
		for n := range inReadme {
			if !slices.Contains(inCode, n) {
				t.Errorf("README.md's \"Control plane\" documents the %s %q, which the control plane does not have", what, n)
			}
		}
	}
	endpoints := map[string]bool{}
	for n := range firstColumn(control) {
		if m, _, _ := strings.Cut(n, " "); m == http.MethodGet || m == http.MethodPost {
			endpoints[n] = true
		}
	}
	same("endpoint", winsim.ControlPatterns(), endpoints)
	hostActions, clusterActions := section(control, "### Actions"), section(control, "### Cluster actions")
	same("host action", winsim.ActionNames, firstColumn(hostActions))
	same("cluster action", winsim.ClusterActionNames, firstColumn(clusterActions))
	for _, tc := range []struct {
		body  any
		table string
	}{{winsim.Action{}, hostActions}, {winsim.ClusterAction{}, clusterActions}} {
		for _, f := range jsonFields(reflect.TypeOf(tc.body)) {
			if f != "action" && !strings.Contains(tc.table, "`"+f+"`") {
				t.Errorf("%T has the field %q; README.md's table of its actions does not name it", tc.body, f)
			}
		}
	}
}

// jsonFields are the JSON names of a struct's fields, its embedded structs' too.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}
