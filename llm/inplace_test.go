package llm

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/condense-proxy/condense-proxy/condense"
)

// TestSummarizeInPlace: a summary asked in place (SummaryInput.Body) is
// posted as it is, in the request's own API whatever the summarizer's
// configured API; when that fails (here the model answers with a tool
// call and no text) the plain form is asked instead.
func TestSummarizeInPlace(t *testing.T) {
	inPlace := `{"model":"claude","max_tokens":100,"messages":[{"role":"user","content":"the conversation … Summarize messages 1 to 1"}]}`
	for _, tc := range []struct {
		name, answer string
		want         string
		posts        int
	}{
		{"answered", `{"type":"message","content":[{"type":"text","text":"in place"}]}`, "in place", 1},
		{"tool call", `{"type":"message","content":[{"type":"tool_use","id":"t","name":"Read","input":{}}],"stop_reason":"tool_use"}`, "plain", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var bodies []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				bodies = append(bodies, r.URL.Path+" "+string(b))
				mu.Unlock()
				if string(b) == inPlace {
					io.WriteString(w, tc.answer)
					return
				}
				io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"plain"}}]}`)
			}))
			defer srv.Close()
			u, _ := url.Parse(srv.URL)
			s := &Summarizer{Client: client(u, "chat"), Clients: []*Client{client(u, "messages")}, API: "chat"}
			if !s.InPlace(codecOf("messages")) || s.InPlace(codecOf("responses")) {
				t.Fatalf("InPlace: messages %v, responses %v", s.InPlace(codecOf("messages")), s.InPlace(codecOf("responses")))
			}
			out, err := s.Summarize(context.Background(), condense.SummaryInput{Model: "claude", Prompt: "p", Text: "t", MaxTokens: 100,
				Codec: codecOf("messages"), Body: []byte(inPlace)})
			if err != nil || out != tc.want {
				t.Fatalf("%q, %v", out, err)
			}
			if len(bodies) != tc.posts || bodies[0] != "/v1/messages "+inPlace {
				t.Fatalf("posted %q", bodies)
			}
			if tc.posts == 2 && !strings.HasPrefix(bodies[1], "/v1/chat/completions ") {
				t.Errorf("the plain form went to %q, not the configured API", bodies[1])
			}
		})
	}
}
