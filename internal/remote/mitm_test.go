package remote

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/mitm"
)

// attacks are the proxy's modes that must be refused, by name.
var attacks = []struct {
	name string
	mode mitm.Attack
}{{"forge", mitm.Forge}, {"tamper", mitm.Tamper}, {"replay", mitm.Replay}}

// grantVia asks host h (through whatever is at port) to grant the right to
// NT SERVICE\MSSQLSERVER.
func grantVia(cfg Config) error {
	h, err := New(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = h.SetRight(ctx, contract.SetRightParams{Right: contract.RightManageVolume, SID: serviceSID, Grant: true})
	return err
}

// serviceSID is NT SERVICE\MSSQLSERVER's SID on every host.
const serviceSID = "S-1-5-80-3880718306-3832830129-1677859214-2598158968-1052248003"

// wantMITM fails unless err is a refused answer naming a possible
// man-in-the-middle and the host, not retried.
func wantMITM(t *testing.T, err error, port int) {
	t.Helper()
	var re *Error
	if !errors.As(err, &re) || !errors.Is(err, ErrUnverifiedAnswer) || Transient(err) {
		t.Fatalf("got %v\nwant an *Error wrapping ErrUnverifiedAnswer, not transient", err)
	}
	where := "127.0.0.1:" + strconv.Itoa(port)
	if !strings.Contains(err.Error(), "man-in-the-middle") || !strings.Contains(err.Error(), where) {
		t.Fatalf("the error does not name a possible man-in-the-middle and %s: %v", where, err)
	}
	if re.Attempts > 1 {
		t.Fatalf("a possible man-in-the-middle was retried (%d attempts): %v", re.Attempts, err)
	}
}

// A host without the user's credentials answers NTLM's first message, and every
// message after it, with a forged clear-text success over HTTP: the operation fails
// naming a possible man-in-the-middle, with NTLM and with negotiate.
func TestFakeHostRefused(t *testing.T) {
	port := portOf(t, mitm.FakeHost(t, "127.0.0.1:0"))
	for _, auth := range []string{AuthNTLM, AuthNegotiate} {
		t.Run(auth, func(t *testing.T) {
			err := grantVia(Config{Host: "127.0.0.1", Port: port, Auth: auth, Username: testUser, Password: testPassword, Timeout: 10 * time.Second})
			wantMITM(t, err, port)
		})
	}
}

// An on-path proxy forwards the NTLM logon to the real host and then forges,
// alters or replays the answers: each is refused and the host's right is
// unchanged. A 503 in its place is an ordinary failure, retried as transient.
func TestOnPathProxyNTLM(t *testing.T) {
	s := newSimHost(t, simConfig())
	ntlmConfig := func(port int) Config {
		return Config{Host: "127.0.0.1", Port: port, Auth: AuthNTLM, Username: testUser, Password: testPassword, Timeout: 10 * time.Second}
	}
	s.refusesAttacks(t, ntlmConfig)
	t.Run("unavailable", func(t *testing.T) {
		_, _, err := s.grantThrough(t, mitm.Unavailable, ntlmConfig)
		var re *Error
		if !errors.As(err, &re) || errors.Is(err, ErrUnverifiedAnswer) || re.HTTPStatus != http.StatusServiceUnavailable || !Transient(err) {
			t.Fatalf("got %v\nwant an ordinary transient HTTP 503 failure", err)
		}
		s.wantNotGranted(t)
	})
	t.Run("control", func(t *testing.T) {
		if _, _, err := s.grantThrough(t, mitm.Transparent, ntlmConfig); err != nil {
			t.Fatalf("through a proxy that forwards unchanged: %v", err)
		}
		// The grant left its trace in the host's event log, with the provider's User-Agent.
		log := s.hostOf(t).EventLog()
		if len(log) != 1 || log[0].Change != "grant" || log[0].SID != serviceSID || log[0].Agent != contract.UserAgent("") ||
			!strings.Contains(log[0].Account, testUser) {
			t.Fatalf("the host's event log after the grant: %+v", log)
		}
	})
}

// The same on-path proxy in front of a Kerberos logon: the host's AP-REP is
// genuine (forwarded), yet the answers after it must be sealed and verify.
func TestOnPathProxyKerberos(t *testing.T) {
	k, s := krbSim(t)
	krbConfig := func(port int) Config {
		return Config{Host: "127.0.0.1", Port: port, Auth: AuthKerberos, SPN: krbSPN, Username: krbUser + "@" + k.Realm,
			Password: krbPass, Krb5Conf: k.Krb5Conf, Timeout: 10 * time.Second}
	}
	s.refusesAttacks(t, krbConfig)
	t.Run("control", func(t *testing.T) {
		if _, _, err := s.grantThrough(t, mitm.Transparent, krbConfig); err != nil {
			t.Fatalf("through a proxy that forwards unchanged: %v", err)
		}
	})
}

// grantThrough starts an on-path proxy in mode in front of s and grants the right
// through it, with cfg's settings for the proxy's port.
func (s *simHost) grantThrough(t *testing.T, mode mitm.Attack, cfg func(port int) Config) (*mitm.Proxy, int, error) {
	t.Helper()
	p, addr := mitm.StartProxy(t, "127.0.0.1:0", "127.0.0.1:"+strconv.Itoa(s.port), mode)
	port := portOf(t, addr)
	return p, port, grantVia(cfg(port))
}

// refusesAttacks runs each attack of the on-path proxy against s: each is refused
// as a possible man-in-the-middle, and the host changed nothing.
func (s *simHost) refusesAttacks(t *testing.T, cfg func(port int) Config) {
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			p, port, err := s.grantThrough(t, a.mode, cfg)
			wantMITM(t, err, port)
			if a.mode == mitm.Replay && !strings.Contains(err.Error(), "sequence number") {
				t.Fatalf("a replayed answer was refused, but not for its sequence number: %v", err)
			}
			if p.Sealed() == 0 {
				t.Fatal("no sealed message went through the proxy")
			}
			s.wantNotGranted(t)
		})
	}
}

// wantNotGranted fails when the simulated host's NT SERVICE\MSSQLSERVER holds the
// right.
func (s *simHost) wantNotGranted(t *testing.T) {
	t.Helper()
	h := s.hostOf(t)
	if log := h.EventLog(); len(log) != 0 {
		t.Fatalf("the host's event log records changes through the attacked connection: %+v", log)
	}
	holders, err := h.RightHolders(contract.RightManageVolume)
	if err != nil {
		t.Fatal(err)
	}
	for _, sid := range holders {
		if sid == serviceSID {
			t.Fatalf("the host granted the right through the attacked connection: %v", holders)
		}
	}
}

// Over HTTPS too, NTLM's first message carries no body (the script would reach
// whoever answers before any logon), and a host that accepts it with 200 is refused.
func TestNTLMNegotiateCarriesNoBodyOverHTTPS(t *testing.T) {
	var mu sync.Mutex
	var negotiateBodies []int
	accept := false
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.HasPrefix(r.Header.Get("Authorization"), "Negotiate TlRMTVNTUAAB") {
			mu.Lock()
			negotiateBodies = append(negotiateBodies, len(b))
			ok := accept
			mu.Unlock()
			if ok {
				w.Header().Set("Content-Type", "application/soap+xml;charset=UTF-8")
				_, _ = io.WriteString(w, mitm.ForgedSOAP)
				return
			}
		}
		w.Header().Set("WWW-Authenticate", "Negotiate")
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	cfg := Config{Host: "127.0.0.1", Port: port, HTTPS: true, Insecure: true, Auth: AuthNTLM, Username: testUser, Password: testPassword, Timeout: 10 * time.Second}

	err := grantVia(cfg)
	var re *Error
	if !errors.As(err, &re) || re.HTTPStatus != http.StatusUnauthorized {
		t.Fatalf("a 401 without a challenge: %v\nwant an authentication failure (HTTP 401)", err)
	}
	mu.Lock()
	bodies := slices.Clone(negotiateBodies)
	accept = true
	mu.Unlock()
	if len(bodies) == 0 || slices.ContainsFunc(bodies, func(n int) bool { return n != 0 }) {
		t.Fatalf("NEGOTIATE bodies over HTTPS: %v bytes; want each empty", bodies)
	}
	wantMITM(t, grantVia(cfg), port)
}

// hostOf is the simulated host's model.
func (s *simHost) hostOf(t *testing.T) *host.Host {
	t.Helper()
	h, err := s.sim.Host(s.sim.Info().Hosts[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
