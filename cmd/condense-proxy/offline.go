package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/proxy"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// offline runs the condensing engine once on a request file: the
// condensed body goes to stdout, the report as JSON to stderr.
func offline(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("condense", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	mode := fs.String("mode", condense.ModeAuto, strings.Join(condense.Modes, " | "))
	model := fs.String("model", "", "model whose limits apply (default: the body's model)")
	window := fs.Int("context-window", 0, "context window in tokens (default: the registry's for the model)")
	threshold := fs.Float64("threshold", 0, "fraction of the window that triggers condensing (0: by the model's window, 0.6 from 64000 tokens, 0.8 below)")
	target := fs.Float64("target", 0, "fraction of the window to condense down to (0: 5/8 of the threshold, at most 0.5)")
	force := fs.Bool("force", false, "condense even under the threshold")
	summarizer := fs.String("summarizer", "extractive", "extractive | llm")
	upstream := fs.String("upstream", "", "upstream base URL the llm summarizer asks (required with --summarizer llm; e.g. https://api.openai.com)")
	apiKey := fs.String("api-key", "", "key for the llm summarizer (default: $OPENAI_API_KEY)")
	format := fs.String("format", "auto", "auto | chat | messages | responses | gemini: the request's wire format (auto: responses when the body has an input array and no messages; messages when it has a top-level system or Anthropic content blocks; gemini when it has contents with parts, its model from --model)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: condense-proxy condense [flags] FILE|-\n\nReads one request body — chat completions, Anthropic Messages, OpenAI Responses or Gemini (--format) —\nwrites the condensed body to stdout and the report as JSON to stderr. A body that is not\nvalid JSON, or not a request of its format, is an error (exit status 1).\n\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return config.FlagError(fs, err)
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
	name := fs.Arg(0)
	if name == "-" {
		name = "standard input"
	}
	var raw json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("condense: %s is not valid JSON: %v (at byte %d)", name, err, se.Offset)
		}
		return fmt.Errorf("condense: %s is not valid JSON: %w", name, err)
	}
	if !condense.ValidMode(*mode) {
		return fmt.Errorf("condense: --mode %q is not one of %s", *mode, strings.Join(condense.Modes, ", "))
	}
	if *format != "auto" && *format != "chat" && *format != "responses" && *format != "messages" && *format != "gemini" {
		return fmt.Errorf("condense: --format %q is not auto, chat, messages, responses or gemini", *format)
	}
	cfg := config.Defaults()
	cfg.Upstream = *upstream
	if cfg.Upstream == "" {
		if *summarizer == "llm" {
			return errors.New("condense: --summarizer llm needs --upstream, the base URL the summaries are asked of (https://api.openai.com, http://localhost:4000 for LiteLLM)")
		}
		// Nothing leaves this process: the extractive summarizer runs
		// here. A name that never resolves (RFC 6761) stands in.
		cfg.Upstream = "http://upstream.invalid"
	}
	cfg.Condense.Threshold = *threshold
	cfg.Condense.Target = *target
	cfg.Condense.PrepareThreshold = 0 // threshold - 0.1; nothing runs in the background here
	cfg.Condense.Summarizer = *summarizer
	cfg.UI.Enabled = false
	cfg.ScopeSecret = "offline: no caller scopes"
	// The limits of the model (--model, else the body's), with the
	// window of --context-window, apply to the body whatever it names.
	modelName := *model
	if modelName == "" {
		modelName = gjson.GetBytes(body, "model").String()
	}
	mi := config.NewRegistry(&cfg, nil).Lookup(modelName)
	if *window > 0 {
		mi.ContextWindow = *window
	}
	cfg.Models = []config.ModelConfig{{Match: "*", ContextWindow: mi.ContextWindow, MaxOutputTokens: mi.MaxOutputTokens,
		Encoding: mi.Encoding, SafetyFactor: mi.SafetyFactor, Reasoning: &mi.Reasoning}}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("condense: %w", err)
	}
	creds := http.Header{}
	if *summarizer == "llm" {
		key := *apiKey
		if key == "" {
			key = os.Getenv("OPENAI_API_KEY")
		}
		if key != "" {
			creds.Set("Authorization", "Bearer "+key)
		}
	}
	a, err := app.New(ctx, &cfg, app.Options{Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return fmt.Errorf("condense: %w", err)
	}
	defer a.Close(context.WithoutCancel(ctx))
	codec := pickCodec(*format, body, a.Codecs)
	if pm, ok := codec.(view.PathModel); ok {
		// A format whose model is in the path: the model given.
		codec = pm.WithModel(*model)
	}
	want := "a chat completions request (no messages array)"
	switch codec.Format() {
	case "gemini":
		want = "a Gemini request (no contents array)"
	case "messages":
		want = "an Anthropic Messages request (no messages array)"
	case "responses":
		want = "a Responses request (no input array)"
	}
	if _, err := codec.Scan(body, func(string) string { return tokenizer.O200kBase }); errors.Is(err, view.ErrNotRequest) &&
		!errors.Is(err, view.ErrSingleTurn) {
		// (A single turn is a request with nothing to condense: it goes
		// through unchanged.)
		return fmt.Errorf("condense: %s is not %s", name, want)
	}
	res, err := a.Engine.Condense(ctx, condense.Request{Body: body, Codec: codec, Mode: *mode, Force: *force, Scope: "offline", Credentials: creds})
	if err != nil {
		return err
	}
	if _, err := stdout.Write(res.Body); err != nil {
		return fmt.Errorf("writing condensed body: %w", err)
	}
	rep := res.Report
	out, _ := json.MarshalIndent(map[string]any{
		"format": rep.Format, "model": rep.Model, "applied": rep.Applied, "tokens_before": rep.TokensBefore, "tokens_after": rep.TokensAfter,
		"messages": rep.Messages, "window": rep.Window, "trigger": rep.Trigger, "reason": rep.Reason, "path": rep.Path,
		"degraded": rep.Degraded, "degraded_kinds": rep.DegradedKinds, "summaries": rep.Summaries, "summarizer_calls": rep.Calls, "duration_ms": rep.Duration.Milliseconds(),
	}, "", "  ")
	fmt.Fprintln(stderr, string(out))
	return nil
}

// pickCodec returns the codec of format, or, for auto, of the first
// format whose codec claims the body (view.Sniffer): Responses, then
// Messages, then Gemini; chat completions when none does.
func pickCodec(format string, body []byte, cs proxy.Codecs) view.Codec {
	all := []view.Codec{cs.Responses, cs.Messages, cs.Gemini, cs.Chat}
	for _, c := range all {
		if c.Format() == format {
			return c
		}
	}
	if format == "auto" {
		for _, c := range all {
			if s, ok := c.(view.Sniffer); ok && s.Sniff(body) {
				return c
			}
		}
	}
	return cs.Chat
}
