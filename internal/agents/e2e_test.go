package agents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/agents"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// Sizes of the scripted sessions: steps × file size must overflow the
// window several times over, so the proxy has to condense.
const (
	steps    = 20
	fileSize = 30_000 // bytes, about 11k tokens of Go-like code (o200k)
	// agentTimeout bounds one agent run; the tests must end well under two
	// minutes.
	agentTimeout = 90 * time.Second
)

// e2e is one agent run through the proxy, with its recorders.
type e2e struct {
	t      *testing.T
	format string // "messages", "responses", "chat/completions" or "gemini"
	window int
	stack  *harness.Stack
	front  *agents.Front
	script *fakeupstream.Script
	files  []agents.File
	dir    string
	// received returns what the format's fake received.
	received func() []fakeupstream.Received
	count    func(body []byte) int
}

// e2eOption changes a run's set-up.
type e2eOption func(*e2eConfig)

type e2eConfig struct {
	steps     int
	fileSize  int
	tamper    func(path string, body []byte) []byte
	configure func(*config.Config)
	answer    func(script func([]byte) fakeupstream.Reply) func([]byte) fakeupstream.Reply
	step      func(agents.File) fakeupstream.Step
}

// withStep sets the tool call each scripted step asks for (default:
// stepFor the format).
func withStep(f func(agents.File) fakeupstream.Step) e2eOption {
	return func(c *e2eConfig) { c.step = f }
}

// withConfig changes the proxy's config (memory.recall_tool…).
func withConfig(f func(*config.Config)) e2eOption { return func(c *e2eConfig) { c.configure = f } }

// withAnswer wraps the script's answers (a model that does more than the
// script: calls condense_recall…).
func withAnswer(f func(script func([]byte) fakeupstream.Reply) func([]byte) fakeupstream.Reply) e2eOption {
	return func(c *e2eConfig) { c.answer = f }
}

// stepFor makes the scripted step that reads a file: Claude Code's Read,
// Codex's exec_command cat, qwen-code's or Gemini CLI's read_file.
func stepFor(format string, f agents.File) fakeupstream.Step {
	switch format {
	case "responses":
		return fakeupstream.Step{Name: "exec_command", Input: inputJSON(map[string]any{"cmd": "cat " + f.Path})}
	case "chat/completions", "gemini":
		return fakeupstream.Step{Name: "read_file", Input: inputJSON(map[string]any{"file_path": f.Path})}
	}
	return fakeupstream.Step{Name: "Read", Input: inputJSON(map[string]any{"file_path": f.Path})}
}

// withSteps sets the number of scripted steps (files read).
func withSteps(n int) e2eOption { return func(c *e2eConfig) { c.steps = n } }

// withFileSize sets the size of the files read, in bytes.
func withFileSize(n int) e2eOption { return func(c *e2eConfig) { c.fileSize = n } }

// withTamper edits what the agent sends before the proxy sees it (a
// stand-in for a broken proxy).
func withTamper(f func(path string, body []byte) []byte) e2eOption {
	return func(c *e2eConfig) { c.tamper = f }
}

func newE2E(t *testing.T, format string, window int, opts ...e2eOption) *e2e {
	cfg := e2eConfig{steps: steps, fileSize: fileSize}
	for _, o := range opts {
		o(&cfg)
	}
	dir, err := os.MkdirTemp("", "condense-agents-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, d := range []string{"work", "home"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files, err := agents.WriteFiles(filepath.Join(dir, "work"), cfg.steps, cfg.fileSize)
	if err != nil {
		t.Fatal(err)
	}
	e := &e2e{t: t, format: format, window: window, front: &agents.Front{}, files: files, dir: dir,
		script: &fakeupstream.Script{ID: "read", Final: fmt.Sprintf("ALL %d FILES READ (scripted final answer).", cfg.steps)}}
	// The script is complete before any server starts: the agent's requests
	// reach it from another process, with no synchronization the race
	// detector could see.
	for _, f := range files {
		if cfg.step != nil {
			e.script.Steps = append(e.script.Steps, cfg.step(f))
			continue
		}
		e.script.Steps = append(e.script.Steps, stepFor(format, f))
	}
	front := e.front.Wrap
	if cfg.tamper != nil {
		front = func(next http.Handler) http.Handler {
			return e.front.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				b = cfg.tamper(r.URL.Path, b)
				r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
				r.Header.Del("Content-Length")
				next.ServeHTTP(w, r)
			}))
		}
	}
	e.stack = harness.New(harness.Options{Window: window, Front: front, Configure: cfg.configure})
	wrap := func(f func([]byte) fakeupstream.Reply) func([]byte) fakeupstream.Reply {
		if cfg.answer == nil {
			return f
		}
		return cfg.answer(f)
	}
	t.Cleanup(e.stack.Close)
	counter := tokenizer.New(tokenizer.Options{})
	switch format {
	case "messages":
		m := &fakeupstream.Messages{Answer: wrap(e.script.Messages), Counter: counter}
		e.stack.SetUpstream(fakeupstream.Mux(e.stack.Fake, m, nil))
		e.received = m.Received
		e.count = func(b []byte) int { return fakeupstream.CountMessages(counter, fakeupstream.DefaultSigner, b) }
	case "responses":
		r := &fakeupstream.Responses{Answer: wrap(e.script.Responses), Counter: counter}
		e.stack.SetUpstream(fakeupstream.Mux(e.stack.Fake, nil, r))
		e.received = r.Received
		e.count = func(b []byte) int { return fakeupstream.CountResponses(counter, fakeupstream.DefaultSigner, b) }
	case "chat/completions":
		// The script reads a chat request as the Responses input it
		// restates (call_ ids); the proxy's summarizer calls, on the same
		// path, go to the stack's own fake.
		c := &chatFake{Answer: wrap(func(b []byte) fakeupstream.Reply { return e.script.Responses(chatAsResponses(b)) }), Counter: counter}
		e.stack.SetUpstream(c.handler(e.stack.Fake))
		e.received = c.Received
		e.count = func(b []byte) int { return countChat(counter, b) }
	case "gemini":
		// The proxy's summarizer calls go to the stack's own fake (chat
		// completions); every Gemini model method to the strict fake.
		g := &fakeupstream.Gemini{Answer: wrap(e.script.Gemini), Counter: counter}
		e.stack.SetUpstream(fakeupstream.WithGemini(e.stack.Fake, g))
		e.received = g.Received
		e.count = func(b []byte) int { return fakeupstream.CountGemini(counter, b) }
	}
	return e
}

// isTurn reports whether path is where the agent sends its model turns:
// /v1/<format>, or for Gemini a model's generateContent or
// streamGenerateContent.
func (e *e2e) isTurn(path string) bool {
	if e.format == "gemini" {
		_, method, ok := fakeupstream.IsGeminiPath(path)
		return ok && (method == "generateContent" || method == "streamGenerateContent")
	}
	return path == "/v1/"+e.format
}

func (e *e2e) home() string    { return filepath.Join(e.dir, "home") }
func (e *e2e) workdir() string { return filepath.Join(e.dir, "work") }

func (e *e2e) run(cmdFor func() agents.Result) agents.Result {
	res := cmdFor()
	e.t.Logf("agent ran %v, err %v", res.Duration.Round(time.Millisecond), res.Err)
	e.dump(res)
	return res
}

// dump writes every request the agent sent and the upstream received into
// $CONDENSE_AGENTS_DUMP/<test>/ when that variable is set (to study what
// real agents send).
func (e *e2e) dump(res agents.Result) {
	root := os.Getenv("CONDENSE_AGENTS_DUMP")
	if root == "" {
		return
	}
	dir := filepath.Join(root, e.t.Name())
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "stdout.txt"), []byte(res.Stdout), 0o644)
	os.WriteFile(filepath.Join(dir, "stderr.txt"), []byte(res.Stderr), 0o644)
	for i, x := range e.front.Exchanges() {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s?%s\n", x.Method, x.Path, x.Query)
		x.Header.Write(&b)
		fmt.Fprintf(&b, "\n-- proxy answered %d\n", x.Status)
		x.Response.Write(&b)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("agent-%03d.txt", i)), []byte(b.String()), 0o644)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("agent-%03d.json", i)), x.Body, 0o644)
	}
	for i, r := range e.received() {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("upstream-%03d.json", i)), r.Body, 0o644)
	}
}

// check asserts what every agent test asserts; the "was condensed" check
// comes last, so that the others are reported first.
func (e *e2e) check(res agents.Result) {
	t := e.t
	t.Helper()
	if res.Err != nil {
		t.Errorf("agent did not exit 0: %v\nstdout:\n%s\nstderr:\n%s", res.Err, tail(res.Stdout), tail(res.Stderr))
	}
	if !strings.Contains(res.Stdout, e.script.Final) {
		t.Errorf("agent did not print the final text %q; stdout:\n%s", e.script.Final, tail(res.Stdout))
	}
	if !e.script.Finished() {
		t.Errorf("the script never reached its final answer; steps answered: %v", e.script.Answers())
	}
	if res.Duration > 100*time.Second {
		t.Errorf("agent took %v", res.Duration)
	}
	got := e.received()
	var agentReqs []fakeupstream.Received
	for _, r := range got {
		if r.Status < 200 || r.Status > 299 {
			t.Errorf("upstream rejected %s %s with %d: %s", r.Method, r.Path, r.Status, r.Error)
			continue
		}
		if r.Method == http.MethodPost && e.isTurn(r.Path) && !fakeupstream.IsSummaryRequest(r.Body) {
			agentReqs = append(agentReqs, r)
		}
	}
	// The agent's own requests, as it sent them and as the proxy answered.
	var sent []agents.Exchange
	others := map[string]int{}
	for _, x := range e.front.Exchanges() {
		if x.Status < 200 || x.Status > 299 {
			t.Errorf("the proxy answered the agent's %s %s with %d", x.Method, x.Path, x.Status)
		}
		if x.Method == http.MethodPost && e.isTurn(x.Path) {
			sent = append(sent, x)
		} else {
			others[x.Method+" "+x.Path]++
		}
	}
	t.Logf("other requests of the agent: %v", others)
	if want := len(e.script.Steps) + 1; len(agentReqs) < want {
		t.Errorf("upstream received %d agent requests, want at least %d", len(agentReqs), want)
	}
	over, maxFwd, maxSent, condensed, smaller := 0, 0, 0, 0, 0
	for i, r := range agentReqs {
		maxFwd = max(maxFwd, r.Tokens)
		if r.Tokens > e.window {
			over++
		}
		if i < len(sent) {
			s := e.count(sent[i].Body)
			maxSent = max(maxSent, s)
			if r.Tokens < s {
				smaller++
			}
			applied := sent[i].Response.Get("X-Condense-Applied")
			if applied != "" && applied != "none" {
				condensed++
			}
			if after, err := strconv.Atoi(sent[i].Response.Get("X-Condense-Tokens-After")); err == nil && after > e.window {
				t.Errorf("request %d: X-Condense-Tokens-After %d > window %d", i, after, e.window)
			}
			t.Logf("request %2d: agent sent %6d tokens, upstream got %6d, applied %q", i, s, r.Tokens, applied)
		}
	}
	if over > 0 {
		t.Errorf("%d of %d forwarded requests exceed the %d-token window (largest %d; the agent sent up to %d)",
			over, len(agentReqs), e.window, maxFwd, maxSent)
	}
	if condensed == 0 && smaller == 0 {
		t.Errorf("no request was condensed (X-Condense-Applied none or absent on all %d, none smaller upstream than sent): "+
			"the proxy passed the agent's turns (%s) through unchanged", len(sent), e.format)
	}
}

func tail(s string) string {
	const n = 4000
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func inputJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func agentContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), agentTimeout)
	t.Cleanup(cancel)
	return ctx
}
