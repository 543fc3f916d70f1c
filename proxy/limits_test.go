package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
)

// sendPartial writes a chat request's headers (with hdr, among them its
// Content-Length) and body as given, half-closes the connection when
// closeWrite is set, and returns the response. A proxy that never answers
// fails the test after 10 s.
func sendPartial(t *testing.T, proxyURL string, hdr map[string]string, body string, closeWrite bool) *http.Response {
	t.Helper()
	addr := strings.TrimPrefix(proxyURL, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var b strings.Builder
	fmt.Fprintf(&b, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n", addr)
	for k, v := range hdr {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	if closeWrite {
		c.(*net.TCPConn).CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	return resp
}

// TestBodyRefusals: bodies the proxy cannot or will not read are answered
// with a status saying why — never 200 with an empty body, never a hang —
// and none reaches the upstream.
func TestBodyRefusals(t *testing.T) {
	tests := []struct {
		name       string
		hdr        map[string]string
		body       string
		closeWrite bool
		want       int
		note       string
	}{
		{"announced far over max_body_bytes", map[string]string{"Content-Length": "999999999999"}, "", false,
			http.StatusRequestEntityTooLarge, "refused before reading"},
		{"shorter than its Content-Length", map[string]string{"Content-Length": "1000"}, `{"model":"gpt-4o",`, true,
			http.StatusBadRequest, "ended before its announced length"},
		{"trickled past the read timeout", map[string]string{"Content-Length": "1000"}, `{"model":"gpt-4o",`, false,
			http.StatusRequestTimeout, "not received within"},
		{"truncated chunked body", map[string]string{"Transfer-Encoding": "chunked"}, "10\r\n{\"model\":\"gpt-4o\"", true,
			http.StatusBadRequest, "ended before its announced length"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, func(o *Options) { o.BodyReadTimeout = 200 * time.Millisecond })
			resp := sendPartial(t, h.proxy.URL, tc.hdr, tc.body, tc.closeWrite)
			var e struct{ Error struct{ Message string } }
			json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			if resp.StatusCode != tc.want || e.Error.Message == "" {
				t.Fatalf("status %d (%q), want %d", resp.StatusCode, e.Error.Message, tc.want)
			}
			if n := len(h.fake.Received()); n != 0 {
				t.Errorf("upstream got %d requests", n)
			}
			h.waitLog(t, tc.note)
		})
	}
}

// TestBodyBudget: with the budget held by one request, a body that does
// not fit waits InflightWait, then gets 503 with Retry-After and does not
// reach the upstream; once the first is answered, its bytes are back and
// a body needing nearly the whole budget goes through.
func TestBodyBudget(t *testing.T) {
	entered := make(chan struct{}, 4)
	release := make(chan struct{})
	blocking := condenserFunc(func(ctx context.Context, req condense.Request) (condense.Result, error) {
		if strings.Contains(string(req.Body), "hold") {
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return condense.Result{}, ctx.Err()
			}
		}
		return condense.Result{Body: req.Body}, nil
	})
	h := newHarness(t, nil, func(o *Options) {
		o.Condenser = blocking
		o.MaxBodyBytes = 64 << 10
		o.BodyBudgetBytes = 100 << 10
		o.InflightWait = 50 * time.Millisecond
	})
	body := func(tag string, size int) []byte {
		pad := strings.Repeat("x", size-len(tag)-60)
		return []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"` + tag + pad + `"}]}`)
	}
	first := make(chan int, 1)
	go func() {
		resp, err := http.Post(h.proxy.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body("hold", 50<<10)))
		if err != nil {
			first <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-entered // 50 KiB of the 100 KiB are held

	resp := post(t, h.proxy.URL+"/v1/chat/completions", body("refused", 60<<10), nil)
	var e struct {
		Error struct{ Message, Type string }
	}
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || e.Error.Message == "" {
		t.Fatalf("no room in the budget: status %d, Retry-After %q, error %+v", resp.StatusCode, resp.Header.Get("Retry-After"), e)
	}
	if n := len(h.fake.Received()); n != 0 {
		t.Fatalf("upstream got %d requests while the first was held", n)
	}

	close(release)
	if code := <-first; code != 200 {
		t.Fatalf("held request: %d", code)
	}
	resp = post(t, h.proxy.URL+"/v1/chat/completions", body("fits", 63<<10), nil)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("after the held request: %d (its bytes not given back?)", resp.StatusCode)
	}
	if got := h.fake.Received(); len(got) != 2 || !strings.Contains(string(got[1].Body), "fits") {
		t.Fatalf("upstream got %d requests", len(got))
	}
	h.waitLog(t, "body memory budget")
}

// logLine waits for a log line containing want and returns it; the test
// fails when none comes.
func (h *harness) logLine(t *testing.T, want string) string {
	t.Helper()
	h.waitLog(t, want)
	for _, line := range strings.Split(h.logs.String(), "\n") {
		if strings.Contains(line, want) {
			return line
		}
	}
	t.Fatalf("no log line with %s", want)
	return ""
}

// TestReadTimeoutLiftedAfterBody: the body read deadline does not reach
// the answer — a stream that outlasts it ends cleanly and the upstream
// request is not cancelled (as it would be with a deadline on the
// request's context, or one left on the connection while net/http
// watches it for the client leaving).
func TestReadTimeoutLiftedAfterBody(t *testing.T) {
	up := &slowStream{release: make(chan struct{}), canceled: make(chan struct{})}
	h := newHarness(t, up, func(o *Options) { o.BodyReadTimeout = 50 * time.Millisecond })
	// A chunked body: read to its end, after which net/http watches the
	// connection for the client leaving — under whatever deadline is left.
	body := io.MultiReader(strings.NewReader(`{"model":"gpt-4o","stream":true,`), strings.NewReader(`"messages":[{"role":"user","content":"hi"}]}`))
	resp, err := http.Post(h.proxy.URL+"/v1/chat/completions", "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // well past the body's deadline
	close(up.release)
	rest, err := io.ReadAll(br)
	if err != nil || !strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("stream cut after the body deadline: %v %q", err, rest)
	}
	select {
	case <-up.canceled:
		t.Fatal("the upstream request was cancelled by the body deadline")
	default:
	}
}
