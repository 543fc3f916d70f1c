package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/llm"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// offline runs the condensing engine once on a request file: the
// condensed body goes to stdout, the report as JSON to stderr.
func offline(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("condense", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	mode := fs.String("mode", "auto", "auto | full | selective | truncate | off")
	model := fs.String("model", "", "model whose limits apply (default: the body's model)")
	window := fs.Int("context-window", 0, "context window in tokens (default: the registry's for the model)")
	threshold := fs.Float64("threshold", 0.8, "fraction of the window that triggers condensing")
	target := fs.Float64("target", 0.5, "fraction of the window to condense down to")
	force := fs.Bool("force", false, "condense even under the threshold")
	summarizer := fs.String("summarizer", "extractive", "extractive | llm")
	upstream := fs.String("upstream", "https://api.openai.com", "upstream for the llm summarizer")
	apiKey := fs.String("api-key", "", "key for the llm summarizer (default: $OPENAI_API_KEY)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: condense-proxy condense [flags] FILE|-\n\nReads a chat-completions request body, writes the condensed body to stdout and the report to stderr.\n\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("condense: want one input file (or - for stdin)")
	}
	var body []byte
	var err error
	if fs.Arg(0) == "-" {
		body, err = io.ReadAll(stdin)
	} else {
		body, err = os.ReadFile(fs.Arg(0))
	}
	if err != nil {
		return fmt.Errorf("reading request: %w", err)
	}
	if *threshold <= 0 || *threshold > 1 || *target <= 0 || *target >= *threshold {
		return fmt.Errorf("condense: need 0 < target (%g) < threshold (%g) <= 1", *target, *threshold)
	}
	if *summarizer != "extractive" && *summarizer != "llm" {
		return fmt.Errorf("condense: --summarizer %q is not extractive or llm", *summarizer)
	}
	cfg := config.Defaults()
	cfg.Condense.Threshold = *threshold
	reg := config.NewRegistry(&cfg, nil)
	models := condense.ModelsFunc(func(m string) condense.ModelLimits {
		if *model != "" {
			m = *model
		}
		mi := reg.Lookup(m)
		lim := condense.ModelLimits{Window: mi.ContextWindow, Threshold: *threshold, Encoding: mi.Encoding, SafetyFactor: mi.SafetyFactor, Known: mi.Known}
		if *window > 0 {
			lim.Window = *window
		}
		return lim
	})
	var sum condense.Summarizer
	creds := http.Header{}
	if *summarizer == "llm" {
		u, err := url.Parse(*upstream)
		if err != nil || u.Host == "" {
			return fmt.Errorf("condense: bad --upstream %q", *upstream)
		}
		key := *apiKey
		if key == "" {
			key = os.Getenv("OPENAI_API_KEY")
		}
		if key != "" {
			creds.Set("Authorization", "Bearer "+key)
		}
		sum = &llm.Summarizer{Client: &llm.Client{BaseURL: u, HTTP: &http.Client{Timeout: 2 * time.Minute}}}
	}
	eng := condense.New(condense.Deps{
		Counter:    tokenizer.New(tokenizer.Options{}),
		Models:     models,
		Cache:      cache.NewMemory(512 << 20),
		Summarizer: sum,
		Logger:     slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}, condense.Options{Target: *target, Summarizer: *summarizer, SelectiveEnabled: true})
	res, err := eng.Condense(ctx, condense.Request{Body: body, Mode: *mode, Force: *force, Scope: "offline", Credentials: creds})
	if err != nil {
		return err
	}
	if _, err := stdout.Write(res.Body); err != nil {
		return fmt.Errorf("writing condensed body: %w", err)
	}
	rep := res.Report
	out, _ := json.MarshalIndent(map[string]any{
		"model": rep.Model, "applied": rep.Applied, "tokens_before": rep.TokensBefore, "tokens_after": rep.TokensAfter,
		"messages": rep.Messages, "window": rep.Window, "trigger": rep.Trigger, "reason": rep.Reason,
		"degraded": rep.Degraded, "summaries": rep.Summaries, "summarizer_calls": rep.Calls, "duration_ms": rep.Duration.Milliseconds(),
	}, "", "  ")
	fmt.Fprintln(stderr, string(out))
	return nil
}
