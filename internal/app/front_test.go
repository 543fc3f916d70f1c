package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/redistest"
)

// serve runs a's server (its timeouts included) on a loopback listener and
// returns its base URL.
func serve(t *testing.T, a *app.App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := a.Server()
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String()
}

// zstdBomb is n bytes of chat-request-looking JSON compressed by zstd:
// streamed (no size in the frame) or in one frame announcing its size.
func zstdBomb(t *testing.T, n int, announced bool) []byte {
	t.Helper()
	data := bytes.Repeat([]byte(`{"role":"user","content":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},`), n/70+1)[:n]
	copy(data, `{"model":"gpt-4o","messages":[`)
	var b bytes.Buffer
	w, err := zstd.NewWriter(&b, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	if announced {
		return w.EncodeAll(data, nil)
	}
	w.Write(data)
	w.Close()
	return b.Bytes()
}

// TestCompressionBombs: eight zstd bodies of 100 MB decoded, sent at once,
// each get 413 from the stack serve builds, and nothing reaches the
// upstream — whether or not the frame announces its size.
func TestCompressionBombs(t *testing.T) {
	cfg := config.Defaults()
	cfg.ScopeSecret = "a test's scope secret"
	cfg.MaxBodyBytes = 4 << 20 // the decoded cap; max_decompressed_bytes stays at 128 MiB
	fake := fakeupstream.New()
	logs := &lockedBuffer{}
	a := newApp(t, &cfg, fake, app.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	base := serve(t, a)
	for _, announced := range []bool{false, true} {
		t.Run(fmt.Sprint("size announced ", announced), func(t *testing.T) {
			bomb := zstdBomb(t, 100<<20, announced)
			if len(bomb) > 64<<10 {
				t.Fatalf("bomb of %d bytes compressed", len(bomb))
			}
			statuses := make([]int, 8)
			var wg sync.WaitGroup
			for i := range statuses {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(bomb))
					req.Header.Set("Content-Encoding", "zstd")
					req.Header.Set("Content-Type", "application/json")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Errorf("bomb %d: %v", i, err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					statuses[i] = resp.StatusCode
				}()
			}
			wg.Wait()
			for i, s := range statuses {
				if s != http.StatusRequestEntityTooLarge {
					t.Errorf("bomb %d: status %d, want 413", i, s)
				}
			}
			if n := len(forwarded(fake.Received())); n != 0 {
				t.Fatalf("the upstream got %d bombs", n)
			}
		})
	}
	if !strings.Contains(logs.String(), "decoded body over") {
		t.Errorf("the refusals do not say why:\n%.2000s", logs.String())
	}
}

// TestBodyRefusedEndToEnd: through the server serve runs, a Content-Length
// over max_body_bytes is refused before the body is read, and a body
// shorter than its Content-Length gets 400, not 200 with an empty body.
func TestBodyRefusedEndToEnd(t *testing.T) {
	fake := fakeupstream.New()
	base := serve(t, newApp(t, nil, fake, app.Options{}))
	tests := []struct {
		name   string
		length string
		body   string
		want   int
	}{
		{"length far over the limit", "999999999999", "", http.StatusRequestEntityTooLarge},
		{"body shorter than its length", "1000", `{"model":"gpt-4o","messages":[`, http.StatusBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := strings.TrimPrefix(base, "http://")
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %s\r\n\r\n%s", addr, tc.length, tc.body)
			c.(*net.TCPConn).CloseWrite()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
			if n := len(forwarded(fake.Received())); n != 0 {
				t.Fatalf("the upstream got %d requests", n)
			}
		})
	}
}

// deadStore is a cache whose Ping fails, degraded or not.
type deadStore struct {
	*cache.Memory
	degraded bool
}

func (d deadStore) Ping(context.Context) error { return errors.New("connection refused") }
func (d deadStore) Stats() cache.Stats {
	s := d.Memory.Stats()
	s.Degraded = d.degraded
	return s
}

// TestReadyzDeadCache: /readyz of the stack serve builds answers 503 for
// a cache that does not answer and is not running degraded, 200 when it
// is degraded (misses served).
func TestReadyzDeadCache(t *testing.T) {
	tests := []struct {
		name     string
		degraded bool
		want     int
	}{
		{"dead", false, http.StatusServiceUnavailable},
		{"degraded", true, http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newApp(t, nil, nil, app.Options{Cache: deadStore{cache.NewMemory(1 << 20), tc.degraded}})
			rec := httptest.NewRecorder()
			a.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			if rec.Code != tc.want {
				t.Fatalf("readyz %d %s, want %d", rec.Code, rec.Body, tc.want)
			}
		})
	}
}

// pageAccess asks the page's overview at base with the headers given and
// returns the access it grants ("" for 401).
func pageAccess(t *testing.T, base string, hdr http.Header) (string, []map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/ui/api/conversations", nil)
	req.Header = hdr
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return "", nil
	}
	var out struct {
		Access        string           `json:"access"`
		Conversations []map[string]any `json:"conversations"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("conversations: %d %v", resp.StatusCode, err)
	}
	return out.Access, out.Conversations
}

// TestPageLoopbackTrust: the stack serve builds, without keys, shows a
// loopback visitor numbers only — directly or through a reverse proxy on
// the same host (which sends X-Forwarded-For, as nginx-condense.conf
// does) —; Options.TrustLoopback opens it to the direct visitor only;
// ui.keys open it to whoever has one, wherever it comes from.
func TestPageLoopbackTrust(t *testing.T) {
	tests := []struct {
		name           string
		keys           []string
		trust          bool
		hdr            http.Header
		direct, viaRP  string
		contentVisible bool
	}{
		{"no keys", nil, false, http.Header{}, "numbers", "numbers", false},
		{"no keys, trusted loopback", nil, true, http.Header{}, "admin", "numbers", true},
		{"ui key", []string{"admin-key"}, false, http.Header{"Authorization": {"Bearer admin-key"}}, "admin", "admin", true},
		{"ui keys, none sent", []string{"admin-key"}, true, http.Header{}, "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Defaults()
			cfg.ScopeSecret = "a test's scope secret"
			cfg.UI.Keys = tc.keys
			a := newApp(t, &cfg, fakeupstream.New(), app.Options{TrustLoopback: tc.trust})
			base := serve(t, a)
			resp, err := http.Post(base+"/v1/chat/completions", "application/json",
				strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()

			u, _ := url.Parse(base)
			rp := httptest.NewServer(httputil.NewSingleHostReverseProxy(u)) // sets X-Forwarded-For
			t.Cleanup(rp.Close)
			for _, via := range []struct{ name, base, want string }{{"direct", base, tc.direct}, {"reverse proxy", rp.URL, tc.viaRP}} {
				waitRecorded(t, via.base, tc.hdr, 1)
				got, convs := pageAccess(t, via.base, tc.hdr)
				if got != via.want || (got != "" && len(convs) != 1) {
					t.Errorf("%s: access %q with %d conversations, want %q", via.name, got, len(convs), via.want)
				}
				for _, c := range convs {
					if content, _ := c["content"].(bool); content != (tc.contentVisible && via.want == "admin") {
						t.Errorf("%s: conversation content %v", via.name, content)
					}
				}
			}
		})
	}
}

// waitRecorded polls the page's overview until it counts n requests (a
// request is recorded when its handler returns, maybe after the client
// has its answer); the test fails when they do not come within 10 s. A
// viewer the page refuses cannot wait: it returns at once.
func waitRecorded(t *testing.T, base string, hdr http.Header, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, base+"/ui/api/overview", nil)
		req.Header = hdr
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var ov struct{ Totals struct{ Requests int } }
		json.NewDecoder(resp.Body).Decode(&ov)
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized || ov.Totals.Requests >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page counts %d requests after 10 s, want %d", ov.Totals.Requests, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHugeModelNames: 70 requests with distinct 128 KiB model names leave
// the page's overview small and every log line short. (The issue's
// names were 1 MB; 128 KiB keeps the test fast under -race, since the
// model registry matches its globs against the whole name.)
func TestHugeModelNames(t *testing.T) {
	cfg := config.Defaults()
	cfg.ScopeSecret = "a test's scope secret"
	logs := &lockedBuffer{}
	a := newApp(t, &cfg, fakeupstream.New(), app.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	base := serve(t, a)
	for i := range 70 {
		model := fmt.Sprint(strings.Repeat("m", 128<<10), i)
		resp, err := http.Post(base+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hello"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	waitRecorded(t, base, http.Header{}, 70)
	resp, err := http.Get(base + "/ui/api/overview")
	if err != nil {
		t.Fatal(err)
	}
	overview, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(overview) > 64<<10 {
		t.Errorf("overview of %d bytes", len(overview))
	}
	all := logs.String()
	if len(all) > 1<<20 {
		t.Errorf("logs of %d bytes for 70 requests", len(all))
	}
	for _, line := range strings.Split(all, "\n") {
		if len(line) > 4096 {
			t.Fatalf("log line of %d bytes: %.300s", len(line), line)
		}
	}
}

// TestBearerSpellingsOneScope: an agent sending its key as "bearer  k"
// is the caller the page opens to "Bearer k": one scope.
func TestBearerSpellingsOneScope(t *testing.T) {
	cfg := config.Defaults()
	cfg.ScopeSecret = "a test's scope secret"
	cfg.Auth.Keys = []string{"sk-k"}
	base := serve(t, newApp(t, &cfg, fakeupstream.New(), app.Options{}))
	resp := postDrained(t, base+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}`), "Authorization", "bearer  sk-k")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	hdr := http.Header{"Authorization": {"Bearer sk-k"}}
	waitRecorded(t, base, hdr, 1)
	access, convs := pageAccess(t, base, hdr)
	if access != "caller" || len(convs) != 1 {
		t.Fatalf("access %q, %d conversations: the key's own request is not its own", access, len(convs))
	}
}

// TestReadyzDoesNotShowTheCacheAddress: /readyz is open to everyone, so
// a cache that does not answer is said to be unreachable, without the
// address its error names.
func TestReadyzDoesNotShowTheCacheAddress(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	cfg := config.Defaults()
	cfg.RedisURL = srv.URL()
	a := newApp(t, &cfg, nil, app.Options{})
	rec := httptest.NewRecorder()
	a.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if strings.Contains(rec.Body.String(), srv.Addr()) || strings.Contains(rec.Body.String(), "127.0.0.1") {
		t.Errorf("readyz shows the cache's address: %s", rec.Body)
	}
	if !strings.Contains(rec.Body.String(), `"cache"`) {
		t.Errorf("readyz does not say how the cache is: %s", rec.Body)
	}
}
