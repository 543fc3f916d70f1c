package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/condense-proxy/condense-proxy/codec/responses"
	"github.com/condense-proxy/condense-proxy/condense"
)

const responsesAnswer = `{"id":"resp_1","object":"response","status":"completed","error":null,"output":[` +
	`{"type":"reasoning","id":"rs_1","summary":[]},` +
	`{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"  the summary","annotations":[]},{"type":"output_text","text":" continues  "}]}]}`

func TestResponsesComplete(t *testing.T) {
	var gotPath, gotAuth string
	var gotBody map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAuth = r.URL.Path, r.Header.Get("Authorization")
		b, _ := io.ReadAll(r.Body)
		gotBody = nil
		json.Unmarshal(b, &gotBody)
		io.WriteString(w, responsesAnswer)
	}))
	defer srv.Close()
	tests := []struct {
		model       string
		temperature bool
		maxTokens   float64
	}{
		{"gpt-4.1-mini", true, 100},
		{"gpt-5-codex", false, 100 + responses.SummaryReasoningRoom},
		{"openai/o4-mini", false, 100 + responses.SummaryReasoningRoom},
		{"gpt-5-chat-latest", true, 100},
	}
	for _, base := range []string{srv.URL, srv.URL + "/v1", srv.URL + "/v1/"} {
		for _, tc := range tests {
			u, _ := url.Parse(base)
			c := client(u, "responses")
			out, err := c.Complete(context.Background(), Call{Model: tc.model, System: "the prompt", User: "the text", MaxTokens: 100, Credentials: http.Header{"Authorization": {"Bearer k"}}})
			if err != nil || out != "the summary continues" {
				t.Fatalf("%s %s: %q %v", base, tc.model, out, err)
			}
			if gotPath != "/v1/responses" || gotAuth != "Bearer k" {
				t.Errorf("%s: path %q auth %q", base, gotPath, gotAuth)
			}
			_, hasTemp := gotBody["temperature"]
			if gotBody["store"] != false || gotBody["stream"] != false || gotBody["instructions"] != "the prompt" || gotBody["model"] != tc.model ||
				gotBody["max_output_tokens"] != tc.maxTokens || hasTemp != tc.temperature {
				t.Errorf("%s: body %v", tc.model, gotBody)
			}
			input, _ := json.Marshal(gotBody["input"])
			if string(input) != `[{"content":[{"text":"the text","type":"input_text"}],"role":"user"}]` {
				t.Errorf("input %s", input)
			}
		}
	}
}

func TestResponsesCompleteFailures(t *testing.T) {
	tests := map[string]string{
		"garbage":    `<html>`,
		"no message": `{"status":"completed","output":[{"type":"reasoning","summary":[]}]}`,
		"blank":      `{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"  "}]}]}`,
		"failed":     `{"status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}`,
	}
	for name, answer := range tests {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, answer) }))
		u, _ := url.Parse(srv.URL)
		_, err := (client(u, "responses")).Complete(context.Background(), Call{Model: "m"})
		srv.Close()
		if err == nil {
			t.Errorf("%s: no error", name)
		}
		if (name == "no message" || name == "blank") && !errors.Is(err, ErrEmpty) {
			t.Errorf("%s: err %v, want ErrEmpty", name, err)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(400) }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	if _, err := (client(u, "responses")).Complete(context.Background(), Call{Model: "m"}); err == nil {
		t.Error("status 400: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (client(u, "responses")).Complete(ctx, Call{Model: "m"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestSummarizerDispatch: summaries of Responses requests go to
// /v1/responses unless the API is set to chat; chat requests to
// /v1/chat/completions unless it is set to responses.
func TestSummarizerDispatch(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/v1/responses" {
			io.WriteString(w, responsesAnswer)
			return
		}
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"chat summary"}}]}`)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	tests := []struct {
		api, format, path string
	}{
		{"", "responses", "/v1/responses"},
		{"auto", "responses", "/v1/responses"},
		{"auto", "chat", "/v1/chat/completions"},
		{"chat", "responses", "/v1/chat/completions"},
		{"responses", "chat", "/v1/responses"},
		{"messages", "responses", "/v1/chat/completions"}, // no Messages client here: chat
	}
	for _, tc := range tests {
		paths = nil
		s := &Summarizer{Client: client(u, "chat"), Clients: []*Client{client(u, "responses")}, API: tc.api}
		if _, err := s.Summarize(context.Background(), condense.SummaryInput{Model: "gpt-5", Prompt: "p", Text: "t", Level: 1, MaxTokens: 10, Codec: codecOf(tc.format)}); err != nil {
			t.Fatal(err)
		}
		if len(paths) != 1 || paths[0] != tc.path {
			t.Errorf("api %q, format %q: called %v, want %s", tc.api, tc.format, paths, tc.path)
		}
	}
	// Without a Responses client every summary goes through chat.
	paths = nil
	s := &Summarizer{Client: client(u, "chat")}
	if _, err := s.Summarize(context.Background(), condense.SummaryInput{Model: "gpt-5", Codec: codecOf("responses")}); err != nil || paths[0] != "/v1/chat/completions" {
		t.Fatalf("%v %v", err, paths)
	}
}
