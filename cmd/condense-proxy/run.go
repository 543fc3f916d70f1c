package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/llm"
	"github.com/condense-proxy/condense-proxy/proxy"
	"github.com/condense-proxy/condense-proxy/selective"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Main runs the command line args and returns when the command is done or
// ctx is cancelled (for serve: after a graceful shutdown).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, environ []string) error {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, args, stdout, stderr, environ, nil)
	case "condense":
		return offline(ctx, args, os.Stdin, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "condense-proxy", version)
		return nil
	case "health":
		return health(ctx, args, environ)
	case "help":
		usage(stderr)
		return nil
	default:
		usage(stderr)
		return fmt.Errorf("unknown command %q", cmd)
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, `usage: condense-proxy [serve] [flags]    run the proxy (default)
       condense-proxy condense [flags] FILE|-   condense one request body offline
       condense-proxy version            print the version
       condense-proxy health [URL]       exit 0 when the proxy's /healthz answers 200 (for container health checks)
Run "condense-proxy serve --help" for the flags.`)
}

// serve runs the proxy until ctx ends. ready, if not nil, receives the
// listener's address once it accepts connections.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer, environ []string, ready chan<- string) error {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	config.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: condense-proxy serve [flags]\n\nEvery flag is also an environment variable CONDENSE_<KEY> and a key of the --config YAML file (see README.md).\n\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	cfg, err := config.Load(fs, environ)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)

	store, closeStore, err := newCache(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeStore()

	upstream, _ := url.Parse(cfg.Upstream) // validated by config.Load
	reg := config.NewRegistry(cfg, func(model string) {
		log.Warn("unknown model; using the default context window", "model", model, "window", cfg.DefaultContextWindow)
	})
	metrics := proxy.NewMetrics(func() proxy.CacheStats {
		s := store.Stats()
		return proxy.CacheStats{Hits: s.Hits, Misses: s.Misses, Errors: s.Errors}
	})
	transport := proxy.NewTransport(proxy.TransportOptions{
		ConnectTimeout: cfg.UpstreamConnectTimeout,
		HeaderTimeout:  cfg.UpstreamHeaderTimeout,
	})
	engine, err := newEngine(cfg, reg, store, upstream, &http.Client{Transport: transport}, metrics, log)
	if err != nil {
		return err
	}
	var degraded func() bool
	if cfg.RedisURL != "" {
		degraded = func() bool { return store.Stats().Degraded }
	}
	h := proxy.New(proxy.Options{
		Upstream:             upstream,
		Condenser:            engine,
		DefaultMode:          cfg.Condense.Mode,
		MaxBodyBytes:         cfg.MaxBodyBytes,
		MaxDecompressedBytes: cfg.MaxDecompressedBytes,
		Transport:            transport,
		Originals:            engine,
		Cache:                store,
		CacheDegraded:        degraded,
		Metrics:              metrics,
		Logger:               log,
	})

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	cacheKind := "memory"
	if cfg.RedisURL != "" {
		cacheKind = "redis"
	}
	log.Info("condense-proxy listening", "addr", ln.Addr().String(), "upstream", upstream.Redacted(),
		"cache", cacheKind, "mode", cfg.Condense.Mode, "threshold", cfg.Condense.Threshold, "version", version)
	if ready != nil {
		ready <- ln.Addr().String()
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down; draining in-flight requests", "grace", cfg.ShutdownGrace)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("grace period over; closing remaining connections", "err", err)
		srv.Close()
	}
	if err := engine.Close(sctx); err != nil {
		log.Warn("background summaries cut short", "err", err)
	}
	log.Info("stopped")
	return nil
}

// keepRecent maps the config's 0 (protect nothing) to selective's -1.
func keepRecent(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// store is what serve needs of the cache.
type store interface {
	Get(ctx context.Context, key string) ([]byte, bool)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration)
	Ping(ctx context.Context) error
	Stats() cache.Stats
}

// newEngine builds the condensing engine from the config.
func newEngine(cfg *config.Config, reg *config.Registry, st condense.Cache, upstream *url.URL, hc *http.Client, obs condense.Observer, log *slog.Logger) (*condense.Engine, error) {
	prompt := ""
	if cfg.Condense.PromptFile != "" {
		b, err := os.ReadFile(cfg.Condense.PromptFile)
		if err != nil {
			return nil, fmt.Errorf("reading condense.prompt_file: %w", err)
		}
		prompt = string(b)
	}
	var sum condense.Summarizer
	if cfg.Condense.Summarizer == "llm" {
		sum = &llm.Summarizer{Client: &llm.Client{BaseURL: upstream, HTTP: hc}}
	}
	var observer condense.Observer
	if obs != nil {
		observer = obs
	}
	return condense.New(condense.Deps{
		Counter:    tokenizer.New(tokenizer.Options{MaxMessages: cfg.MaxRequestMessages}),
		Models:     modelLimits(reg),
		Cache:      st,
		Summarizer: sum,
		Observer:   observer,
		Logger:     log,
	}, condense.Options{
		Target:              cfg.Condense.Target,
		PrepareThreshold:    cfg.Condense.PrepareThreshold,
		MaxMessages:         cfg.Condense.MaxMessages,
		KeepRecentTurns:     cfg.Condense.KeepRecentTurns,
		ChunkTokens:         cfg.Condense.ChunkTokens,
		SummaryBudgetTokens: cfg.Condense.SummaryBudgetTokens,
		Summarizer:          cfg.Condense.Summarizer,
		SummaryModel:        cfg.Condense.SummaryModel,
		SummaryTimeout:      cfg.Condense.SummaryTimeout,
		Prompt:              prompt,
		OriginalsTTL:        cfg.Condense.OriginalsTTL,
		SelectiveEnabled:    cfg.Selective.Enabled,
		Selective: selective.Options{
			KeepRecentToolOutputs: keepRecent(cfg.Selective.KeepRecentToolOutputs),
			MinToolOutputTokens:   cfg.Selective.MinToolOutputTokens,
			ExcludeTools:          cfg.Selective.ExcludeTools,
			ClearToolInputs:       cfg.Selective.ClearToolInputs,
		},
		MinSavingsTokens:    cfg.Selective.MinSavingsTokens,
		SelectiveSummarizer: cfg.Selective.Summarizer,
	}), nil
}

func newCache(ctx context.Context, cfg *config.Config, log *slog.Logger) (store, func(), error) {
	mem := cache.NewMemory(cfg.CacheMaxBytes)
	if cfg.RedisURL == "" {
		return mem, func() {}, nil
	}
	r, err := cache.NewRedis(cache.RedisOptions{URL: cfg.RedisURL, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := r.Ping(pctx); err != nil {
		log.Warn("redis not reachable at start; serving with cache misses until it is", "err", err)
	}
	return &cache.Layered{Mem: mem, Redis: r, MemoryTTL: 10 * time.Minute}, func() { r.Close() }, nil
}

func modelLimits(reg *config.Registry) condense.Models {
	return condense.ModelsFunc(func(model string) condense.ModelLimits {
		mi := reg.Lookup(model)
		return condense.ModelLimits{
			Window:       mi.ContextWindow,
			Threshold:    mi.Threshold,
			Encoding:     mi.Encoding,
			SafetyFactor: mi.SafetyFactor,
			Known:        mi.Known,
		}
	})
}

func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	format := cfg.LogFormat
	if format == "auto" {
		format = "json"
		if f, ok := w.(*os.File); ok && isTerminal(f) {
			format = "text"
		}
	}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// health checks a running proxy's /healthz, for container health checks
// (the image has no curl). The URL defaults to the local listen port.
func health(ctx context.Context, args []string, environ []string) error {
	target := "http://127.0.0.1:8080/healthz"
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, config.EnvName("listen")+"="); ok {
			if _, port, err := net.SplitHostPort(v); err == nil {
				target = "http://127.0.0.1:" + port + "/healthz"
			}
		}
	}
	if len(args) > 0 {
		target = args[0]
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s answered %d", target, resp.StatusCode)
	}
	return nil
}
