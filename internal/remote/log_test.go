package remote

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
)

// recordingLogger is a contract.Logger that keeps every line.
type recordingLogger struct {
	mu    sync.Mutex
	lines []string
}

func (l *recordingLogger) add(level string, msg string, fields map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf("%s %s %v", level, msg, fields))
}

func (l *recordingLogger) Debug(_ context.Context, msg string, fields map[string]any) {
	l.add("DEBUG", msg, fields)
}

func (l *recordingLogger) Info(_ context.Context, msg string, fields map[string]any) {
	l.add("INFO", msg, fields)
}

func (l *recordingLogger) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// remote and sqlcheck log through the Logger their caller gives (the provider's
// writes to tflog), and never a password.
func TestOperationsLogThroughTheCallersLogger(t *testing.T) {
	sim := newSimHost(t, simConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := &recordingLogger{}
	h, err := New(Config{Host: "127.0.0.1", Port: sim.port, Auth: "ntlm", Username: testUser, Password: testPassword, Timeout: 20 * time.Second, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.ReadInstance(ctx, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume}); err != nil {
		t.Fatal(err)
	}
	check := sqlcheck.New(sqlcheck.Config{Username: simLogin, Password: simLoginPwd, Encrypt: "disable", Log: log})
	if _, err := check.Check(ctx, sqlcheck.Target{Host: "127.0.0.1", Port: sim.sqlPorts["MSSQLSERVER"], Instance: "MSSQLSERVER"}); err != nil {
		t.Fatal(err)
	}
	got := log.all()
	for _, want := range []string{"DEBUG WinRM operation finished", "INFO WinRM logon mechanism of the host", "DEBUG SQL check finished"} {
		if !strings.Contains(got, want) {
			t.Errorf("the log lacks %q:\n%s", want, got)
		}
	}
	for _, secret := range []string{testPassword, simLoginPwd} {
		if strings.Contains(got, secret) {
			t.Errorf("the log holds a password:\n%s", got)
		}
	}
}
