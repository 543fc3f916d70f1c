// Package harness runs a complete condense-proxy in process — the stack
// package app builds from a config, as serve does — in front of the
// strict fake upstream, for end-to-end tests and the replay evaluation.
package harness

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

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
	// Target is condense.target; 0: 0.5, or 5/8 of a Threshold at or
	// below it.
	Target float64
	// Model, if set, replaces the one model entry every name matches
	// (its Match is forced to "*" and, when 0, its window to Window): the
	// prompt-cache prices the planner uses, for instance.
	Model *config.ModelConfig
	// Configure, if set, changes the config after the harness's own
	// settings, before the stack is built (an evaluation mode's keys).
	Configure func(*config.Config)
	// SummaryTokens, if above 0, pads the canned summaries to about that
	// many tokens (a real summary of a 12k-token chunk is 500–2,000).
	SummaryTokens int
	// FaithfulSummaries: summaries keep the facts of what they summarize
	// (FaithfulSummaryOf), within SummaryTokens (1,000 when 0).
	FaithfulSummaries bool
	// FeedMemory builds the conversations' memory (App.Memory) even when
	// the config reads nothing of it (app.Options.FeedMemory): fed by the
	// engine, unused for what is forwarded, for probes of what recall
	// would find.
	FeedMemory bool
	// Now is the engine's clock (app.Options.EngineClock); nil: the wall
	// clock.
	Now func() time.Time
	// Replicas, above 1, puts that many proxies behind Proxy, each a
	// stack of its own built from the same config, sharing only the
	// cache: Cache, a Redis the config names (each replica then has its
	// memory layer in front of it), or else one memory cache. Proxy
	// hands them the requests in turn, as a round-robin balancer does.
	Replicas int
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
	// App is the stack behind Proxy (the first, with Replicas).
	App    *app.App
	apps   []*app.App
	served []atomic.Int64 // requests each replica served

	mu       sync.Mutex
	upstream http.Handler
	servers  []*httptest.Server
}

// CannedSummary answers summarizer calls with a short, deterministic text.
func CannedSummary(body []byte) (int, string) {
	h := sha256.Sum256(body)
	return 200, fmt.Sprintf("## Task and intent\n- continue the task (canned summary %x)\n## Current state and progress\n- work in progress\n## Pending work and next steps\n- keep going", h[:6])
}

// CannedSummaryOf answers summarizer calls with a deterministic text of
// about tokens tokens: CannedSummary's sections, then numbered notes.
func CannedSummaryOf(tokens int) func(body []byte) (int, string) {
	return func(body []byte) (int, string) {
		status, text := CannedSummary(body)
		var b strings.Builder
		b.WriteString(text)
		for i := 1; b.Len() < 4*tokens; i++ {
			fmt.Fprintf(&b, "\n- note %d: a step of the earlier work, its files and its outcome, kept in brief", i)
		}
		return status, b.String()
	}
}

// FaithfulSummaryOf answers summarizer calls the way the built-in prompt
// asks a model to (condense.DefaultPrompt: "Keep exact file paths,
// function and test names, error messages…"): the lines of the
// transcript that carry such facts — failing tests, errors, exit
// statuses, decisions, the task, the paths an agent changed — verbatim,
// deduplicated, within about tokens tokens, then CannedSummary's
// sections padded to that size. It stands in for a good summarizer in
// evaluations that count the facts a condensed request still carries; the
// canned summaries keep none.
func FaithfulSummaryOf(tokens int) func(body []byte) (int, string) {
	return func(body []byte) (int, string) {
		var texts []string
		var walk func(v gjson.Result)
		walk = func(v gjson.Result) {
			switch {
			case v.Type == gjson.String:
				texts = append(texts, v.Str)
			case v.IsArray() || v.IsObject():
				v.ForEach(func(_, x gjson.Result) bool { walk(x); return true })
			}
		}
		if items, instruction, ok := inPlaceRange(body); ok {
			// Asked in place (condense/inplace.go): the instruction (the
			// previous summary, first as in the plain form), then the
			// messages it names.
			texts = append(texts, instruction)
			for _, it := range items {
				walk(it)
			}
		} else {
			walk(gjson.ParseBytes(body))
		}
		var b strings.Builder
		b.WriteString("## Facts kept\n")
		seen := map[string]bool{}
		for _, t := range texts {
			for _, l := range strings.Split(t, "\n") {
				l = bullet(l)
				if l == "" || seen[l] || len(l) > 300 || !factLine.MatchString(l) || promptLines[l] {
					continue
				}
				if b.Len()+len(l) > 4*tokens {
					break
				}
				seen[l] = true
				b.WriteString("- " + l + "\n")
			}
		}
		status, text := CannedSummaryOf(max(tokens-b.Len()/4, 50))(body)
		return status, b.String() + text
	}
}

// inPlaceRange reads a summary asked in place: the conversation's items
// its instruction names ("Summarize messages A to B of this
// conversation", counted from 1 in the request's messages, input or
// contents) and the instruction's text. ok is false for a summarizer call
// of the plain form.
func inPlaceRange(body []byte) (items []gjson.Result, instruction string, ok bool) {
	arr := gjson.GetBytes(body, "messages")
	if !arr.IsArray() {
		arr = gjson.GetBytes(body, "input")
	}
	if !arr.IsArray() {
		arr = gjson.GetBytes(body, "contents")
	}
	all := arr.Array()
	if len(all) == 0 {
		return nil, "", false
	}
	// The instruction is the last message's text, or its last block (a
	// Gemini content's last part).
	content := all[len(all)-1].Get("content")
	candidates := []gjson.Result{content}
	if blocks := content.Array(); content.IsArray() && len(blocks) > 0 {
		candidates = append(candidates, blocks[len(blocks)-1].Get("text"))
	}
	if parts := all[len(all)-1].Get("parts").Array(); len(parts) > 0 {
		candidates = append(candidates, parts[len(parts)-1].Get("text"))
	}
	for _, v := range candidates {
		if v.Type == gjson.String && strings.Contains(v.Str, "of this conversation, counting its first message as 1") {
			instruction = v.Str
			break
		}
	}
	m := inPlaceMessages.FindStringSubmatch(instruction)
	if m == nil {
		return nil, "", false
	}
	a, _ := strconv.Atoi(m[1])
	b, _ := strconv.Atoi(m[2])
	if a < 1 || b < a || b > len(all) {
		return nil, "", false
	}
	return all[a-1 : b], instruction, true
}

var inPlaceMessages = regexp.MustCompile(`Summarize messages (\d+) to (\d+) of this conversation`)

// factLine matches the lines a faithful summary keeps.
var factLine = regexp.MustCompile(`(?i)(--- FAIL|FAIL\b|error|panic|exit status|_test\.go:\d+|decision \d+|^Task \d+|I will change|follow-up)`)

// promptLines are the lines of the summarizer's own instructions (the
// built-in prompt, the user message's frame): a model does not repeat
// them as facts of the transcript, so the faithful summarizer skips them.
var promptLines = func() map[string]bool {
	m := map[string]bool{}
	for _, t := range []string{condense.DefaultPrompt, condense.UserPrompt(condense.SummaryInput{Level: 1, Previous: " "}), condense.UserPrompt(condense.SummaryInput{Level: 2})} {
		for _, l := range strings.Split(t, "\n") {
			m[bullet(l)] = true
		}
	}
	return m
}()

// bullet is line l's text without its white space and list dash, as the
// faithful summarizer compares lines.
func bullet(l string) string {
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "- "))
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
	if o.SummaryTokens > 0 {
		s.Fake.Summarize = CannedSummaryOf(o.SummaryTokens)
	}
	if o.FaithfulSummaries {
		s.Fake.Summarize = FaithfulSummaryOf(cmp.Or(o.SummaryTokens, 1000))
	}
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
	// The threshold (0.8 unless given) keeps its target at 0.5 (5/8 of
	// it at or below 0.5), as the evaluation's suites are defined — not
	// serve's default, which follows each model's threshold.
	cfg.Condense.Threshold = o.Threshold
	cfg.Condense.Target = 0.5
	if o.Threshold <= 0.5 {
		cfg.Condense.Target = o.Threshold * 5 / 8
	}
	if o.Target > 0 {
		cfg.Condense.Target = o.Target
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
	if o.Model != nil {
		m := *o.Model
		m.Match = "*"
		if m.ContextWindow == 0 {
			m.ContextWindow = o.Window
		}
		cfg.Models = []config.ModelConfig{m}
	}
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	shared := o.Cache
	if o.Replicas > 1 && shared == nil && cfg.RedisURL == "" && cfg.RedisClusterURL == "" {
		shared = cache.NewMemory(cfg.CacheMaxBytes)
	}
	var handlers []http.Handler
	for range max(o.Replicas, 1) {
		a, err := app.New(context.Background(), &cfg, app.Options{
			Logger: o.Logger, Upstream: u, Summarizer: o.SummarizerImpl, Cache: store(shared), Counter: o.Counter,
			Recorder: o.Recorder, UI: o.UI, FeedMemory: o.FeedMemory, EngineClock: o.Now,
		})
		if err != nil {
			panic(fmt.Sprintf("harness: %v", err))
		}
		s.apps = append(s.apps, a)
		handlers = append(handlers, a.Handler)
	}
	s.App, s.Engine = s.apps[0], s.apps[0].Engine
	s.served = make([]atomic.Int64, len(handlers))
	var next atomic.Uint64
	var front http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := (next.Add(1) - 1) % uint64(len(handlers))
		s.served[i].Add(1)
		handlers[i].ServeHTTP(w, r)
	})
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

// Served returns how many requests each replica served (one count
// without Replicas).
func (s *Stack) Served() []int64 {
	n := make([]int64, len(s.served))
	for i := range s.served {
		n[i] = s.served[i].Load()
	}
	return n
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
	for _, a := range s.apps {
		a.Engine.Close(ctx)
	}
}

// Close stops the servers and the stack.
func (s *Stack) Close() {
	s.Drain()
	for _, srv := range s.servers {
		srv.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, a := range s.apps {
		a.Close(ctx)
	}
}
