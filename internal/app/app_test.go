package app_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/proxy"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newApp builds an App for cfg (its defaults when nil) in front of
// upstream, closed when the test ends.
// postDrained posts body to url with the header pairs given (name,
// value, …), reads the answer to its end and returns it.
func postDrained(t testing.TB, url string, body io.Reader, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func newApp(t testing.TB, cfg *config.Config, upstream http.Handler, o app.Options) *app.App {
	t.Helper()
	if cfg == nil {
		d := config.Defaults()
		cfg = &d
	}
	if upstream != nil {
		srv := httptest.NewServer(upstream)
		t.Cleanup(srv.Close)
		cfg.Upstream = srv.URL
	} else if cfg.Upstream == "" {
		// The key is required; nothing is forwarded in these tests
		// (a request that were would be refused at once).
		cfg.Upstream = "http://127.0.0.1:1"
	}
	a, err := app.New(context.Background(), cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		a.Close(ctx)
	})
	return a
}

// TestOriginalsHaveTheirOwnBudget: without Redis, the originals live in
// a memory store of their own (originals_max_bytes), so summaries and
// digests filling the cache never push them out; condensing writes them
// there.
func TestOriginalsHaveTheirOwnBudget(t *testing.T) {
	cfg := config.Defaults()
	cfg.CacheMaxBytes = 64 << 10
	cfg.OriginalsMaxBytes = 1 << 20
	a := newApp(t, &cfg, nil, app.Options{})
	ctx := context.Background()
	a.Originals.Set(ctx, "an-original", bytes.Repeat([]byte("o"), 10<<10), time.Hour)
	for i := range 100 {
		a.Cache.Set(ctx, fmt.Sprint("summary-", i), bytes.Repeat([]byte("s"), 10<<10), time.Hour)
	}
	if _, ok := a.Originals.Get(ctx, "an-original"); !ok {
		t.Fatal("summaries filling the cache pushed an original out")
	}
	if mem, ok := a.Originals.(*cache.Memory); !ok {
		t.Fatalf("originals in %T, want their own memory store", a.Originals)
	} else if mem.Bytes() > cfg.OriginalsMaxBytes {
		t.Fatalf("originals hold %d bytes, budget %d", mem.Bytes(), cfg.OriginalsMaxBytes)
	}
}

// TestCondensingWritesOriginalsApart: a condensed request's originals
// are in the originals' store (not the cache), and the proxy serves them
// to the caller.
func TestCondensingWritesOriginalsApart(t *testing.T) {
	cfg := config.Defaults()
	cfg.Condense.Summarizer = "extractive"
	cfg.ScopeSecret = "a test's scope secret"
	cfg.Models = []config.ModelConfig{{Match: "*", ContextWindow: 16000}}
	a := newApp(t, &cfg, fakeupstream.New(), app.Options{})
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	sess, _ := corpus.Synthetic(3, 120_000)
	body, err := sess.Request("gpt-4o", 0)
	if err != nil {
		t.Fatal(err)
	}
	resp := postDrained(t, srv.URL+"/v1/chat/completions", bytes.NewReader(body), "Authorization", "Bearer sk-caller", proxy.HeaderMode, "truncate")
	if resp.Header.Get(proxy.HeaderApplied) != "truncate" {
		t.Fatalf("not condensed: %v", resp.Header)
	}
	if n := a.Originals.(*cache.Memory).Bytes(); n == 0 {
		t.Fatal("no original in the originals' store")
	}
}

// TestRedisHoldsBoth: with Redis, the cache and the originals are one
// store (memory in front of Redis).
func TestRedisHoldsBoth(t *testing.T) {
	cfg := config.Defaults()
	cfg.RedisURL = "redis://127.0.0.1:6379/0"
	if u := os.Getenv("REDIS_URL"); u != "" {
		cfg.RedisURL = u
	}
	a := newApp(t, &cfg, nil, app.Options{})
	if _, ok := a.Cache.(*cache.Layered); !ok || any(a.Originals) != any(a.Cache) {
		t.Fatalf("cache %T, originals %T: want one layered store", a.Cache, a.Originals)
	}
}

// TestServerTimeouts: the server closes connections that trickle their
// headers or sit idle.
func TestServerTimeouts(t *testing.T) {
	srv := newApp(t, nil, nil, app.Options{}).Server()
	if srv.ReadHeaderTimeout != app.ReadHeaderTimeout || srv.IdleTimeout != app.IdleTimeout ||
		app.ReadHeaderTimeout <= 0 || app.IdleTimeout <= 0 {
		t.Fatalf("read header %v, idle %v", srv.ReadHeaderTimeout, srv.IdleTimeout)
	}
	if srv.ReadTimeout != 0 || srv.WriteTimeout != 0 {
		t.Errorf("read %v, write %v: long bodies and streams would be cut", srv.ReadTimeout, srv.WriteTimeout)
	}
}

// TestScopeSecret: the same secret gives the same scopes (a restart, a
// replica); without one a random secret is used, with one warning.
func TestScopeSecret(t *testing.T) {
	h := http.Header{"X-Litellm-Api-Key": {"sk-team"}}
	scope := func(secret string) (string, string) {
		cfg := config.Defaults()
		cfg.ScopeSecret = secret
		logs := &lockedBuffer{}
		a := newApp(t, &cfg, nil, app.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
		return a.Scoper.Scope(h), logs.String()
	}
	s1, log1 := scope("a secret of the operator")
	s2, _ := scope("a secret of the operator")
	if s1 != s2 || strings.Contains(log1, "scope_secret") {
		t.Errorf("same secret: scopes %s %s, log %q", s1, s2, log1)
	}
	r1, logR := scope("")
	r2, _ := scope("")
	if r1 == r2 || r1 == s1 {
		t.Error("no secret: scopes are not random")
	}
	if strings.Count(logR, "scope_secret is not set") != 1 {
		t.Errorf("log %q: want one warning", logR)
	}
}

// TestReasoningModelSummaries: a request to a reasoning model condensed
// with LLM summaries, against an upstream that refuses max_tokens and
// temperature as OpenAI does for those models: the summaries are written
// (asked with max_completion_tokens), none falls back. The model's entry
// in the config sets only its window; the built-in registry says it
// reasons.
func TestReasoningModelSummaries(t *testing.T) {
	fake := fakeupstream.New()
	fake.Summarize = harness.CannedSummary
	cfg := config.Defaults()
	cfg.ScopeSecret = "a test's scope secret"
	cfg.Models = []config.ModelConfig{{Match: "o3*", ContextWindow: 16000}}
	a := newApp(t, &cfg, fake, app.Options{})
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	sess, _ := corpus.Synthetic(5, 120_000)
	body, err := sess.Request("o3-mini", 0)
	if err != nil {
		t.Fatal(err)
	}
	resp := postDrained(t, srv.URL+"/v1/chat/completions", bytes.NewReader(body), "Authorization", "Bearer sk-caller", proxy.HeaderMode, "full")
	if resp.StatusCode != 200 || resp.Header.Get(proxy.HeaderApplied) != "full" {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	if d := resp.Header.Get(proxy.HeaderDegraded); d != "" {
		t.Errorf("degraded: %s", d)
	}
	calls := fake.TakeSummaries()
	if len(calls) == 0 {
		t.Fatal("no summarizer call")
	}
	for _, c := range calls {
		if !gjson.GetBytes(c, "max_completion_tokens").Exists() || gjson.GetBytes(c, "max_tokens").Exists() || gjson.GetBytes(c, "temperature").Exists() {
			t.Fatalf("summarizer call %s", c[:min(len(c), 200)])
		}
	}
}

// blockingSummarizer holds every call until release is closed.
type blockingSummarizer struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingSummarizer) Summarize(ctx context.Context, in condense.SummaryInput) (string, error) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	select {
	case <-b.release:
		return "## Task and intent\n- a summary", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// TestMaxInflightCondense: max_inflight_condense reaches the proxy. A
// request waiting for its summary holds no place, so the next request is
// condensed; nor does a request whose body is still arriving (a slow
// upload), so the requests meanwhile are condensed.
func TestMaxInflightCondense(t *testing.T) {
	sum := &blockingSummarizer{entered: make(chan struct{}, 1), release: make(chan struct{})}
	cfg := config.Defaults()
	cfg.ScopeSecret = "a test's scope secret"
	cfg.MaxInflightCondense = 1
	cfg.InflightWait = 200 * time.Millisecond
	cfg.Models = []config.ModelConfig{{Match: "*", ContextWindow: 16000}}
	fake := fakeupstream.New()
	a := newApp(t, &cfg, fake, app.Options{Summarizer: sum})
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	sess, _ := corpus.Synthetic(8, 120_000)
	body, _ := sess.Request("gpt-4o", 0)
	post := func(mode string, rd io.Reader) *http.Response {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", rd)
		req.Header.Set(proxy.HeaderMode, mode)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return nil
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	t.Run("waiting for the summarizer holds no place", func(t *testing.T) {
		done := make(chan struct{})
		go func() { defer close(done); post("full", bytes.NewReader(body)) }()
		<-sum.entered
		// The only place is free while the first request waits: another
		// request is condensed, not forwarded as busy.
		resp := post("selective", bytes.NewReader(body))
		close(sum.release)
		<-done
		if resp == nil || resp.Header.Get(proxy.HeaderApplied) == "none" || strings.Contains(resp.Header.Get(proxy.HeaderDegraded), "max_inflight_condense") {
			t.Fatalf("second request: applied %q degraded %q", resp.Header.Get(proxy.HeaderApplied), resp.Header.Get(proxy.HeaderDegraded))
		}
	})
	t.Run("a body being read holds no place", func(t *testing.T) {
		// A slow upload (half its body sent, the rest held back) must not
		// take the only place from the requests that arrive meanwhile.
		pr, pw := io.Pipe()
		done := make(chan struct{})
		go func() { defer close(done); post("full", pr) }()
		pw.Write(body[:len(body)/2])
		for i := 0; i < 5; i++ {
			resp := post("selective", bytes.NewReader(body))
			if resp == nil || strings.Contains(resp.Header.Get(proxy.HeaderDegraded), "max_inflight_condense") || resp.Header.Get(proxy.HeaderApplied) == "none" {
				t.Fatalf("request %d while another body was arriving: applied %q degraded %q", i, resp.Header.Get(proxy.HeaderApplied), resp.Header.Get(proxy.HeaderDegraded))
			}
		}
		pw.Write(body[len(body)/2:])
		pw.Close()
		<-done
	})
}

// TestConfigListsAreThePackages: config keeps its own lists (it imports
// nothing of the project); they must be the engine's modes and the
// proxy's credential headers.
func TestConfigListsAreThePackages(t *testing.T) {
	if !slices.Equal(config.Modes, condense.Modes) {
		t.Errorf("config.Modes %v, condense.Modes %v", config.Modes, condense.Modes)
	}
	if !slices.Equal(config.CredentialHeaders, proxy.CredentialHeaders) {
		t.Errorf("config.CredentialHeaders %v, proxy.CredentialHeaders %v", config.CredentialHeaders, proxy.CredentialHeaders)
	}
	if d := config.Defaults(); !slices.Equal(d.ScopeHeaders, proxy.CredentialHeaders) {
		t.Errorf("default scope_headers %v, proxy.CredentialHeaders %v", d.ScopeHeaders, proxy.CredentialHeaders)
	}
}

// TestNewRefusesAbsurdNumbers: the constructor serve uses refuses a
// config with NaN or absurd numbers, naming every bad key at once.
func TestNewRefusesAbsurdNumbers(t *testing.T) {
	cfg := config.Defaults()
	cfg.Condense.Threshold = math.NaN()
	cfg.DefaultContextWindow = math.MaxInt
	cfg.CacheMaxBytes = 1 << 50
	cfg.Models = []config.ModelConfig{{Match: "gpt-4o*", ContextWindow: math.MaxInt64, SafetyFactor: math.Inf(1)}}
	_, err := app.New(context.Background(), &cfg, app.Options{})
	if err == nil {
		t.Fatal("app.New accepted NaN and absurd numbers")
	}
	for _, key := range []string{"condense.threshold", "default_context_window", "cache_max_bytes", "models[0].context_window", "models[0].safety_factor"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error does not name %s:\n%v", key, err)
		}
	}
}
