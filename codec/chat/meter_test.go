package chat

import (
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/codec/internal/answer"
	"github.com/condense-proxy/condense-proxy/view"
)

func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	return b.String()
}

// readAnswer reads body in pieces of piece bytes and checks the reader
// stays within its bounds.
func readAnswer(t *testing.T, c view.Meter, sse bool, body string, piece int) view.Outcome {
	t.Helper()
	r := c.AnswerReader(sse)
	for b := []byte(body); len(b) > 0; {
		n := min(piece, len(b))
		if w, err := r.Write(b[:n]); w != n || err != nil {
			t.Fatalf("Write: %d, %v", w, err)
		}
		b = b[n:]
	}
	if held := r.(*answer.Reader).Held(); held > 2*answer.MaxJSON {
		t.Fatalf("the reader holds %d bytes", held)
	}
	return r.Outcome()
}

// TestAnswerReader: a chat completion, streamed or whole, read in pieces
// of any size: whether it ends the agent's turn, failed or calls a tool,
// and its usage — OpenAI's cached tokens, OpenRouter's cache writes,
// LiteLLM's Anthropic fields.
func TestAnswerReader(t *testing.T) {
	cases := []struct {
		name string
		sse  bool
		body string
		want view.Outcome
	}{
		{"stream, stop with usage", true, "data: " +
			`{"choices":[{"index":0,"delta":{"content":"hi"}}]}` + "\r\n\r\n" + sse(
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":6000,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":5888}}}`,
			`[DONE]`), view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, CacheRead: 5888, Uncached: 112, Output: 3}}},
		{"stream, tool calls", true, sse(
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`), view.Outcome{ToolCall: true}},
		{"stream, an error chunk", true, sse(
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"error":{"message":"overloaded"}}`), view.Outcome{Failed: true}},
		{"JSON, stop but a tool call", false,
			`{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","tool_calls":[{"id":"c"}]}}]}`, view.Outcome{ToolCall: true}},
		{"JSON, LiteLLM's Anthropic usage", false,
			`{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":1000,"completion_tokens":1,"cache_creation_input_tokens":900,"cache_read_input_tokens":0}}`,
			view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, CacheWrite: 900, Uncached: 100, Output: 1}}},
		{"JSON, OpenRouter's cache write", false,
			`{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":1000,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":600,"cache_write_tokens":300}}}`,
			view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, CacheRead: 600, CacheWrite: 300, Uncached: 100, Output: 2}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, piece := range []int{len(tc.body) + 1, 7, 1} {
				if got := readAnswer(t, New(nil), tc.sse, tc.body, piece); got != tc.want {
					t.Fatalf("in pieces of %d: got %+v, want %+v", piece, got, tc.want)
				}
			}
		})
	}
}
