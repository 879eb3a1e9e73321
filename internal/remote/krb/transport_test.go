package krb_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/masterzen/winrm"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
)

// A host that takes the Kerberos logon without answering an AP-REP (an impostor
// that cannot decrypt the ticket) never gets a message: the transport refuses it
// for want of mutual authentication.
func TestTransportRefusesHostWithoutAPRep(t *testing.T) {
	k := startKDC(t)
	var bodies int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > 0 {
			bodies++
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	p, _ := strconv.Atoi(port)
	kc, err := krb.New(krb.Config{Username: user + "@" + k.Realm, Password: password, Krb5Conf: k.Krb5Conf})
	if err != nil {
		t.Fatal(err)
	}
	params := winrm.NewParameters("PT60S", "en-US", 153600)
	params.TransportDecorator = func() winrm.Transporter { return krb.NewTransport(kc, spn) }
	c, err := winrm.NewClientWithParameters(winrm.NewEndpoint(host, p, false, false, nil, nil, nil, 10*time.Second), "", "", params)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateShell()
	if !errors.Is(err, krb.ErrMutualAuth) || !strings.Contains(err.Error(), "AP-REP") {
		t.Fatalf("CreateShell against a host without AP-REP: %v, want ErrMutualAuth", err)
	}
	if bodies != 0 {
		t.Fatalf("the transport sent %d SOAP bodies to a host that did not authenticate itself", bodies)
	}
}
