package llm

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/codec/messages"
	"github.com/condense-proxy/condense-proxy/condense"
)

// TestMessagesComplete: a summary of a Messages request is asked of
// /v1/messages (under a base ending in /v1 too) with the caller's key and
// anthropic headers (a default version when none), the prompt as system;
// the answer's text blocks are the summary; errors and empty answers fail.
func TestMessagesComplete(t *testing.T) {
	type got struct {
		path    string
		header  http.Header
		payload map[string]any
	}
	var last got
	answer := `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"x","signature":"s"},{"type":"text","text":"  the summary "},{"type":"text","text":"continues"}],"stop_reason":"end_turn"}`
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		last = got{r.URL.Path, r.Header.Clone(), nil}
		json.Unmarshal(b, &last.payload)
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	defer srv.Close()
	for _, base := range []string{srv.URL, srv.URL + "/v1"} {
		u, _ := url.Parse(base)
		c := client(u, "messages")
		text, err := c.Complete(context.Background(), Call{Model: "claude-haiku-4-5", System: "condense-proxy summarizer", User: "transcript", MaxTokens: 500,
			Credentials: http.Header{"X-Api-Key": {"sk-ant-caller"}, "Anthropic-Beta": {"oauth-2025-04-20"}}})
		if err != nil || text != "the summary continues" {
			t.Fatalf("%s: %q %v", base, text, err)
		}
		if last.path != "/v1/messages" || last.header.Get("X-Api-Key") != "sk-ant-caller" || last.header.Get("Anthropic-Beta") != "oauth-2025-04-20" ||
			last.header.Get("Anthropic-Version") != messages.APIVersion {
			t.Fatalf("%s: path %s headers %v", base, last.path, last.header)
		}
		if last.payload["system"] != "condense-proxy summarizer" || last.payload["max_tokens"] != 500.0 || last.payload["thinking"] != nil {
			t.Fatalf("payload %v", last.payload)
		}
	}
	u, _ := url.Parse(srv.URL)
	c := client(u, "messages")
	c.Complete(context.Background(), Call{Model: "m", Credentials: http.Header{"Anthropic-Version": {"2099-01-01"}}})
	if v := last.header.Values("Anthropic-Version"); len(v) != 1 || v[0] != "2099-01-01" {
		t.Errorf("caller's version replaced: %v", v)
	}
	answer, status = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, 529
	if _, err := c.Complete(context.Background(), Call{Model: "m"}); err == nil || !strings.Contains(err.Error(), "529") {
		t.Errorf("error answer: %v", err)
	}
	answer, status = `{"type":"message","content":[]}`, 200
	if _, err := c.Complete(context.Background(), Call{Model: "m"}); err != ErrEmpty {
		t.Errorf("empty answer: %v", err)
	}
}

// TestSummarizerPicksMessages: with API auto, a Messages request's summary
// goes through the Messages client.
func TestSummarizerPicksMessages(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"s"}]}`)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	s := &Summarizer{Client: client(u, "chat"), Clients: []*Client{client(u, "messages")}}
	if _, err := s.Summarize(context.Background(), condense.SummaryInput{Model: "claude-sonnet-4-5", Codec: codecOf("messages")}); err != nil {
		t.Fatal(err)
	}
	if len(paths) != 1 || paths[0] != "/v1/messages" {
		t.Fatalf("asked %v", paths)
	}
}
