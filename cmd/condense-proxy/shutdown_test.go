package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
)

// TestShutdownCancelsBackgroundSummaries: serve, stopped (as SIGTERM
// does) while a summary prepared in the background hangs on the
// upstream, drains it for shutdown_grace, then cancels it: the upstream
// sees the summarizer call end, serve returns, and the log says the
// background work was cut short.
func TestShutdownCancelsBackgroundSummaries(t *testing.T) {
	entered := make(chan struct{}, 1)
	cancelled := make(chan struct{}, 1)
	fake := fakeupstream.New()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !fakeupstream.IsSummaryRequest(body) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			fake.ServeHTTP(w, r)
			return
		}
		// The summarizer never answers: only its caller ends the call.
		select {
		case entered <- struct{}{}:
		default:
		}
		<-r.Context().Done()
		select {
		case cancelled <- struct{}{}:
		default:
		}
	}))
	defer up.Close()
	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	err := os.WriteFile(cfgFile, []byte(`scope_secret: "a test's scope secret"
condense:
  summarizer: llm
  threshold: 0.8
  prepare_threshold: 0.3
models:
  - match: "*"
    context_window: 64000
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	logs := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, []string{"--listen", "127.0.0.1:0", "--upstream", up.URL, "--config", cfgFile,
			"--shutdown-grace", "200ms"}, io.Discard, logs, nil, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("serve: %v\n%s", err, logs.String())
	}
	sess, _ := corpus.Synthetic(4, 150_000) // over the prepare threshold, under the threshold
	body, _ := sess.Request("gpt-4o", 0)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("X-Condense-Mode", "full")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if a := resp.Header.Get("X-Condense-Applied"); a != "none" {
		t.Fatalf("setup: applied %q", a)
	}
	select {
	case <-entered: // the background preparation is calling the summarizer
	case <-time.After(time.Minute):
		t.Fatalf("no background summarizer call\n%s", logs.String())
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("serve did not return: the background summary held the shutdown")
	}
	select {
	case <-cancelled:
	case <-time.After(time.Minute):
		t.Fatal("the background summarizer call was not cancelled")
	}
	if l := logs.String(); !strings.Contains(l, "background work cut short") || !strings.Contains(l, `"msg":"stopped"`) {
		t.Errorf("shutdown of the background work not logged:\n%s", l)
	}
}
