// Package harness assembles a complete condense-proxy in process — engine,
// cache, LLM summarizer client, proxy handler — in front of the strict fake
// upstream, for end-to-end tests and the replay evaluation.
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
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/llm"
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
	// Cache is the engine's cache; nil: a fresh 512 MiB memory cache.
	Cache condense.Cache
	// Logger; nil: discard.
	Logger *slog.Logger
	// Counter; nil: a fresh one.
	Counter *tokenizer.Counter
	// SummarizerImpl, if set, replaces the LLM client (Summarizer "llm").
	SummarizerImpl condense.Summarizer
}

// Stack is a running proxy and its fake upstream.
type Stack struct {
	Fake    *fakeupstream.Server
	Proxy   *httptest.Server
	Engine  *condense.Engine
	Counter *tokenizer.Counter

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
	if o.Cache == nil {
		o.Cache = cache.NewMemory(512 << 20)
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
	sum := o.SummarizerImpl
	if o.Summarizer == "llm" && sum == nil {
		sum = &llm.Summarizer{Client: &llm.Client{BaseURL: u}}
	}
	window, threshold := o.Window, o.Threshold
	s.Engine = condense.New(condense.Deps{
		Counter: o.Counter,
		Models: condense.ModelsFunc(func(string) condense.ModelLimits {
			return condense.ModelLimits{Window: window, Threshold: threshold, Encoding: tokenizer.O200kBase, SafetyFactor: 1, Known: true}
		}),
		Cache:      o.Cache,
		Summarizer: sum,
		Logger:     o.Logger,
	}, condense.Options{Summarizer: o.Summarizer, SummaryTimeout: o.SummaryTimeout, SelectiveEnabled: true})
	s.Proxy = httptest.NewServer(proxy.New(proxy.Options{Upstream: u, Condenser: s.Engine, Originals: s.Engine, Logger: o.Logger}))
	s.servers = []*httptest.Server{up, s.Proxy}
	return s
}

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

// Close stops the servers.
func (s *Stack) Close() {
	s.Drain()
	for _, srv := range s.servers {
		srv.Close()
	}
}
