package app_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// TestUpstreamErrorsEchoingTheKeyAreRedacted: the summarizer's upstream
// answers an error object that echoes the caller's key (as providers do
// for a wrong key). Neither the log nor X-Condense-Degraded repeats it.
func TestUpstreamErrorsEchoingTheKeyAreRedacted(t *testing.T) {
	const key = "sk-proj-Secret0123456789abcdef"
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		// An error object with a 200, as some gateways answer.
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key: `+r.Header.Get("X-Api-Key")+`"}}`)
	})
	cfg := config.Defaults()
	cfg.Condense.Summarizer = "llm"
	cfg.Condense.Mode = "full"
	cfg.Models = []config.ModelConfig{{Match: "*", ContextWindow: 16000}}
	logs := &lockedBuffer{}
	a := newApp(t, &cfg, echo, app.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)

	sess, _ := corpus.Synthetic(5, 200_000)
	ms, err := corpus.ClaudeMessages(corpus.ClaudeLog(sess))
	if err != nil {
		t.Fatal(err)
	}
	body, err := ms.Request(ms.Turns() - 1)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", srv.URL+"/v1/messages", bytes.NewReader(body))
	req.Header.Set("X-Api-Key", key)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	degraded := resp.Header.Get(proxy.HeaderDegraded)
	if !strings.Contains(degraded, "summarizer failed") {
		t.Fatalf("premise: the summarizer did not fail (degraded %q)", degraded)
	}
	if strings.Contains(degraded, key) || strings.Contains(degraded, "Secret0123456789") {
		t.Errorf("X-Condense-Degraded echoes the key: %q", degraded)
	}
	if strings.Contains(logs.String(), "Secret0123456789") {
		t.Errorf("the log echoes the key:\n%s", logs.String())
	}
}
