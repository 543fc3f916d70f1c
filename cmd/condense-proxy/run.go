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
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
)

// version, when set at build time with -ldflags "-X main.version=...",
// is the version printed; empty, it comes from the build info (see
// buildVersion).
var version = ""

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
	case "demo":
		return demo(ctx, args, stdout, stderr, nil)
	case "version":
		fmt.Fprintln(stdout, "condense-proxy", currentVersion())
		return nil
	case "health":
		return health(ctx, args, stdout, environ)
	case "help":
		usage(stderr)
		return nil
	default:
		usage(stderr)
		return fmt.Errorf("unknown command %q", cmd)
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: condense-proxy [serve] [flags]           run the proxy (the default)
       condense-proxy demo [flags]              try it: the proxy in front of a built-in scripted upstream,
                                                replaying a sample session; watch it on the live page
       condense-proxy condense [flags] FILE|-   condense one request body offline
       condense-proxy health [URL]              exit 0 when a running proxy's /healthz answers 200
                                                (for container health checks)
       condense-proxy version                   print the version

The proxy condenses chat completions (/v1/chat/completions), Anthropic Messages (/v1/messages,
Claude Code), OpenAI Responses (/v1/responses, Codex) and Gemini (/v1beta/models/{model}:generateContent
and :streamGenerateContent, Gemini CLI) requests over their model's threshold; every other path goes
to the upstream unchanged.
Run "condense-proxy serve --help" for the flags, "condense-proxy condense --help" for the offline command.
`)
}

// serveUsage heads serve --help.
const serveUsage = `usage: condense-proxy serve [flags]

Runs the proxy. POST /v1/chat/completions, /v1/messages (Anthropic Messages; count_tokens too),
/v1/responses (OpenAI Responses) and /v1beta/models/{model}:generateContent (Gemini; its stream and
countTokens too) are counted and, over the model's threshold, condensed; every other path goes to the
upstream unchanged. /ui is the live page; /healthz, /readyz and /metrics the probes.
Other commands: demo, condense (offline), health, version ("condense-proxy help").

Every flag is also an environment variable CONDENSE_<KEY> and a key of the --config YAML file
(see docs/configuration.md).

`

// serve runs the proxy until ctx ends. ready, if not nil, receives the
// listener's address once it accepts connections.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer, environ []string, ready chan<- string) error {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false // the keys table's order, README's
	config.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, serveUsage+fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return config.FlagError(fs, err)
	}
	cfg, err := config.Load(fs, environ)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	if len(cfg.Warnings) > 0 {
		log.Warn("environment variables CONDENSE_* that set no configuration key are ignored", "variables", cfg.Warnings)
	}
	a, err := app.New(ctx, cfg, app.Options{Logger: log})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		closeWithin(ctx, a, cfg.ShutdownGrace)
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	srv := a.Server()
	cacheKind := "memory"
	switch {
	case cfg.RedisURL != "":
		cacheKind = "redis"
	case cfg.RedisClusterURL != "":
		cacheKind = "redis cluster"
	}
	interfaces, everyone := reach(ln.Addr())
	access := "open: no auth.keys, any client that can connect may use it"
	if len(cfg.Auth.Keys) > 0 {
		access = fmt.Sprintf("auth.keys: %d accepted keys", len(cfg.Auth.Keys))
	}
	log.Info("condense-proxy listening", "addr", ln.Addr().String(), "interfaces", interfaces, "access", access,
		"upstream", a.Upstream.Redacted(), "cache", cacheKind, "mode", cfg.Condense.Mode, "threshold", thresholdLabel(cfg), "version", currentVersion())
	if everyone && len(cfg.Auth.Keys) == 0 {
		log.Warn("the proxy is open to the network: it listens beyond loopback and no auth.keys are set, so anyone who reaches " +
			ln.Addr().String() + " can send requests through it to the upstream; set auth.keys (CONDENSE_AUTH_KEYS) or listen on 127.0.0.1")
	}
	if ready != nil {
		ready <- ln.Addr().String()
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		// ctx has not ended: the background work is drained within the
		// grace, as on a signal, not waited for without bound.
		closeWithin(ctx, a, cfg.ShutdownGrace)
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

// closeWithin closes a, draining its background work for at most grace
// (then cancelling it), whether or not ctx has ended.
func closeWithin(ctx context.Context, a *app.App, grace time.Duration) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	return a.Close(cctx)
}

// reach says which interfaces addr listens on, and whether that is more
// than this machine (loopback).
func reach(addr net.Addr) (interfaces string, beyondLoopback bool) {
	tcp, ok := addr.(*net.TCPAddr)
	switch {
	case !ok:
		return addr.String(), true
	case tcp.IP.IsLoopback():
		return "loopback only (this machine)", false
	case tcp.IP == nil || tcp.IP.IsUnspecified():
		return "every interface", true
	}
	return "the interface of " + tcp.IP.String(), true
}

// newLogger makes the logger cfg asks for. Durations are written as
// short strings rounded to three significant digits ("12.3ms", "1.5s"),
// in JSON as in text, never as raw nanoseconds.
func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: readableDurations}
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

// readableDurations is a slog ReplaceAttr: a duration becomes its
// string, rounded to three significant digits.
func readableDurations(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(roundDuration(a.Value.Duration()).String())
	}
	return a
}

// roundDuration keeps three significant digits of d: 12.345678ms is
// 12.3ms, 1.23456s is 1.23s.
func roundDuration(d time.Duration) time.Duration {
	p := time.Duration(1)
	for a := d.Abs(); a/p >= 1000; p *= 10 {
	}
	return d.Round(p)
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// health checks a running proxy's /healthz, for container health checks
// (the image has no curl). The URL defaults to the local listen port.
func health(ctx context.Context, args []string, stdout io.Writer, environ []string) error {
	target := "http://127.0.0.1:8080/healthz"
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, config.EnvName("listen")+"="); ok {
			if _, port, err := net.SplitHostPort(v); err == nil {
				target = "http://127.0.0.1:" + port + "/healthz"
			}
		}
	}
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" {
			fmt.Fprintln(stdout, "usage: condense-proxy health [URL]\n\nExits 0 when URL (default http://127.0.0.1:$PORT/healthz, PORT from CONDENSE_LISTEN, else 8080)\nanswers 200; for container health checks (the image has no curl).")
			return nil
		}
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

// thresholdLabel says what condense.threshold is: its value, or, unset,
// the rule that gives each model its own.
func thresholdLabel(cfg *config.Config) string {
	if t := cfg.Condense.Threshold; t > 0 {
		return strconv.FormatFloat(t, 'g', -1, 64)
	}
	return fmt.Sprintf("by window (%g from %d tokens, %g below)", config.LargeWindowThreshold, config.LargeWindow, config.SmallWindowThreshold)
}
