package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
)

func TestComplete(t *testing.T) {
	var gotPath, gotAuth string
	var gotBody map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAuth = r.URL.Path, r.Header.Get("Authorization")
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &gotBody)
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"  the summary  "}}]}`)
	}))
	defer srv.Close()
	for _, base := range []string{srv.URL, srv.URL + "/v1", srv.URL + "/v1/"} {
		u, _ := url.Parse(base)
		c := client(u, "chat")
		out, err := c.Complete(context.Background(), Call{Model: "m", System: "s", User: "u", MaxTokens: 100, Credentials: http.Header{"Authorization": {"Bearer k"}}})
		if err != nil || out != "the summary" {
			t.Fatalf("%s: %q %v", base, out, err)
		}
		if gotPath != "/v1/chat/completions" || gotAuth != "Bearer k" {
			t.Errorf("%s: path %q auth %q", base, gotPath, gotAuth)
		}
		if gotBody["temperature"] != 0.0 || gotBody["max_tokens"] != 100.0 || gotBody["stream"] != false {
			t.Errorf("body %v", gotBody)
		}
	}
}

func TestCompleteFailures(t *testing.T) {
	tests := map[string]http.HandlerFunc{
		"status":  func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) },
		"garbage": func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>") },
		"empty":   func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"choices":[]}`) },
		"blank": func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"choices":[{"message":{"content":" "}}]}`)
		},
	}
	for name, h := range tests {
		srv := httptest.NewServer(h)
		u, _ := url.Parse(srv.URL)
		_, err := (client(u, "chat")).Complete(context.Background(), Call{Model: "m"})
		srv.Close()
		if err == nil {
			t.Errorf("%s: no error", name)
		}
		if (name == "empty" || name == "blank") && !errors.Is(err, ErrEmpty) {
			t.Errorf("%s: err %v, want ErrEmpty", name, err)
		}
	}
}

func TestCompleteHonoursContext(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-block:
		}
	}))
	defer srv.Close()
	defer close(block)
	u, _ := url.Parse(srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (client(u, "chat")).Complete(ctx, Call{Model: "m"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

// TestReasoningModels: against an upstream that refuses what OpenAI
// refuses of reasoning models (max_tokens, a temperature other than 1),
// the summarizer asks each model the way the registry says it takes.
func TestReasoningModels(t *testing.T) {
	fake := fakeupstream.New()
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		json.Unmarshal(b, &m)
		mu.Lock()
		bodies = append(bodies, m)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		fake.ServeHTTP(w, r)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	registry := func(model string) bool { return strings.HasPrefix(model, "o") || strings.HasPrefix(model, "gpt-5") }
	in := condense.SummaryInput{Prompt: "You summarize.", Text: "user: hi", Level: 1, MaxTokens: 500}
	for _, tc := range []struct {
		model     string
		reasoning func(string) bool
		ok        bool
	}{
		{"gpt-4o", registry, true},
		{"o3-mini", registry, true},
		{"gpt-5", registry, true},
		{"openai/o4-mini", func(m string) bool { return registry(strings.TrimPrefix(m, "openai/")) }, true},
		{"o3-mini", nil, false}, // max_tokens and temperature 0: refused
		{"gpt-5", func(string) bool { return false }, false},
	} {
		in.Model = tc.model
		s := &Summarizer{Client: client(u, "chat"), Reasoning: tc.reasoning}
		_, err := s.Summarize(context.Background(), in)
		if (err == nil) != tc.ok {
			t.Errorf("%s (registry %v): err %v, want success %v", tc.model, tc.reasoning != nil, err, tc.ok)
		}
		mu.Lock()
		b := bodies[len(bodies)-1]
		mu.Unlock()
		if !tc.ok {
			continue
		}
		_, hasMax := b["max_tokens"]
		_, hasTemp := b["temperature"]
		if tc.model == "gpt-4o" {
			if b["max_tokens"] != 500.0 || b["temperature"] != 0.0 || b["max_completion_tokens"] != nil {
				t.Errorf("%s: body %v", tc.model, b)
			}
		} else if hasMax || hasTemp || b["max_completion_tokens"] != float64(500+ReasoningHeadroom) {
			t.Errorf("%s: body %v", tc.model, b)
		}
	}
}
