// Package harness runs a complete condense-proxy in process — the stack
// package app builds from a config, as serve does — in front of the
// strict fake upstream, for end-to-end tests and the replay evaluation.
package harness

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"time"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/proxy"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// Options configures a Stack. Zero values pick the defaults.
type Options struct {
	Window     int     // context window of every model; default 128000
	Threshold  float64 // default 0.8
	Summarizer string  // "llm" (canned answers from the fake) or "extractive"; default "llm"
	// SummaryTimeout bounds summarizer calls; default 60s.
	SummaryTimeout time.Duration
	// Cache is the engine's cache, originals included; nil: what the
	// config builds without Redis (a 512 MiB memory cache, the originals
	// apart).
	Cache condense.Cache
	// Logger; nil: discard.
	Logger *slog.Logger
	// Counter; nil: a fresh one.
	Counter *tokenizer.Counter
	// SummarizerImpl, if set, replaces the LLM client (Summarizer "llm").
	SummarizerImpl condense.Summarizer
	// Recorder and UI are the proxy's (the live page); nil: none.
	Recorder proxy.Recorder
	UI       http.Handler
	// Front, if set, wraps the proxy's handler (a recorder of what the
	// agent sent and the proxy answered, for instance). Nil: none.
	Front func(http.Handler) http.Handler
}

// ScopeSecret is the stacks' scope_secret, so a test can compute the
// scope the proxy gives a caller:
// proxy.NewScoper([]byte(harness.ScopeSecret), nil).Scope(header).
const ScopeSecret = "harness scope secret"

// Stack is a running proxy and its fake upstream.
type Stack struct {
	Fake    *fakeupstream.Server
	Proxy   *httptest.Server
	Engine  *condense.Engine
	Counter *tokenizer.Counter
	// App is the stack behind Proxy.
	App *app.App

	mu       sync.Mutex
	upstream http.Handler
	servers  []*httptest.Server
}

// CannedSummary answers summarizer calls with a short, deterministic text.
func CannedSummary(body []byte) (int, string) {
	h := sha256.Sum256(body)
	return 200, fmt.Sprintf("## Task and intent\n- continue the task (canned summary %x)\n## Current state and progress\n- work in progress\n## Pending work and next steps\n- keep going", h[:6])
}

// New starts a Stack; Close stops it.
func New(o Options) *Stack {
	if o.Window <= 0 {
		o.Window = 128000
	}
	if o.Threshold <= 0 {
		o.Threshold = 0.8
	}
	if o.Summarizer == "" {
		o.Summarizer = "llm"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Counter == nil {
		o.Counter = tokenizer.New(tokenizer.Options{})
	}
	if o.SummaryTimeout <= 0 {
		o.SummaryTimeout = 60 * time.Second
	}
	s := &Stack{Fake: fakeupstream.New(), Counter: o.Counter}
	s.Fake.Summarize = CannedSummary
	s.upstream = s.Fake
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		h := s.upstream
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	u, _ := url.Parse(up.URL)
	cfg := config.Defaults()
	cfg.Upstream = u.String()
	cfg.Condense.Threshold = o.Threshold
	if o.Threshold <= cfg.Condense.Target {
		cfg.Condense.Target = o.Threshold * 5 / 8
	}
	cfg.Condense.PrepareThreshold = 0 // threshold - 0.1
	cfg.Condense.Summarizer = o.Summarizer
	cfg.Condense.SummaryTimeout = o.SummaryTimeout
	cfg.CacheMaxBytes = 512 << 20
	cfg.MaxInflightCondense = 1024 // tests drive many parallel replays
	cfg.ScopeSecret = ScopeSecret
	cfg.UI.Enabled = false
	// Every model has the test's window.
	cfg.Models = []config.ModelConfig{{Match: "*", ContextWindow: o.Window, Encoding: tokenizer.O200kBase, SafetyFactor: 1}}
	a, err := app.New(context.Background(), &cfg, app.Options{
		Logger: o.Logger, Upstream: u, Summarizer: o.SummarizerImpl, Cache: store(o.Cache), Counter: o.Counter,
		Recorder: o.Recorder, UI: o.UI,
	})
	if err != nil {
		panic(fmt.Sprintf("harness: %v", err))
	}
	s.App, s.Engine = a, a.Engine
	var front http.Handler = a.Handler
	if o.Front != nil {
		front = o.Front(front)
	}
	s.Proxy = httptest.NewServer(front)
	s.servers = []*httptest.Server{up, s.Proxy}
	return s
}

// store makes c an app.Store: nil stays nil; a store without Ping or
// Stats gets them (always reachable, no counts).
func store(c condense.Cache) app.Store {
	switch c := c.(type) {
	case nil:
		return nil
	case app.Store:
		return c
	default:
		return plainStore{c}
	}
}

type plainStore struct{ condense.Cache }

func (plainStore) Ping(context.Context) error { return nil }
func (plainStore) Stats() cache.Stats         { return cache.Stats{} }

// SetUpstream puts h in front of the fake (h may call s.Fake itself).
func (s *Stack) SetUpstream(h http.Handler) {
	s.mu.Lock()
	s.upstream = h
	s.mu.Unlock()
}

// Drain waits for background summaries.
func (s *Stack) Drain() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.Engine.Close(ctx)
}

// Close stops the servers and the stack.
func (s *Stack) Close() {
	s.Drain()
	for _, srv := range s.servers {
		srv.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.App.Close(ctx)
}
