package llm

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/codec/messages"
	"github.com/condense-proxy/condense-proxy/codec/responses"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// TestEngineAsksInTheCodecsAPI: the engine hands the summarizer the
// request's codec, and the summary of a request is asked in that codec's
// API, never in another.
func TestEngineAsksInTheCodecsAPI(t *testing.T) {
	var mu sync.Mutex
	paths := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths[r.URL.Path]++
		mu.Unlock()
		switch r.URL.Path {
		case "/v1/messages":
			io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"a summary"}]}`)
		case "/v1/responses":
			io.WriteString(w, responsesAnswer)
		default:
			io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"a summary"}}]}`)
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	counter := tokenizer.New(tokenizer.Options{})
	syn, _ := corpus.Synthetic(3, 120000)
	ms, err := corpus.ClaudeMessages(corpus.ClaudeLog(syn))
	if err != nil {
		t.Fatal(err)
	}
	mbody, err := ms.Request(ms.Turns() - 1)
	if err != nil {
		t.Fatal(err)
	}
	rbody, err := corpus.Responses(syn).Request(len(syn.TurnEnds()) - 1)
	if err != nil {
		t.Fatal(err)
	}
	cbody, err := syn.Request("gpt-4o", 0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		codec view.Codec
		body  []byte
		path  string
	}{
		{"messages", messages.New(counter), mbody, "/v1/messages"},
		{"responses", responses.New(counter), rbody, "/v1/responses"},
		{"chat", chat.New(counter), cbody, "/v1/chat/completions"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			clear(paths)
			mu.Unlock()
			e := condense.New(condense.Deps{
				Counter: counter,
				Models: condense.ModelsFunc(func(string) condense.ModelLimits {
					return condense.ModelLimits{Window: 16000, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
				}),
				Cache:      cache.NewMemory(64 << 20),
				Summarizer: &Summarizer{Client: client(u, "chat"), Clients: []*Client{client(u, "messages"), client(u, "responses")}},
			}, condense.Options{Summarizer: "llm", ChunkTokens: 4000})
			res, err := e.Condense(context.Background(), condense.Request{Codec: tc.codec, Body: tc.body, Mode: condense.ModeFull, Scope: "s"})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if res.Report.Applied != condense.AppliedFull || paths[tc.path] == 0 || len(paths) != 1 {
				t.Fatalf("applied %s; summarizer asked %v, want only %s", res.Report.Applied, paths, tc.path)
			}
		})
	}
}
