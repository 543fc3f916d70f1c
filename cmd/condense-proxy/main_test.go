package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestVersionAndUnknownCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if err := Main(context.Background(), []string{"version"}, &out, &errb, nil); err != nil || !strings.Contains(out.String(), "condense-proxy") {
		t.Fatalf("version: %v %q", err, out.String())
	}
	if err := Main(context.Background(), []string{"bogus"}, &out, &errb, nil); err == nil {
		t.Fatal("unknown command accepted")
	}
}

func TestHelpListsFlagsWithDefaults(t *testing.T) {
	var out, errb bytes.Buffer
	if err := Main(context.Background(), []string{"serve", "--help"}, &out, &errb, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--listen", `(default "127.0.0.1:8080")`, "--upstream", "--redis", "--config", "--threshold", "0: by each model's window"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

func TestInvalidConfigStopsStartup(t *testing.T) {
	var out, errb bytes.Buffer
	err := Main(context.Background(), []string{"--threshold", "3", "--upstream", "nope"}, &out, &errb, nil)
	if err == nil || !strings.Contains(err.Error(), "condense.threshold") || !strings.Contains(err.Error(), "upstream") {
		t.Fatalf("err = %v, want both problems listed", err)
	}
	// NaN and absurd numbers, from flags and the environment at once.
	err = Main(context.Background(), []string{"--threshold", "NaN", "--default-context-window", "9223372036854775807"}, &out, &errb,
		[]string{"CONDENSE_CACHE_MAX_BYTES=9223372036854775807", "CONDENSE_CONDENSE_TARGET=+Inf"})
	for _, key := range []string{"condense.threshold", "default_context_window", "cache_max_bytes", "condense.target"} {
		if err == nil || !strings.Contains(err.Error(), key+":") {
			t.Errorf("start-up error does not name %s: %v", key, err)
		}
	}
}

// TestGracefulShutdown starts serve, opens a slow stream, cancels the
// context (as SIGTERM does) and checks the stream still completes and
// serve returns nil.
func TestGracefulShutdown(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[]}\n\n")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer up.Close()

	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	logs := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, []string{"--listen", "127.0.0.1:0", "--upstream", up.URL, "--shutdown-grace", "10s"}, io.Discard, logs, nil, ready)
	}()
	addr := <-ready
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	// New connections are refused once shutdown began (polled: shutdown
	// starts asynchronously).
	refused := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		if _, err := c.Get("http://" + addr + "/healthz"); err != nil {
			refused = true
			break
		}
	}
	if !refused {
		t.Error("new requests still accepted during shutdown")
	}
	close(release)
	rest, err := io.ReadAll(br)
	resp.Body.Close()
	if err != nil || !strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("in-flight stream cut: %q %v", rest, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not return")
	}
	if !strings.Contains(logs.String(), "shutting down") || !strings.Contains(logs.String(), `"msg":"stopped"`) {
		t.Errorf("shutdown not logged:\n%s", logs.String())
	}
}

func TestOfflineCondense(t *testing.T) {
	sess, _ := corpus.Synthetic(21, 300_000)
	body, err := sess.Request("gpt-4o", 0)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "req.json")
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := Main(context.Background(), []string{"condense", "--context-window", "32000", "--mode", "full", file}, &out, &errb, nil); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	var rep struct {
		Applied      string   `json:"applied"`
		TokensBefore int      `json:"tokens_before"`
		TokensAfter  int      `json:"tokens_after"`
		Path         []string `json:"path"`
	}
	if err := json.Unmarshal(errb.Bytes(), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, errb.String())
	}
	// Over the threshold (80% of 32000), a request is condensed to
	// between the target and the threshold.
	if rep.Applied != "full" || rep.TokensAfter >= rep.TokensBefore || rep.TokensAfter > 25600 || len(rep.Path) == 0 || rep.Path[0] != condense.PathOverThreshold {
		t.Errorf("report %+v", rep)
	}
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(out.Bytes(), &req); err != nil {
		t.Fatal(err)
	}
	if err := fakeupstream.Validate(req.Messages); err != nil {
		t.Fatal(err)
	}
	// Under the threshold (80% of gpt-4o's window) the output is the
	// input, byte for byte.
	out.Reset()
	errb.Reset()
	if err := Main(context.Background(), []string{"condense", "--threshold", "0.8", file}, &out, &errb, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), body) {
		t.Error("under-threshold body changed")
	}
}

// TestServeAuthKeysFromEverySource starts serve with auth.keys from each
// config source — the flag, the YAML file, the environment — and checks
// the proxy refuses a request without a key and serves one with it.
func TestServeAuthKeysFromEverySource(t *testing.T) {
	yaml := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(yaml, []byte("auth:\n  keys: [yaml-key-1, yaml-key-2]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		environ []string
		key     string
	}{
		{"flag --auth-keys", []string{"--auth-keys", "flag-key"}, nil, "flag-key"},
		{"YAML auth.keys", []string{"--config", yaml}, nil, "yaml-key-2"},
		{"YAML file from CONDENSE_CONFIG", nil, []string{"CONDENSE_CONFIG=" + yaml}, "yaml-key-1"},
		{"env CONDENSE_AUTH_KEYS", nil, []string{"CONDENSE_AUTH_KEYS=env-key-1, env-key-2"}, "env-key-2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base, fake, _ := startServeEnv(t, tc.environ, tc.args...)
			if code := postChat(t, base, ""); code != http.StatusUnauthorized {
				t.Errorf("without a key: %d, want 401", code)
			}
			if code := postChat(t, base, "not-"+tc.key); code != http.StatusUnauthorized {
				t.Errorf("with another key: %d, want 401", code)
			}
			if n := len(forwarded(fake.Received())); n != 0 {
				t.Errorf("the upstream got %d refused requests", n)
			}
			if code := postChat(t, base, tc.key); code != http.StatusOK {
				t.Errorf("with the key: %d, want 200", code)
			}
			if n := len(forwarded(fake.Received())); n != 1 {
				t.Errorf("the upstream got %d requests, want 1", n)
			}
		})
	}
}

func TestOfflineCondenseResponses(t *testing.T) {
	var items []string
	items = append(items, `{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"Fix the test."}]}`)
	for i := 0; i < 60; i++ {
		out, _ := json.Marshal(strings.Repeat(fmt.Sprintf("\tv := compute(%d) // pkg/file%d.go\n", i, i), 150))
		items = append(items,
			fmt.Sprintf(`{"type":"reasoning","id":"rs_%d","summary":[],"encrypted_content":"QUJD%d"}`, i, i),
			fmt.Sprintf(`{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"cat pkg/file%d.go\"}","call_id":"c%d"}`, i, i),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"c%d","output":%s}`, i, out))
	}
	body := []byte(`{"model":"gpt-5-codex","input":[` + strings.Join(items, ",") + `],"store":false,"include":["reasoning.encrypted_content"]}`)
	file := filepath.Join(t.TempDir(), "req.json")
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := Main(context.Background(), []string{"condense", "--context-window", "32000", "--mode", "full", file}, &out, &errb, nil); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	var rep struct {
		Format, Applied string
	}
	json.Unmarshal(errb.Bytes(), &rep)
	if rep.Format != "responses" || rep.Applied != "full" {
		t.Fatalf("report %s", errb.String())
	}
	var req struct {
		Input []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(out.Bytes(), &req); err != nil || len(req.Input) >= len(items) {
		t.Fatalf("%v: %d items of %d", err, len(req.Input), len(items))
	}
	if err := Main(context.Background(), []string{"condense", "--format", "xml", file}, &out, &errb, nil); err == nil {
		t.Fatal("--format xml accepted")
	}
}

// TestOfflineDetectsFormat: with --format auto the codecs say whose
// request a body is — Responses (an input and no messages, a single turn
// too), Messages (a top-level system, or its blocks), chat otherwise.
func TestOfflineDetectsFormat(t *testing.T) {
	for _, tc := range []struct {
		name, body, format string
	}{
		{"responses", `{"model":"gpt-5","input":[{"role":"user","content":"hi"}]}`, "responses"},
		// Nothing to count, so no format reported; taken for another
		// format's, it would be refused.
		{"responses, one turn", `{"model":"gpt-5","input":"hi"}`, ""},
		{"messages with a system", `{"model":"claude-sonnet-4-5","max_tokens":10,"system":"s","messages":[{"role":"user","content":"hi"}]}`, "messages"},
		{"messages by its blocks", `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Read","input":{}}]},` +
			`{"role":"user","content":[{"type": "tool_result","tool_use_id":"t","content":"x"}]}]}`, "messages"},
		{"chat", `{"model":"gpt-4o","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`, "chat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "req.json")
			if err := os.WriteFile(file, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			if err := Main(context.Background(), []string{"condense", file}, &out, &errb, nil); err != nil {
				t.Fatalf("%v\n%s", err, errb.String())
			}
			var rep struct{ Format string }
			json.Unmarshal(errb.Bytes(), &rep)
			if out.String() != tc.body || rep.Format != tc.format {
				t.Fatalf("format %q, want %q; forwarded %s", rep.Format, tc.format, out.String())
			}
		})
	}
}
