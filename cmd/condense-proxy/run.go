package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
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
	a, err := app.New(ctx, cfg, app.Options{Logger: log})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		a.Close(ctx)
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	srv := a.Server()
	cacheKind := "memory"
	if cfg.RedisURL != "" {
		cacheKind = "redis"
	}
	log.Info("condense-proxy listening", "addr", ln.Addr().String(), "upstream", a.Upstream.Redacted(),
		"cache", cacheKind, "mode", cfg.Condense.Mode, "threshold", cfg.Condense.Threshold, "version", version)
	if ready != nil {
		ready <- ln.Addr().String()
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		a.Close(ctx)
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
	if err := a.Close(sctx); err != nil {
		log.Warn("closing", "err", err)
	}
	log.Info("stopped")
	return nil
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
