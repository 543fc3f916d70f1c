package main

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/internal/scripted"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// demoSession is the sample session the demo replays: a synthetic coding
// session (internal/corpus.Synthetic, see TestDemoSessionIsSynthetic) as
// the chat-completions request of its last turn.
//
//go:embed testdata/demo-session.json
var demoSession []byte

// Demo defaults: a window small enough that the sample session is
// condensed from its first few turns on.
const (
	demoWindow = 12000
	demoPause  = 500 * time.Millisecond
	// demoClaudeWindow is the demo's window of Claude models.
	demoClaudeWindow = 32000
	// demoLLMShare is the demo's condense.auto_llm_share.
	demoLLMShare = 0.25
)

// demoScopeHeader is the demo's only scope header: no client sends it, so
// every caller of the demo has one scope.
const demoScopeHeader = "X-Condense-Demo-Scope"

// demo runs the proxy (the default configuration, in-memory cache, its
// summaries written by the scripted model) in front of a scripted
// upstream in this process (internal/scripted: chat completions, Messages,
// Responses and Gemini, JSON and SSE, tool calls), replays the sample session
// through it one turn at a time — printing the live page's address, its
// admin key and one line per request — then keeps serving until ctx ends
// (Ctrl-C). ready, if not nil, receives the proxy's base URL and the
// page's key once it accepts connections.
func demo(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- [2]string) error {
	fs := pflag.NewFlagSet("demo", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8080", "address the demo proxy listens on (port 0: any free port)")
	window := fs.Int("context-window", demoWindow, "context window of every model but Claude's (those get at least 32000), in tokens (small, so the sample condenses)")
	pause := fs.Duration("pause", demoPause, "pause between the replayed requests")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `usage: condense-proxy demo [flags]

Runs the proxy in front of a built-in scripted model (no provider, no API key) and replays a
sample coding session through it at a small window, so its requests are condensed; open the live
page it prints to watch. It keeps serving until Ctrl-C: point Claude Code, Codex, Gemini CLI or any
OpenAI-, Anthropic- or Gemini-compatible client at it (the commands are printed); the scripted model
lists the directory, reads a file and answers.

%s`, fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	turns, err := demoTurns(demoSession)
	if err != nil {
		return fmt.Errorf("demo: the sample session: %w", err)
	}

	upLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("demo: starting the scripted upstream: %w", err)
	}
	defer upLn.Close()

	// The default configuration, but for the window and what suits a
	// demo on one machine.
	cfg := config.Defaults()
	cfg.Listen = *listen
	cfg.Upstream = "http://" + upLn.Addr().String()
	cfg.ScopeSecret = "demo " + randomHex(16)
	// Every caller of the demo is one caller: the scope is made of a
	// header nobody sends, so the page's key opens the originals of every
	// conversation, whatever key the agent sent (the credentials still
	// reach the upstream, which ignores them).
	cfg.ScopeHeaders = []string{demoScopeHeader}
	key := "demo-" + randomHex(8)
	cfg.UI.Keys = []string{key}
	cfg.LogLevel = "warn"
	// Claude Code's own prompt and tools are about 25k tokens: under a
	// smaller window every one of its requests would be too large to
	// condense. Its models get room for that and a few steps more.
	cfg.Models = []config.ModelConfig{
		{Match: "claude-*", ContextWindow: max(*window, demoClaudeWindow)},
		{Match: "*", ContextWindow: *window},
	}
	// Chunks and summaries scaled to the small window, so full condensing
	// has room to work (the defaults suit 128k windows).
	cfg.Condense.ChunkTokens = max(256, *window/5)
	cfg.Condense.SummaryBudgetTokens = max(256, *window/8)
	// The sample is short, so auto's allowance for LLM summaries (a share
	// of the conversation's bill so far, 2%) never pays for one: the
	// demo allows more, so the page shows the scripted model's summaries
	// where auto asks for them.
	cfg.Condense.AutoLLMShare = demoLLMShare
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	log := newLogger(&cfg, stderr)
	// The scripted upstream: answers chat completions, Messages and
	// Responses, summarizer calls included (internal/scripted).
	up := &http.Server{Handler: scripted.New(scripted.Options{Logger: log}), ReadHeaderTimeout: app.ReadHeaderTimeout}
	go up.Serve(upLn)
	defer up.Close()
	a, err := app.New(ctx, &cfg, app.Options{Logger: log})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		a.Close(ctx)
		return fmt.Errorf("demo: listening on %s: %w (another proxy running? try --listen 127.0.0.1:0)", cfg.Listen, err)
	}
	srv := a.Server()
	go srv.Serve(ln)
	base := "http://" + ln.Addr().String()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		a.Close(sctx)
	}()

	fmt.Fprintf(stdout, `condense-proxy demo: the proxy at %s, in front of a built-in scripted model (no provider, no key).

  Live page:  %s/ui
  Its key:    %s   (the page asks for it once; it shows every conversation and opens its originals)

Replaying a sample coding session (synthetic: %d requests) at a %d-token window (Claude models: %d),
so requests over %d tokens are condensed (mode auto):
`, base, base, key, len(turns), *window, max(*window, demoClaudeWindow), int(float64(*window)*config.ThresholdFor(cfg.Condense.Threshold, *window)))
	if ready != nil {
		ready <- [2]string{base, key}
	}

	var received, forwarded, condensed int
	client := &http.Client{}
	for i, body := range turns {
		line, before, after, applied, err := demoSend(ctx, client, base, body)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("demo: request %d: %w", i+1, err)
		}
		received += before
		forwarded += after
		if applied != "none" {
			condensed++
		}
		fmt.Fprintf(stdout, "  %3d/%d  %s\n", i+1, len(turns), line)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(*pause):
		}
	}
	saved := 0
	if received > 0 {
		saved = 100 - forwarded*100/received
	}
	fmt.Fprintf(stdout, `
Done: %d requests, %d condensed; %d tokens received, %d forwarded (%d%% fewer).
Still serving until Ctrl-C: open %s/ui, or point an agent at %s (any API key;
the scripted model lists the directory, reads a file and answers):

%s`, len(turns), condensed, received, forwarded, saved, base, base, agentCommands(base))
	<-ctx.Done()
	return nil
}

// demoSend posts one turn and returns its one-line summary.
func demoSend(ctx context.Context, client *http.Client, base string, body []byte) (line string, before, after int, applied string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", 0, 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-demo-agent")
	req.Header.Set("User-Agent", "condense-proxy-demo")
	resp, err := client.Do(req)
	if err != nil {
		return "", 0, 0, "", err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", 0, 0, "", fmt.Errorf("the proxy answered %s", resp.Status)
	}
	before, _ = strconv.Atoi(resp.Header.Get(proxy.HeaderTokensBefore))
	after, _ = strconv.Atoi(resp.Header.Get(proxy.HeaderTokensAfter))
	applied = resp.Header.Get(proxy.HeaderApplied)
	msgs := gjson.GetBytes(body, "messages.#").Int()
	switch applied {
	case "none", "":
		applied = "none"
		line = fmt.Sprintf("%3d messages  %6d tokens  forwarded unchanged", msgs, before)
	default:
		line = fmt.Sprintf("%3d messages  %6d tokens  condensed (%s) to %d", msgs, before, applied, after)
	}
	if d := resp.Header.Get(proxy.HeaderDegraded); d != "" {
		line += "  [" + d + "]"
	}
	return line, before, after, applied, nil
}

// demoTurns cuts the sample session's request into the requests an agent
// sent: one before each assistant message, and the whole.
func demoTurns(last []byte) ([][]byte, error) {
	var req struct {
		Model    string            `json:"model"`
		Messages []json.RawMessage `json:"messages"`
		Tools    json.RawMessage   `json:"tools,omitempty"`
	}
	if err := json.Unmarshal(last, &req); err != nil {
		return nil, err
	}
	var ends []int
	for i, m := range req.Messages {
		if i > 0 && gjson.GetBytes(m, "role").Str == "assistant" {
			ends = append(ends, i)
		}
	}
	ends = append(ends, len(req.Messages))
	var out [][]byte
	for _, n := range ends {
		b, err := json.Marshal(struct {
			Model    string            `json:"model"`
			Messages []json.RawMessage `json:"messages"`
			Tools    json.RawMessage   `json:"tools,omitempty"`
		}{req.Model, req.Messages[:n], req.Tools})
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	if len(out) < 2 {
		return nil, errors.New("fewer than two turns")
	}
	return out, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// agentCommands are the commands that point Claude Code, Codex and Gemini
// CLI at the demo at base, and any OpenAI-compatible client.
func agentCommands(base string) string {
	return fmt.Sprintf(`  Claude Code:  ANTHROPIC_BASE_URL=%[1]s ANTHROPIC_API_KEY=sk-demo claude
  Codex:        DEMO_KEY=sk-demo codex -m gpt-5.5 -c model_provider=demo \
                  -c 'model_providers.demo={name="condense-proxy demo", base_url="%[1]s/v1", env_key="DEMO_KEY", wire_api="responses"}'
  Gemini CLI:   GOOGLE_GEMINI_BASE_URL=%[1]s GEMINI_API_KEY=sk-demo gemini   (auth: "Use Gemini API key")
  Others:       base URL %[1]s/v1, any key, any model name
`, base)
}
