package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// closedPort returns a redis:// URL nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "redis://" + addr + "/0"
}

// TestTuningKeysReachTheStack: the keys an operator tunes reach the
// parts that use them.
func TestTuningKeysReachTheStack(t *testing.T) {
	cfg := config.Defaults()
	cfg.ScopeSecret = "a test's scope secret"
	cfg.RedisURL = closedPort(t)
	cfg.RedisTimeout = 123 * time.Millisecond
	cfg.RedisFailThreshold = 7
	cfg.RedisProbeInterval = 4 * time.Second
	cfg.InflightWait = 9 * time.Second
	cfg.Condense.SummarizerConcurrency = 3
	a := newApp(t, &cfg, nil, app.Options{})
	o := a.Cache.(*cache.Layered).Redis.Options()
	if o.Timeout != cfg.RedisTimeout || o.FailThreshold != cfg.RedisFailThreshold || o.ProbeInterval != cfg.RedisProbeInterval {
		t.Errorf("redis options %+v", o)
	}
	if a.ProxyOptions.InflightWait != cfg.InflightWait {
		t.Errorf("inflight wait %s", a.ProxyOptions.InflightWait)
	}
	if a.EngineOptions.SummarizerConcurrency != 3 {
		t.Errorf("summarizer concurrency %d", a.EngineOptions.SummarizerConcurrency)
	}
}

// TestRedisFailThreshold: redis_fail_threshold decides how many failed
// commands take Redis for down (the start-up ping is the first).
func TestRedisFailThreshold(t *testing.T) {
	tests := []struct {
		name      string
		threshold int
		gets      int
		down      bool
	}{
		{"one failure is enough at 1", 1, 0, true},
		{"two failures are not enough at 5", 5, 1, false},
		{"five failures at 5", 5, 4, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Defaults()
			cfg.ScopeSecret = "a test's scope secret"
			cfg.RedisURL = closedPort(t)
			cfg.RedisFailThreshold = tc.threshold
			cfg.RedisProbeInterval = time.Hour // no probe in between
			a := newApp(t, &cfg, nil, app.Options{})
			for i := range tc.gets {
				a.Cache.Get(context.Background(), fmt.Sprint("k", i))
			}
			if got := a.Cache.Stats().Degraded; got != tc.down {
				t.Errorf("degraded %v, want %v", got, tc.down)
			}
		})
	}
}

// thinkingSession is a Messages request of model with thinking on: the
// task, then turns of a thinking block, a tool_use and its large result.
func thinkingSession(model string, turns int) []byte {
	msgs := []any{map[string]any{"role": "user", "content": "Fix the failing tests in package store."}}
	for i := range turns {
		id := fmt.Sprintf("toolu_%03d", i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "thinking", "thinking": fmt.Sprintf("Step %d: read file%d.go.", i, i), "signature": fmt.Sprintf("sig%d", i)},
				map[string]any{"type": "tool_use", "id": id, "name": "Read", "input": map[string]any{"file_path": fmt.Sprintf("/src/file%d.go", i)}},
			}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": id, "content": strings.Repeat(fmt.Sprintf("\tv%d := compute(x) // a line of file %d\n", i, i), 120)},
			}})
	}
	b, _ := json.Marshal(map[string]any{"model": model, "max_tokens": 4096, "thinking": map[string]any{"type": "enabled", "budget_tokens": 2048}, "messages": msgs})
	return b
}

// TestThinkingBindingFromTheRegistry: a condensed Messages request asks
// the API to drop stale thinking blocks exactly for the models the
// registry says bind them: Claude Fable built in, any model whose entry
// says thinking_binding: true, none whose entry says false.
func TestThinkingBindingFromTheRegistry(t *testing.T) {
	yes, no := true, false
	var mu sync.Mutex
	var got []byte
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = b
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
	})
	cfg := config.Defaults()
	cfg.ScopeSecret = "a test's scope secret"
	cfg.Condense.Summarizer = "extractive"
	cfg.Models = []config.ModelConfig{
		{Match: "claude-fable-5-2*", ContextWindow: 16000, ThinkingBinding: &no},
		{Match: "my-binder*", ContextWindow: 16000, ThinkingBinding: &yes},
		{Match: "*", ContextWindow: 16000},
	}
	a := newApp(t, &cfg, up, app.Options{})
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		model string
		binds bool
	}{
		{"claude-fable-5-1", true},
		{"anthropic/claude-fable-5-1", true},
		{"my-binder-1", true},
		{"claude-fable-5-2", false},
		{"claude-opus-4-7", false},
	} {
		t.Run(tc.model, func(t *testing.T) {
			resp := postDrained(t, srv.URL+"/v1/messages", bytes.NewReader(thinkingSession(tc.model, 40)), "x-api-key", "sk-caller", proxy.HeaderMode, "full")
			if resp.StatusCode != 200 || resp.Header.Get(proxy.HeaderApplied) != "full" {
				t.Fatalf("status %d, applied %q, degraded %q", resp.StatusCode, resp.Header.Get(proxy.HeaderApplied), resp.Header.Get(proxy.HeaderDegraded))
			}
			mu.Lock()
			body := got
			mu.Unlock()
			drop := gjson.GetBytes(body, "thinking.block_binding.prefix_mismatch_behavior").Str == "drop_block"
			if drop != tc.binds {
				t.Errorf("drop_block %v, want %v (thinking %s)", drop, tc.binds, gjson.GetBytes(body, "thinking").Raw)
			}
		})
	}
}
