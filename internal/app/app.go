// Package app builds condense-proxy's whole stack from a *config.Config,
// in the one place that serve, the offline condense command and the test
// harness all use, so that tests exercise the wiring users run.
//
// New reads the config and makes, in order: the cache (memory, or memory
// in front of Redis) and the originals' store; the model registry and the
// token counter; the wire formats' codecs (the registry tells the
// Messages codec which models bind thinking to its prefix); the caller
// scoper (HMAC under scope_secret, or under the secret the replicas keep
// in Redis); the LLM summarizer (the registry tells it which models are
// reasoning models); the condensing engine; the metrics; the live page
// when enabled; and the proxy handler. Options override what tests need to
// replace (the upstream, its transport, the summarizer, the cache, the
// counter, the live page) and nothing else: every other setting comes from
// the Config.
//
// An App is not a server: Server returns the *http.Server to run it with
// (its timeouts set), and Close drains background work and closes the
// cache.
package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/codec/gemini"
	"github.com/condense-proxy/condense-proxy/codec/messages"
	"github.com/condense-proxy/condense-proxy/codec/responses"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/litellm"
	"github.com/condense-proxy/condense-proxy/keepalive"
	"github.com/condense-proxy/condense-proxy/llm"
	"github.com/condense-proxy/condense-proxy/memory"
	"github.com/condense-proxy/condense-proxy/proxy"
	"github.com/condense-proxy/condense-proxy/selective"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/ui"
	"github.com/condense-proxy/condense-proxy/view"
)

// Server timeouts. A client has ReadHeaderTimeout to send its request
// line and headers (a connection that trickles them is closed), and a
// keep-alive connection idle for IdleTimeout is closed. Neither bounds a
// request body or a response: a large upload or a long stream of a
// reasoning model is not cut.
const (
	ReadHeaderTimeout = 30 * time.Second
	IdleTimeout       = 2 * time.Minute
)

// Store is what the stack needs of a cache: what the engine reads and
// writes, a reachability check for /readyz and counts for /metrics.
// Package cache's stores satisfy it.
type Store interface {
	Get(ctx context.Context, key string) ([]byte, bool)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration)
	Ping(ctx context.Context) error
	Stats() cache.Stats
}

// Options replace parts of the stack, for tests and the offline command.
// Zero values: everything from the Config.
type Options struct {
	// Logger receives the stack's logs. Nil: discarded.
	Logger *slog.Logger
	// Upstream replaces cfg.Upstream (a test's fake).
	Upstream *url.URL
	// Transport sends requests upstream, the proxy's and the summarizer's.
	// Nil: proxy.NewTransport with cfg's timeouts.
	Transport http.RoundTripper
	// Summarizer replaces the LLM summarizer when cfg.Condense.Summarizer
	// is "llm".
	Summarizer condense.Summarizer
	// Cache replaces the store built from cfg (memory or Redis); it keeps
	// the originals too. Close does not close it.
	Cache Store
	// Counter replaces the token counter (a test sharing one between
	// stacks); cfg.MaxRequestMessages then does not apply.
	Counter *tokenizer.Counter
	// Recorder and UI replace the live page cfg.UI would build (a test's
	// own page); either set means no page is built.
	Recorder proxy.Recorder
	UI       http.Handler
	// TrustLoopback shows the live page's loopback visitors every
	// conversation when no keys are configured (ui.Options.TrustLoopback;
	// for a demo on one's own machine). Default false: numbers only.
	TrustLoopback bool
	// KeepAliveClock schedules the keep-alive pings (a test's manual
	// clock). Nil: the wall clock.
	KeepAliveClock keepalive.Clock
	// EngineClock is the condensing engine's clock (condense.Deps.Now):
	// a test's or a replay's, whose idle gaps the engine sees (its cold
	// turns). Nil: the wall clock.
	EngineClock func() time.Time
	// FeedMemory builds the conversations' memory even when nothing cfg
	// turns on reads it (cfg.Memory.Enabled false): the engine feeds it,
	// the proxy neither adds the recall tool nor answers from it, and
	// forwarded requests are what they are without it. The evaluation
	// probes it (App.Memory) for what the recall tool would find.
	FeedMemory bool
	// ModelInfoTicks replaces the ticker of litellm.refresh (a test's
	// channel): each tick reads the upstream's /model/info again.
	ModelInfoTicks <-chan time.Time
}

// App is the assembled stack. Its fields are read-only once New returns.
type App struct {
	Config   *config.Config
	Log      *slog.Logger
	Upstream *url.URL
	Registry *config.Registry
	Counter  *tokenizer.Counter
	Codecs   proxy.Codecs
	Scoper   *proxy.Scoper
	// Cache keeps summaries, digests and the engine's memory of
	// conversations; Originals keeps what condensing replaced (its own
	// memory budget without Redis, the same store with it).
	Cache     Store
	Originals condense.Cache
	Engine    *condense.Engine
	Metrics   *proxy.Metrics
	// Page is the live page; nil when cfg.UI.Enabled is false or Options
	// gave a Recorder or UI.
	Page *ui.UI
	// Handler is the proxy: every route, the live page's included.
	Handler *proxy.Proxy
	// KeepAlive pings idle conversations; nil unless cfg.KeepAlive.Enabled.
	KeepAlive *keepalive.Keeper
	// Memory keeps the conversations' memory; nil unless the recall tool
	// or the relevant context is on (cfg.Memory), or Options.FeedMemory.
	Memory *memory.Memory
	// Gateway reads the upstream's /model/info into the registry; nil
	// when litellm.model_info is off or a models: entry matches every
	// name ("*": the table would never be consulted).
	Gateway *litellm.Poller
	// ProxyOptions and EngineOptions are what New gave the proxy and the
	// engine, for tests of the wiring.
	ProxyOptions  proxy.Options
	EngineOptions condense.Options

	closeCache func()
	redis      *cache.Redis // nil without Redis
	models     condense.Models
}

// ModelLimits is what the engine is told of model: the registry's
// entry, the gateway's table (litellm.model_info) included.
func (a *App) ModelLimits(model string) condense.ModelLimits { return a.models.Limits(model) }

// SharedSecretKey is the Redis key (under cache.Prefix) of the scope
// secret the replicas share when scope_secret is not set.
const SharedSecretKey = "scope-secret"

// scopeSecret returns the secret that keys the callers' scopes:
// scope_secret when set; else, with Redis, the one kept there — the first
// replica to start writes a random one, set-if-absent, and every replica
// and restart reads it back, so all share their scopes (and so their
// summaries); else a random one (nil: the scoper draws it), with a
// warning. When Redis cannot answer at start the replica goes on with a
// random secret, and says loudly what that costs: it keeps serving, as it
// does whenever Redis is down.
func (a *App) scopeSecret(ctx context.Context) []byte {
	if a.Config.ScopeSecret != "" {
		return []byte(a.Config.ScopeSecret)
	}
	if a.redis == nil {
		a.Log.Warn("scope_secret is not set: a random one is used, so caller scopes (cached summaries, originals, the live page's conversations) change on restart; set CONDENSE_SCOPE_SECRET")
		return nil
	}
	var b [32]byte
	rand.Read(b[:])
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	stored, ok := a.redis.Add(ctx, SharedSecretKey, []byte(hex.EncodeToString(b[:])), 0)
	if !ok || len(stored) < 16 {
		a.Log.Error("scope_secret is not set and Redis did not answer at start: this replica uses a random secret of its own, "+
			"so its callers' scopes differ from the other replicas' (summaries made twice, originals and conversations not found through them) "+
			"until it restarts with Redis up; set CONDENSE_SCOPE_SECRET to avoid this",
			"redis_key", cache.Prefix+SharedSecretKey)
		return nil
	}
	a.Log.Info("scope_secret is not set: using the secret the replicas share in Redis", "redis_key", cache.Prefix+SharedSecretKey)
	return stored
}

// New builds the stack for cfg, which must be valid (config.Load
// validates). It connects to Redis, and reports Redis unreachable at
// start as a warning, not an error: requests are then served with cache
// misses until it answers. With litellm.model_info on, it reads the
// upstream's /model/info once (at most 10 seconds) and then every
// litellm.refresh until Close.
func New(ctx context.Context, cfg *config.Config, o Options) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &App{Config: cfg, Log: o.Logger, closeCache: func() {}}
	if a.Log == nil {
		a.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	a.Upstream = o.Upstream
	if a.Upstream == nil {
		u, err := url.Parse(cfg.Upstream)
		if err != nil {
			return nil, fmt.Errorf("upstream: %w", err)
		}
		a.Upstream = u
	}
	if err := a.buildCache(ctx, o); err != nil {
		return nil, err
	}

	a.Registry = config.NewRegistry(cfg, func(model string) {
		a.Log.Warn("unknown model; using the default context window", "model", proxy.ModelName(model), "window", cfg.DefaultContextWindow)
	})
	a.Counter = o.Counter
	if a.Counter == nil {
		a.Counter = tokenizer.New(tokenizer.Options{MaxMessages: cfg.MaxRequestMessages})
	}
	reg := a.Registry
	a.Codecs = proxy.Codecs{Chat: chat.New(a.Counter), Responses: responses.New(a.Counter),
		Messages: messages.New(a.Counter, messages.BindsThinking(func(model string) bool { return reg.Lookup(model).ThinkingBinding })),
		Gemini:   gemini.New(a.Counter)}

	a.Scoper = proxy.NewScoper(a.scopeSecret(ctx), cfg.ScopeHeaders)

	transport := o.Transport
	if transport == nil {
		transport = proxy.NewTransport(proxy.TransportOptions{
			ConnectTimeout: cfg.UpstreamConnectTimeout,
			HeaderTimeout:  cfg.UpstreamHeaderTimeout,
		})
	}
	a.Metrics = proxy.NewMetrics(func() proxy.CacheStats {
		s := a.Cache.Stats()
		return proxy.CacheStats{Hits: s.Hits, Misses: s.Misses, Errors: s.Errors}
	})
	a.buildMemory(o, transport)
	engine, err := a.buildEngine(o, transport)
	if err != nil {
		a.closeCache()
		return nil, err
	}
	a.Engine = engine
	if err := a.buildKeepAlive(o, transport); err != nil {
		a.closeCache()
		return nil, err
	}

	popts := proxy.Options{
		Upstream:               a.Upstream,
		Condenser:              a.Engine,
		Codecs:                 a.Codecs,
		DefaultMode:            cfg.Condense.Mode,
		MaxBodyBytes:           cfg.MaxBodyBytes,
		MaxDecompressedBytes:   cfg.MaxDecompressedBytes,
		MaxInflight:            cfg.MaxInflightCondense,
		InflightWait:           cfg.InflightWait,
		Transport:              transport,
		Originals:              a.Engine,
		Cache:                  a.Cache,
		CacheDegraded:          func() bool { return a.Cache.Stats().Degraded },
		Metrics:                a.Metrics,
		Logger:                 a.Log,
		AuthKeys:               cfg.Auth.Keys,
		Scoper:                 a.Scoper,
		StripContextManagement: cfg.Anthropic.StripContextManagement,
		Recorder:               o.Recorder,
		UI:                     o.UI,
		RecallTool:             cfg.Memory.RecallTool,
		MaxRecallRounds:        cfg.Memory.MaxRecallRounds,
		MaxRecallCalls:         cfg.Memory.MaxRecallCalls,
		RecallBudgetTokens:     cfg.Memory.RecallBudgetTokens,
		Prices: func(model string) proxy.Prices {
			mi := a.Registry.Lookup(model)
			return proxy.Prices{CacheRead: mi.CacheRead, CacheWrite: mi.CacheWrite, CacheWrite1h: mi.CacheWrite1h}
		},
	}
	if a.Memory != nil {
		popts.Recall = a.Memory
	}
	// The live page (/ui): off, nothing about a request is kept.
	if cfg.UI.Enabled && o.Recorder == nil && o.UI == nil {
		a.Page = ui.New(ui.Options{
			MaxConversations:           cfg.UI.MaxConversations,
			MaxRequestsPerConversation: cfg.UI.MaxRequestsPerConversation,
			AuthKeys:                   cfg.Auth.Keys,
			AdminKeys:                  cfg.UI.Keys,
			TrustLoopback:              o.TrustLoopback,
			Scope:                      a.Scoper.Scope,
			Originals:                  a.Engine,
		})
		popts.Recorder, popts.UI = a.Page, a.Page
	}
	if a.KeepAlive != nil {
		popts.KeepAlive = keepAliveHook{a.KeepAlive}
		if a.Page != nil {
			a.Page.ShowKeepAlive(keepAliveStats(a.KeepAlive))
		}
	}
	a.ProxyOptions = popts
	a.Handler = proxy.New(popts)
	a.startGateway(ctx, o, transport)
	return a, nil
}

// startGateway starts reading the upstream's /model/info into the
// registry (package litellm), unless litellm.model_info is off or a
// models: entry matches every name.
func (a *App) startGateway(ctx context.Context, o Options, transport http.RoundTripper) {
	lc := a.Config.LiteLLM
	if !lc.ModelInfo || a.Registry.CoversEverything() {
		return
	}
	reg := a.Registry
	a.Gateway = litellm.Start(ctx, litellm.Options{
		Upstream: a.Upstream,
		HTTP:     &http.Client{Transport: transport},
		Key:      lc.Key,
		Interval: lc.Refresh,
		Ticks:    o.ModelInfoTicks,
		Apply:    func(ms []litellm.Model) int { return reg.SetGateway(gatewayModels(ms)) },
		Logger:   a.Log,
	})
}

// gatewayModels is the registry's view of LiteLLM's entries: prices as
// USD per million tokens and multiples of the input price.
func gatewayModels(ms []litellm.Model) []config.GatewayModel {
	out := make([]config.GatewayModel, len(ms))
	for i, m := range ms {
		out[i] = config.GatewayModel{Alias: m.Alias, Model: m.Model, ContextWindow: m.MaxInputTokens, MaxOutputTokens: m.MaxOutputTokens,
			InputPricePerMTok: m.InputPricePerMTok(), CacheRead: m.CacheRead(), CacheWrite: m.CacheWrite(), OutputPrice: m.OutputPrice()}
	}
	return out
}

// buildCache makes the cache and the originals' store: without Redis two
// memory stores, each with its own budget (cache_max_bytes,
// originals_max_bytes), so large originals never push summaries out, the
// originals' kept per caller (when full, the caller holding the most bytes
// loses its oldest first); with
// Redis one store, memory in front of Redis, for both.
func (a *App) buildCache(ctx context.Context, o Options) error {
	cfg := a.Config
	switch {
	case o.Cache != nil:
		a.Cache = o.Cache
		a.Originals = o.Cache
	case cfg.RedisURL == "" && cfg.RedisClusterURL == "":
		a.Cache = cache.NewMemory(cfg.CacheMaxBytes)
		// Per caller: one caller's originals never push out another's
		// (the keys are "orig:<scope>:<id>").
		a.Originals = cache.NewScopedMemory(cfg.OriginalsMaxBytes, cache.KindScope)
	default:
		r, err := cache.NewRedis(cache.RedisOptions{URL: cfg.RedisURL, ClusterURL: cfg.RedisClusterURL, Logger: a.Log,
			Timeout: cfg.RedisTimeout, FailThreshold: cfg.RedisFailThreshold, ProbeInterval: cfg.RedisProbeInterval})
		if err != nil {
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := r.Ping(pctx); err != nil {
			a.Log.Warn("redis not reachable at start; serving with cache misses until it is", "err", err)
		}
		a.redis = r
		layered := &cache.Layered{Mem: cache.NewMemory(cfg.CacheMaxBytes), Redis: r, MemoryTTL: 10 * time.Minute}
		a.Cache, a.Originals = layered, layered
		a.redis = r
		a.closeCache = func() { r.Close() }
	}
	return nil
}

// buildEngine makes the summarizer and the condensing engine.
func (a *App) buildEngine(o Options, transport http.RoundTripper) (*condense.Engine, error) {
	cfg := a.Config
	prompt := ""
	if cfg.Condense.PromptFile != "" {
		b, err := os.ReadFile(cfg.Condense.PromptFile)
		if err != nil {
			return nil, fmt.Errorf("reading condense.prompt_file: %w", err)
		}
		prompt = string(b)
	}
	var sum condense.Summarizer
	if cfg.Condense.Summarizer == "llm" || cfg.Selective.Summarizer == "llm" {
		sum = o.Summarizer
		if sum == nil {
			reg := a.Registry
			hc := &http.Client{Transport: transport}
			client := func(c view.Codec) *llm.Client { return &llm.Client{BaseURL: a.Upstream, HTTP: hc, Codec: c} }
			sum = &llm.Summarizer{
				Client:    client(a.Codecs.Chat),
				Clients:   []*llm.Client{client(a.Codecs.Responses), client(a.Codecs.Messages), client(a.Codecs.Gemini)},
				API:       cfg.Condense.SummaryAPI,
				Reasoning: func(model string) bool { return reg.Lookup(model).Reasoning },
			}
		}
	}
	if cfg.Condense.Defer {
		a.Log.Warn("condense.defer has no effect: it changed no measured bill, and was removed (BENCHMARKS.md); remove the key")
	}
	reg := a.Registry
	models := condense.ModelsFunc(func(model string) condense.ModelLimits {
		mi := reg.Lookup(model)
		return condense.ModelLimits{Window: mi.ContextWindow, Threshold: mi.Threshold, Target: config.TargetFor(cfg.Condense.Target, mi.Threshold),
			Encoding: mi.Encoding, SafetyFactor: mi.SafetyFactor,
			CacheRead: mi.CacheRead, CacheWrite: mi.CacheWrite, CacheTTL: mi.CacheTTL, MaxOutput: mi.MaxOutputTokens, Family: mi.Match,
			MinCachedPrefix: mi.MinCachedPrefix, InputPrice: mi.InputPricePerMTok, OutputPrice: mi.OutputPrice}
	})
	a.models = models
	a.EngineOptions = condense.Options{
		Target:                cfg.Condense.Target,
		PrepareThreshold:      cfg.Condense.PrepareThreshold,
		MaxMessages:           cfg.Condense.MaxMessages,
		KeepRecentTurns:       cfg.Condense.KeepRecentTurns,
		ChunkTokens:           cfg.Condense.ChunkTokens,
		SummaryBudgetTokens:   cfg.Condense.SummaryBudgetTokens,
		Summarizer:            cfg.Condense.Summarizer,
		SummaryModel:          cfg.Condense.SummaryModel,
		SummaryTimeout:        cfg.Condense.SummaryTimeout,
		SummarizerConcurrency: cfg.Condense.SummarizerConcurrency,
		MaxWait:               cfg.Condense.MaxWait,
		Prompt:                prompt,
		OriginalsTTL:          cfg.Condense.OriginalsTTL,
		SelectiveEnabled:      cfg.Selective.Enabled,
		Selective: selective.Options{
			KeepRecentToolOutputs: keepRecent(cfg.Selective.KeepRecentToolOutputs),
			MinToolOutputTokens:   cfg.Selective.MinToolOutputTokens,
			ExcludeTools:          cfg.Selective.ExcludeTools,
			ClearToolInputs:       cfg.Selective.ClearToolInputs,
		},
		MinSavingsTokens:    cfg.Selective.MinSavingsTokens,
		SelectiveSummarizer: cfg.Selective.Summarizer,
		SelectiveEager:      cfg.Selective.Eager,
		DigestsFirst:        cfg.Selective.DigestsFirst,
		DigestInputBytes:    cfg.Selective.LLMDigestInputBytes,
		DigestMaxTokens:     cfg.Selective.LLMDigestMaxTokens,
		MaxSummarizerCalls:  cfg.Condense.MaxSummarizerCalls,
		NoColdTurns:         !cfg.Condense.ColdTurns,
		AutoLLMShare:        autoLLMShare(cfg.Condense.AutoLLMShare),
		StandIns:            cfg.Condense.StandIns,
		HoldoutShare:        cfg.Condense.HoldoutShare,
	}
	if cfg.Memory.RelevantContext {
		a.EngineOptions.RelevantTokens = cfg.Memory.RecallBudgetTokens
	}
	if cfg.Memory.RecallTool {
		a.EngineOptions.RecallTool = &memory.Tool
	}
	deps := condense.Deps{
		Counter:    a.Counter,
		Originals:  a.Originals,
		Models:     models,
		Cache:      a.Cache,
		Summarizer: sum,
		Observer:   a.Metrics,
		Logger:     a.Log,
		Now:        o.EngineClock,
	}
	if a.Memory != nil {
		deps.Memory = a.Memory
	}
	return condense.New(deps, a.EngineOptions), nil
}

// buildMemory makes the conversations' memory when something reads it
// (the recall tool, the relevant context): in the cache with Redis
// (shared by the replicas), else in a memory store of its own
// (memory.max_bytes), so it never pushes summaries out.
func (a *App) buildMemory(o Options, transport http.RoundTripper) {
	cfg := a.Config
	if !cfg.Memory.Enabled() && !o.FeedMemory {
		return
	}
	var store memory.Store
	if s, ok := a.Cache.(memory.Store); ok && (o.Cache != nil || a.redis != nil) {
		store = s
	} else {
		// Per caller, as the originals (the keys are
		// "mem:<scope>:<conversation>:<n>").
		store = cache.NewScopedMemory(cfg.Memory.MaxBytes, cache.KindScope)
	}
	counter := a.Counter
	mo := memory.Options{
		TTL:      cfg.Condense.OriginalsTTL,
		MaxBytes: int(min(cfg.Memory.MaxConversationBytes, 1<<40)),
		Count:    func(s string) int { return counter.Text(tokenizer.O200kBase, s) },
		Logger:   a.Log,
	}
	if cfg.Memory.EmbeddingModel != "" {
		mo.EmbeddingModel = cfg.Memory.EmbeddingModel
		mo.Embedder = &llm.EmbeddingsClient{BaseURL: a.Upstream, HTTP: &http.Client{Transport: transport}}
	}
	a.Memory = memory.New(store, mo)
}

// autoLLMShare maps the config's 0 (never the LLM in auto) to the
// engine's negative.
func autoLLMShare(f float64) float64 {
	if f == 0 {
		return -1
	}
	return f
}

// keepRecent maps the config's 0 (protect nothing) to selective's -1.
func keepRecent(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// Server returns the HTTP server for the stack: its handler, the
// timeouts above, errors to the logger, and the live page's event streams
// closed on Shutdown (they would hold it).
func (a *App) Server() *http.Server {
	srv := &http.Server{
		Handler:           a.Handler,
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		ErrorLog:          slog.NewLogLogger(a.Log.Handler(), slog.LevelWarn),
	}
	if a.Page != nil {
		srv.RegisterOnShutdown(a.Page.Close)
	}
	return srv
}

// Close stops reading /model/info and the keep-alive pings, waits for background summaries and
// the pings in flight (until ctx ends), then closes the live page's
// streams and the cache New opened.
func (a *App) Close(ctx context.Context) error {
	if a.Gateway != nil {
		a.Gateway.Close()
	}
	var kerr error
	if a.KeepAlive != nil {
		kerr = a.KeepAlive.Close(ctx)
	}
	err := errors.Join(a.Engine.Close(ctx), kerr)
	if a.Page != nil {
		a.Page.Close()
	}
	a.closeCache()
	if err != nil {
		return fmt.Errorf("background work cut short: %w", err)
	}
	return nil
}
