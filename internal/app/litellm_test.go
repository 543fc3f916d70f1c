package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// forwarded is what the upstream received but the stack's own read of
// /model/info at start (litellm.model_info).
func forwarded(rs []fakeupstream.Received) []fakeupstream.Received {
	var out []fakeupstream.Received
	for _, r := range rs {
		if r.Path != "/model/info" {
			out = append(out, r)
		}
	}
	return out
}

// fakeLiteLLM answers /model/info with its table (or its status) and
// chat completions with a short answer, keeping what it was sent.
type fakeLiteLLM struct {
	mu     sync.Mutex
	status int
	table  string
	asked  int
	auth   []string
	chats  [][]byte
}

func (f *fakeLiteLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path == "/model/info" {
		f.asked++
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		if f.status != 0 {
			w.WriteHeader(f.status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, f.table)
		return
	}
	f.chats = append(f.chats, body)
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"c","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
}

func (f *fakeLiteLLM) set(table string) {
	f.mu.Lock()
	f.table = table
	f.mu.Unlock()
}

func (f *fakeLiteLLM) counts() (asked int, auth []string, chats [][]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked, append([]string(nil), f.auth...), append([][]byte(nil), f.chats...)
}

// table is /model/info as LiteLLM answers it: "gpt-4" routed to gpt-4o,
// and an alias the config names itself.
func table(gpt4Window int) string {
	b, _ := json.Marshal(map[string]any{"data": []any{
		map[string]any{"model_name": "gpt-4", "litellm_params": map[string]any{"model": "openai/gpt-4o"},
			"model_info": map[string]any{"key": "gpt-4o", "max_input_tokens": gpt4Window, "max_output_tokens": 16384,
				"input_cost_per_token": 2.5e-6, "output_cost_per_token": 7.5e-6, "cache_read_input_token_cost": 1.25e-6,
				"cache_creation_input_token_cost": nil}},
		map[string]any{"model_name": "team-model", "litellm_params": map[string]any{"model": "anthropic/claude-sonnet-4-5"},
			"model_info": map[string]any{"max_input_tokens": 200000, "input_cost_per_token": 3e-6}},
	}})
	return string(b)
}

// TestLiteLLMWindowsAndPrices: behind LiteLLM, the stack serve builds
// takes an alias's window and prices from /model/info (the built-in
// registry would give "gpt-4" 8k), except where a models: entry names
// the alias; a tick reads the table again.
func TestLiteLLMWindowsAndPrices(t *testing.T) {
	up := &fakeLiteLLM{table: table(128000)}
	cfg := config.Defaults()
	cfg.ScopeSecret = "a test's scope secret"
	cfg.Condense.Summarizer = "extractive"
	cfg.LiteLLM.Key = "sk-litellm-master"
	cfg.Models = []config.ModelConfig{{Match: "team-model", ContextWindow: 50000}}
	builtin := config.NewRegistry(&cfg, nil).Lookup("gpt-4")
	logs := &lockedBuffer{}
	ticks := make(chan time.Time)
	a := newApp(t, &cfg, up, app.Options{ModelInfoTicks: ticks, Logger: slog.New(slog.NewJSONHandler(logs, nil))})

	l := a.ModelLimits("gpt-4")
	if builtin.ContextWindow != 8192 || l.Window != 128000 || l.MaxOutput != 16384 || l.CacheRead != 0.5 || l.CacheWrite != 1 ||
		l.OutputPrice != 3 || l.Encoding != "o200k_base" || l.Family != "gpt-4o*" {
		t.Fatalf("gpt-4's limits: %+v (built in: %d)", l, builtin.ContextWindow)
	}
	if mi := a.Registry.Lookup("gpt-4"); mi.InputPricePerMTok != 2.5 || mi.Source != config.SourceGateway {
		t.Errorf("gpt-4's price: $%g from %s", mi.InputPricePerMTok, mi.Source)
	}
	if l := a.ModelLimits("team-model"); l.Window != 50000 {
		t.Errorf("team-model: the config's entry must win over the gateway: window %d", l.Window)
	}
	if asked, auth, _ := up.counts(); asked != 1 || auth[0] != "Bearer sk-litellm-master" {
		t.Errorf("asked %d times, auth %q", asked, auth)
	}
	if strings.Contains(logs.String(), "sk-litellm-master") {
		t.Error("the key is in the log")
	}

	// A request of some 20k tokens for "gpt-4": over the built-in 8k
	// window, well under the gateway's: forwarded as received.
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	sess, _ := corpus.Synthetic(3, 80_000)
	body, err := sess.Request("gpt-4", 0)
	if err != nil {
		t.Fatal(err)
	}
	resp := postDrained(t, srv.URL+"/v1/chat/completions", bytes.NewReader(body), "Authorization", "Bearer sk-caller")
	_, _, chats := up.counts()
	if len(chats) != 1 || !bytes.Equal(chats[0], body) {
		t.Fatalf("the request was not forwarded as received (%d forwarded)", len(chats))
	}
	if n, _ := strconv.Atoi(resp.Header.Get(proxy.HeaderTokensBefore)); n <= builtin.ContextWindow {
		t.Errorf("the request has %d tokens: not over the built-in window %d", n, builtin.ContextWindow)
	}

	// The gateway changes gpt-4's window; a tick reads it again. (The
	// second tick is taken only once the first one's read is done.)
	up.set(table(64000))
	ticks <- time.Time{}
	ticks <- time.Time{}
	if l := a.ModelLimits("gpt-4"); l.Window != 64000 {
		t.Errorf("after a refresh: window %d, want 64000", l.Window)
	}
	if asked, _, _ := up.counts(); asked < 2 {
		t.Errorf("asked %d times, want the start's and the ticks'", asked)
	}

	// Shutdown stops the ticks.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a.Close(ctx)
	select {
	case ticks <- time.Time{}:
		t.Error("a tick was taken after Close")
	default:
	}
}

// TestLiteLLMNotAskedAgain: an upstream that is not LiteLLM (404) or
// refuses the key (401) is asked once, said once in the log, and never
// again; the built-in registry applies.
func TestLiteLLMNotAskedAgain(t *testing.T) {
	for _, tc := range []struct {
		status int
		says   string
	}{{http.StatusNotFound, "does not answer LiteLLM's /model/info"}, {http.StatusUnauthorized, "set litellm.key"}} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			up := &fakeLiteLLM{status: tc.status}
			cfg := config.Defaults()
			cfg.ScopeSecret = "a test's scope secret"
			logs := &lockedBuffer{}
			ticks := make(chan time.Time)
			a := newApp(t, &cfg, up, app.Options{ModelInfoTicks: ticks, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
			select {
			case ticks <- time.Time{}:
				t.Error("ticks are still taken after the asking stopped")
			default:
			}
			if err := a.Gateway.Refresh(context.Background()); err == nil {
				t.Error("Refresh after the stop: no error")
			}
			if asked, auth, _ := up.counts(); asked != 1 || auth[0] != "" {
				t.Errorf("asked %d times (auth %q), want once without a key", asked, auth)
			}
			if n := strings.Count(logs.String(), tc.says); n != 1 {
				t.Errorf("said %d times, want once:\n%s", n, logs.String())
			}
			if l := a.ModelLimits("gpt-4"); l.Window != 8192 {
				t.Errorf("gpt-4: window %d, want the built-in 8192", l.Window)
			}
		})
	}
}

// TestLiteLLMNotAsked: with litellm.model_info off, or a models: entry
// matching every name, /model/info is never asked.
func TestLiteLLMNotAsked(t *testing.T) {
	for name, configure := range map[string]func(*config.Config){
		"model_info off": func(c *config.Config) { c.LiteLLM.ModelInfo = false },
		"models: *":      func(c *config.Config) { c.Models = []config.ModelConfig{{Match: "*", ContextWindow: 32000}} },
	} {
		t.Run(name, func(t *testing.T) {
			up := &fakeLiteLLM{table: table(128000)}
			cfg := config.Defaults()
			cfg.ScopeSecret = "a test's scope secret"
			configure(&cfg)
			a := newApp(t, &cfg, up, app.Options{})
			if asked, _, _ := up.counts(); asked != 0 || a.Gateway != nil {
				t.Errorf("asked %d times", asked)
			}
		})
	}
}
