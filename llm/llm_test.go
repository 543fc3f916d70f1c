package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
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
		c := &Client{BaseURL: u}
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
		_, err := (&Client{BaseURL: u}).Complete(context.Background(), Call{Model: "m"})
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
	if _, err := (&Client{BaseURL: u}).Complete(ctx, Call{Model: "m"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}
