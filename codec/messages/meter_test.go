package messages

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

// TestAnswerReader: a Messages answer, streamed or whole, read in pieces
// of any size: whether it ends the agent's turn, failed or calls a tool,
// and its usage (with the cache write's 1h share).
func TestAnswerReader(t *testing.T) {
	big := `{"type":"content_block_delta","delta":{"text":"` + strings.Repeat("x", answer.MaxLine) + `"}}`
	cases := []struct {
		name string
		sse  bool
		body string
		want view.Outcome
	}{
		{"stream, end turn", true, "event: message_start\n" + sse(
			`{"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":9000,"cache_creation_input_tokens":200,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":42}}`,
			`{"type":"message_stop"}`),
			view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, Uncached: 10, CacheRead: 9000, CacheWrite: 200, Output: 42}}},
		{"stream, tool use", true, sse(
			`{"type":"message_start","message":{"usage":{"input_tokens":10}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"Bash","input":{}}}`,
			`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}`),
			view.Outcome{ToolCall: true, Usage: view.Usage{Known: true, Uncached: 10, Output: 5}}},
		{"stream, error event", true, sse(
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`,
			`{"type":"error","error":{"type":"overloaded_error"}}`), view.Outcome{Failed: true}},
		{"stream, an over-long line skipped", true, sse(
			`{"type":"message_start","message":{"usage":{"input_tokens":3,"cache_read_input_tokens":7}}}`, big,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`),
			view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, Uncached: 3, CacheRead: 7, Output: 2}}},
		{"stream, the write split by lifetime", true, sse(
			`{"type":"message_start","message":{"usage":{"input_tokens":5,"cache_creation_input_tokens":3000,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000},"output_tokens":1}}}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":8}}`),
			view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, Uncached: 5, CacheWrite: 3000, CacheWrite1h: 2000, Output: 8}}},
		{"JSON, end turn", false,
			`{"type":"message","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":4,"cache_read_input_tokens":5000,"output_tokens":1}}`,
			view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, Uncached: 4, CacheRead: 5000, Output: 1}}},
		{"JSON, max tokens", false,
			`{"type":"message","stop_reason":"max_tokens","usage":{"input_tokens":4}}`, view.Outcome{Usage: view.Usage{Known: true, Uncached: 4}}},
		{"JSON, tool use", false,
			`{"type":"message","content":[{"type":"tool_use","id":"t","name":"Read","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":4}}`,
			view.Outcome{ToolCall: true, Usage: view.Usage{Known: true, Uncached: 4}}},
		{"JSON, only the split of the write", false,
			`{"type":"message","stop_reason":"end_turn","usage":{"input_tokens":4,"cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":50}}}`,
			view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, Uncached: 4, CacheWrite: 150, CacheWrite1h: 50}}},
		{"JSON past its bound", false,
			`{"stop_reason":"end_turn","content":"` + strings.Repeat("x", answer.MaxJSON) + `"}`, view.Outcome{}},
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
