package remote

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

func sampleReadInstance() contract.ReadInstanceResult {
	start := time.Date(2026, 4, 1, 8, 30, 0, 123456700, time.UTC)
	on := true
	return contract.ReadInstanceResult{
		ComputerName: "SQL01", Found: true, InstalledInstances: []string{"MSSQLSERVER"},
		Instance: "MSSQLSERVER", InstanceID: "MSSQL16.MSSQLSERVER", Version: "16.0.4135.4",
		ServiceName: "MSSQLSERVER", ServiceState: contract.StateRunning, ProcessID: 4242, ProcessStartTime: &start,
		StartAccount: `NT Service\MSSQLSERVER`, StartAccountSID: "S-1-5-80-3880718306-3832830129-1677859214-2598158968-1052248003",
		ServiceSIDType: 1, TCPPort: 1433,
		RightHolders: []contract.Principal{{SID: "S-1-5-32-544", Name: `BUILTIN\Administrators`}, {SID: "S-1-5-21-1-2-3-1107"}},
		ErrorLog:     contract.ErrorLogInfo{Path: `C:\MSSQL\Log\ERRORLOG`, Found: true, Line: "2026-04-01 08:30:01.12 Server      Database Instant File Initialization: enabled.", Enabled: &on},
		Dependents:   []contract.ServiceInfo{{Name: "SQLSERVERAGENT", State: contract.StateRunning}},
	}
}

func TestReadInstanceOverNTLMAndBasic(t *testing.T) {
	want := sampleReadInstance()
	// Basic over plain HTTP needs a host that allows clear text; NTLM is sealed.
	h := newTestHostWith(t, hostOptions{allowUnencrypted: true}, func(op contract.Operation, params json.RawMessage) answer {
		return answer{stdout: jsonOf(t, want)}
	})
	for _, auth := range []string{"ntlm", "basic"} {
		t.Run(auth, func(t *testing.T) {
			host, err := New(h.config(auth))
			if err != nil {
				t.Fatal(err)
			}
			got, err := host.ReadInstance(context.Background(), contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
			if err != nil {
				t.Fatalf("ReadInstance: %v", err)
			}
			if got.ServiceName != "MSSQLSERVER" || got.TCPPort != 1433 || !got.ProcessStartTime.Equal(*want.ProcessStartTime) ||
				len(got.RightHolders) != 2 || got.RightHolders[1].SID != "S-1-5-21-1-2-3-1107" || got.ErrorLog.Enabled == nil || !*got.ErrorLog.Enabled {
				t.Fatalf("ReadInstance = %+v", got)
			}
		})
	}
	calls := h.recorded()
	if len(calls) != 2 || calls[0].op != contract.OpReadInstance || !strings.HasSuffix(calls[0].user, testUser) {
		t.Fatalf("host saw %+v", calls)
	}
	var p contract.ReadInstanceParams
	if err := json.Unmarshal(calls[0].params, &p); err != nil || p.Instance != "MSSQLSERVER" || p.Right != contract.RightManageVolume {
		t.Fatalf("params arrived as %s (%v)", calls[0].params, err)
	}
}

// Windows PowerShell prints what the scripts build (arrays always arrays, times as
// ISO strings); the simulator prints Go's json.Marshal (nil slices as null). Both
// must decode.
func TestResultArraysNullOrEmpty(t *testing.T) {
	powershell := `{"computer_name":"SQL01","found":true,"installed_instances":["MSSQLSERVER","SQLEXPRESS"],"instance":"SQLEXPRESS",` +
		`"instance_id":"MSSQL16.SQLEXPRESS","version":"16.0.1000.6","service_name":"MSSQL$SQLEXPRESS","service_state":"Stopped","process_id":0,` +
		`"process_start_time":null,"start_account":"NT Service\\MSSQL$SQLEXPRESS","start_account_sid":"","service_sid_type":1,"tcp_port":0,` +
		`"startup_parameters":[],"clustered":false,"right_holders":[],"administrators_members":[{"sid":"S-1-5-21-9-9-9-500","name":"SQL01\\Administrator"}],` +
		`"group_policy":{"known":false,"defined":false,"holders":[],"detail":"Group Policy (RSoP) could not be read: Invalid namespace"},` +
		`"errorlog":{"path":"","found":false},"dependents":[]}`
	goNull := `{"computer_name":"SQL01","found":true,"installed_instances":null,"service_name":"MSSQL$SQLEXPRESS","service_state":"Stopped",` +
		`"startup_parameters":null,"right_holders":null,"administrators_members":null,"group_policy":{"known":true,"defined":false,"holders":null},` +
		`"errorlog":{"path":"","found":false},"dependents":null}`
	outputs := []string{powershell, goNull}
	n := 0
	h := newTestHost(t, false, func(contract.Operation, json.RawMessage) answer {
		out := outputs[n]
		n++
		return answer{stdout: "\r\n" + out + "\r\n"}
	})
	host, err := New(h.config("ntlm"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range outputs {
		got, err := host.ReadInstance(context.Background(), contract.ReadInstanceParams{Instance: "SQLEXPRESS", Right: contract.RightManageVolume})
		if err != nil {
			t.Fatalf("output %d: %v", i, err)
		}
		if got.ServiceName != "MSSQL$SQLEXPRESS" || got.ProcessStartTime != nil || len(got.RightHolders) != 0 || len(got.Dependents) != 0 {
			t.Fatalf("output %d decoded to %+v", i, got)
		}
	}
}

func TestSetRightAndRestart(t *testing.T) {
	started := time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC)
	finished := started.Add(12 * time.Second)
	h := newTestHost(t, false, func(op contract.Operation, params json.RawMessage) answer {
		switch op {
		case contract.OpSetRight:
			var p contract.SetRightParams
			if err := json.Unmarshal(params, &p); err != nil {
				t.Error(err)
			}
			return answer{stdout: jsonOf(t, contract.SetRightResult{Changed: p.Grant, Holders: []contract.Principal{{SID: p.SID}}})}
		case contract.OpRestartInstance:
			return answer{stdout: jsonOf(t, contract.RestartInstanceResult{
				ServiceName: "MSSQLSERVER", Stopped: []string{"SQLSERVERAGENT", "MSSQLSERVER"}, Started: []string{"MSSQLSERVER", "SQLSERVERAGENT"},
				ServiceState: contract.StateRunning, StartedAt: started, FinishedAt: &finished, ProcessStartTime: &started,
			})}
		}
		return answer{code: 1, stderr: "unexpected"}
	})
	host, err := New(h.config("ntlm"))
	if err != nil {
		t.Fatal(err)
	}
	sid := "S-1-5-80-3880718306-3832830129-1677859214-2598158968-1052248003"
	sr, err := host.SetRight(context.Background(), contract.SetRightParams{Right: contract.RightManageVolume, SID: sid, Grant: true})
	if err != nil || !sr.Changed || len(sr.Holders) != 1 || sr.Holders[0].SID != sid {
		t.Fatalf("SetRight = %+v, %v", sr, err)
	}
	rr, err := host.RestartInstance(context.Background(), contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 120})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rr.Started, ",") != "MSSQLSERVER,SQLSERVERAGENT" || rr.FinishedAt.Sub(rr.StartedAt) != 12*time.Second {
		t.Fatalf("RestartInstance = %+v", rr)
	}
	var p contract.RestartInstanceParams
	calls := h.recorded()
	if err := json.Unmarshal(calls[1].params, &p); err != nil || p.TimeoutSeconds != 120 {
		t.Fatalf("restart params arrived as %s", calls[1].params)
	}
}

func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *remote.Error", err, err)
	}
	return e
}

func TestScriptErrors(t *testing.T) {
	cases := []struct {
		name     string
		answer   answer
		kind     ErrorKind
		code     string
		exit     int
		contains []string
		absent   []string
	}{
		{
			name:   "foreseen",
			answer: answer{code: contract.ExitRefused, stdout: `{"error":"clustered","message":"MSSQLSERVER on SQL01 is a failover cluster instance."}`},
			kind:   KindScript, code: "clustered", exit: 3,
			contains: []string{"restart_instance on 127.0.0.1: MSSQLSERVER on SQL01 is a failover cluster instance.", "Failover Cluster Manager"},
		},
		{
			name: "terminating PowerShell error",
			answer: answer{code: 1, stderr: "#< CLIXML\r\n<Objs Version=\"1.1.0.1\" xmlns=\"http://schemas.microsoft.com/powershell/2004/04\">" +
				"<Obj S=\"progress\" RefId=\"0\"><TN RefId=\"0\"><T>System.Management.Automation.PSCustomObject</T></TN><MS><PR N=\"Record\"><AV>Preparing modules for first use.</AV></PR></MS></Obj>" +
				"<S S=\"Error\">Stop-Service : Service 'SQL Server (MSSQLSERVER) (MSSQLSERVER)' cannot be stopped due to the following error: Cannot open MSSQLSERVER service on computer '.'._x000D__x000A_</S>" +
				"<S S=\"Error\">At line:40 char:1_x000D__x000A_</S></Objs>"},
			kind: KindScript, code: "", exit: 1,
			contains: []string{"PowerShell failed with exit code 1: Stop-Service : Service 'SQL Server (MSSQLSERVER) (MSSQLSERVER)' cannot be stopped", "Cannot open MSSQLSERVER service on computer '.'. At line:40 char:1" /* the record's lines joined */, "local Administrator"},
			absent:   []string{"CLIXML", "_x000D_", "Preparing modules"},
		},
		{
			name:   "empty output",
			answer: answer{code: 0},
			kind:   KindProtocol, exit: 0,
			contains: []string{"exited 0 but printed nothing", "powershell.exe"},
		},
		{
			name:   "not JSON",
			answer: answer{code: 0, stdout: "Windows PowerShell\r\nCopyright (C) Microsoft Corporation."},
			kind:   KindProtocol, exit: 0,
			contains: []string{"not the expected JSON", "Copyright (C) Microsoft"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestHost(t, false, func(contract.Operation, json.RawMessage) answer { return tc.answer })
			host, err := New(h.config("ntlm"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = host.RestartInstance(context.Background(), contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 60})
			if err == nil {
				t.Fatal("no error")
			}
			e := asError(t, err)
			if e.Kind != tc.kind || e.Code != tc.code || e.ExitCode != tc.exit || e.Op != contract.OpRestartInstance {
				t.Fatalf("error = %+v", e)
			}
			for _, s := range tc.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q contains %q", err, s)
				}
			}
		})
	}
}

func TestWrongPasswordIsAuthError(t *testing.T) {
	h := newTestHost(t, false, func(contract.Operation, json.RawMessage) answer { return answer{stdout: "{}"} })
	for _, auth := range []string{"ntlm", "basic"} {
		t.Run(auth, func(t *testing.T) {
			cfg := h.config(auth)
			cfg.Password = "wrong"
			host, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = host.ReadInstance(context.Background(), contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
			e := asError(t, err)
			where := "127.0.0.1:" + strconv.Itoa(h.port)
			if e.Kind != KindAuth || !strings.Contains(err.Error(), "authentication failed for Administrator at "+where) {
				t.Fatalf("error = %v (kind %d)", err, e.Kind)
			}
			if strings.Contains(err.Error(), "invalid content type") || strings.Contains(err.Error(), "wrong") {
				t.Fatalf("error leaks transport text or the password: %v", err)
			}
			if !strings.Contains(e.Hint, "local Administrator") || e.Setting != SettingPassword || e.Auth != auth || e.User != "Administrator" {
				t.Fatalf("hint = %q, setting %s, auth %q, user %q", e.Hint, e.Setting, e.Auth, e.User)
			}
		})
	}
	if n := len(h.recorded()); n != 0 {
		t.Fatalf("%d commands ran with a wrong password", n)
	}
}

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // nothing listens there now: connection refused
	host, err := New(Config{Host: "127.0.0.1", Port: port, Auth: "ntlm", Username: testUser, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	_, err = host.ReadInstance(context.Background(), contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
	e := asError(t, err)
	if e.Kind != KindUnreachable || !strings.Contains(err.Error(), "cannot connect to the WinRM listener at 127.0.0.1:"+strconv.Itoa(port)) ||
		!strings.Contains(err.Error(), "connection refused") || !strings.Contains(e.Hint, "winrm quickconfig") {
		t.Fatalf("error = %v (kind %d)", err, e.Kind)
	}
}

func TestTLS(t *testing.T) {
	want := sampleReadInstance()
	h := newTestHost(t, true, func(contract.Operation, json.RawMessage) answer { return answer{stdout: jsonOf(t, want)} })
	params := contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume}

	t.Run("verified with ca_cert", func(t *testing.T) {
		cfg := h.config("ntlm")
		cfg.HTTPS, cfg.CACert = true, h.caPEM
		host, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := host.ReadInstance(context.Background(), params); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("tls_server_name", func(t *testing.T) {
		cfg := h.config("basic")
		cfg.HTTPS, cfg.CACert, cfg.TLSServerName = true, h.caPEM, "sql01.example.test"
		host, _ := New(cfg)
		if _, err := host.ReadInstance(context.Background(), params); err != nil {
			t.Fatal(err)
		}
		cfg.TLSServerName = "sql02.example.test"
		host, _ = New(cfg)
		_, err := host.ReadInstance(context.Background(), params)
		if e := asError(t, err); e.Kind != KindTLS || !strings.Contains(err.Error(), "could not be verified") || e.Setting != SettingCACert {
			t.Fatalf("error = %v", err)
		}
	})
	t.Run("unknown CA", func(t *testing.T) {
		cfg := h.config("ntlm")
		cfg.HTTPS = true
		host, _ := New(cfg)
		_, err := host.ReadInstance(context.Background(), params)
		e := asError(t, err)
		if e.Kind != KindTLS || e.Setting != SettingCACert || !strings.Contains(e.Hint, "skip verification") {
			t.Fatalf("error = %v (kind %d)", err, e.Kind)
		}
	})
	t.Run("insecure", func(t *testing.T) {
		cfg := h.config("ntlm")
		cfg.HTTPS, cfg.Insecure = true, true
		host, _ := New(cfg)
		if _, err := host.ReadInstance(context.Background(), params); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("https against http listener", func(t *testing.T) {
		plain := newTestHost(t, false, func(contract.Operation, json.RawMessage) answer { return answer{stdout: "{}"} })
		cfg := plain.config("ntlm")
		cfg.HTTPS = true
		host, _ := New(cfg)
		_, err := host.ReadInstance(context.Background(), params)
		if e := asError(t, err); e.Kind != KindTLS || e.Setting != SettingHTTPS || !e.HTTPS {
			t.Fatalf("error = %v (kind %d)", err, e.Kind)
		}
	})
}

func TestDeadline(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	h := newTestHost(t, false, func(contract.Operation, json.RawMessage) answer {
		return answer{wait: release, stdout: "{}"}
	})
	host, err := New(h.config("ntlm"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err = host.RestartInstance(ctx, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 600})
	e := asError(t, err)
	if e.Kind != KindTimeout || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v (kind %d)", err, e.Kind)
	}
	// The answer came from the 1.5 s deadline (the host's restart would run 600 s,
	// and release is closed only when the test ends): a wait without it would hang
	// until go test's -timeout, which fails the run.
}

func TestNewValidates(t *testing.T) {
	for _, tc := range []struct {
		cfg      Config
		sentinel error
		setting  Setting
		want     string
	}{
		{Config{Username: "u"}, ErrNoHost, SettingHost, "no host"},
		{Config{Host: "h", Username: "u", Auth: "kerberos", Password: "p", Krb5Conf: "no-such-krb5.conf"}, ErrKerberosConfig, SettingKrb5Conf, "cannot read krb5.conf no-such-krb5.conf"},
		{Config{Host: "h", Username: "u", Auth: "kerberos", AllowUnencrypted: true}, ErrUnencryptedUnused, SettingAllowUnencrypted, "kerberos encrypts every message"},
		{Config{Host: "h", Username: "u", Auth: "digest"}, ErrUnsupportedAuth, SettingAuth, `not supported: "digest"`},
		{Config{Host: "h", Username: "u", Auth: "basic"}, ErrClearText, SettingAuth, "over plain HTTP would send the password in clear text"},
		{Config{Host: "h", Username: "u", AllowUnencrypted: true}, ErrUnencryptedUnused, SettingAllowUnencrypted, "negotiate encrypts every message"},
		{Config{Host: "h", Username: "u", Auth: "basic", HTTPS: true, AllowUnencrypted: true}, ErrUnencryptedUnused, SettingAllowUnencrypted, "HTTPS encrypts the channel"},
		{Config{Host: "h", Password: "p"}, ErrNoUsername, SettingUsername, "no WinRM username"},
		{Config{Host: "h", Username: "u", HTTPS: true, CACert: []byte("not a pem")}, ErrCACert, SettingCACert, "holds no PEM certificate"},
	} {
		_, err := New(tc.cfg)
		e := asError(t, err)
		if e.Kind != KindConfig || e.Setting != tc.setting || !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v (kind %d, setting %s); want KindConfig, %s, %v, %q", tc.cfg, err, e.Kind, e.Setting, tc.setting, tc.sentinel, tc.want)
		}
	}
}
