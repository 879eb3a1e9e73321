package transcript

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/masterzen/winrm"
)

// HTTPShape reads the shape of an HTTP answer: status, media type, whether the body
// is a SOAP fault and its code (the WSManFault's Code, else the fault's subcode).
func HTTPShape(status int, contentType string, body []byte) ErrorShape {
	s := ErrorShape{HTTPStatus: status, ContentType: MediaType(contentType), BodyBytes: len(body)}
	b := string(body)
	if strings.Contains(b, "Envelope") && strings.Contains(b, "Fault") {
		s.SOAPFault = true
		if m := wsmanFaultCode.FindStringSubmatch(b); m != nil {
			s.FaultCode = m[1]
		} else if m := faultSubcode.FindStringSubmatch(b); m != nil {
			s.FaultCode = strings.TrimSpace(m[1])
		}
	}
	return s
}

var (
	wsmanFaultCode = regexp.MustCompile(`WSManFault[^>]*\bCode="([0-9]+)"`)
	faultSubcode   = regexp.MustCompile(`(?s)Subcode>\s*<(?:[A-Za-z0-9]+:)?Value>([^<]+)<`)
)

// ProbeClearTextBody logs on to host:port over HTTP with NTLM and sends one
// WS-Management request (a shell's Create) whose body is not sealed, as
// masterzen/winrm's own NTLM client sends it, and answers the shape of the host's
// last HTTP answer with the client's error. A Windows host whose WinRM service
// keeps AllowUnencrypted false refuses the body (FIDELITY.md: HTTP 500); one that
// allows it answers 200, with a nil error, and the probe deletes the shell again.
func ProbeClearTextBody(ctx context.Context, host string, port int, user, password string) (ErrorShape, error) {
	tap := &tap{}
	dialer := &net.Dialer{Timeout: 30 * time.Second}
	dial := func(network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return tap.wrap(c), nil
	}
	params := *winrm.DefaultParameters
	params.TransportDecorator = func() winrm.Transporter { return winrm.NewClientNTLMWithDial(dial) }
	deadline := 60 * time.Second
	if d, ok := ctx.Deadline(); ok {
		deadline = time.Until(d)
	}
	client, err := winrm.NewClientWithParameters(winrm.NewEndpoint(host, port, false, false, nil, nil, nil, deadline), user, password, &params)
	if err != nil {
		return ErrorShape{}, fmt.Errorf("setting up masterzen/winrm's NTLM client: %w", err)
	}
	shell, err := client.CreateShell()
	if err == nil {
		_ = shell.Close()
	}
	status, ctype, body, ok := tap.lastResponse()
	if !ok {
		if err == nil {
			err = fmt.Errorf("no HTTP answer was read from %s:%d", host, port)
		}
		return ErrorShape{}, err
	}
	if err == nil && status == http.StatusOK {
		// The Delete's answer is the last one; the Create's was the same shape.
		return HTTPShape(status, ctype, body), nil
	}
	return HTTPShape(status, ctype, body), err
}

// tap keeps what each connection read, to parse the HTTP answers afterwards.
type tap struct {
	mu    sync.Mutex
	reads []*bytes.Buffer
}

func (t *tap) wrap(c net.Conn) net.Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := &bytes.Buffer{}
	t.reads = append(t.reads, b)
	return &tappedConn{Conn: c, mu: &t.mu, buf: b}
}

// lastResponse parses every connection's answers and returns the last one whose
// body arrived whole.
func (t *tap) lastResponse() (status int, contentType string, body []byte, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, raw := range t.reads {
		r := bufio.NewReader(bytes.NewReader(raw.Bytes()))
		for {
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				break
			}
			b, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil {
				break
			}
			status, contentType, body, ok = resp.StatusCode, resp.Header.Get("Content-Type"), b, true
		}
	}
	return status, contentType, body, ok
}

type tappedConn struct {
	net.Conn
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (c *tappedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.buf.Write(p[:n])
		c.mu.Unlock()
	}
	return n, err
}
