package responses

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

// TestAnswerReader: a Responses answer, streamed or whole, read in pieces
// of any size: whether it completed the agent's turn, failed or calls a
// tool, and its usage.
func TestAnswerReader(t *testing.T) {
	cases := []struct {
		name string
		sse  bool
		body string
		want view.Outcome
	}{
		{"stream, completed", true, "event: response.completed\n" + sse(
			`{"type":"response.output_item.done","item":{"type":"message"}}`,
			`{"type":"response.completed","response":{"status":"completed","output":[{"type":"reasoning"},{"type":"message"}],"usage":{"input_tokens":9000,"input_tokens_details":{"cached_tokens":8960},"output_tokens":7}}}`),
			view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, CacheRead: 8960, Uncached: 40, Output: 7}}},
		{"stream, function call", true, sse(
			`{"type":"response.output_item.done","item":{"type":"function_call","call_id":"c"}}`,
			`{"type":"response.completed","response":{"status":"completed","output":[],"usage":{"input_tokens":9}}}`),
			view.Outcome{ToolCall: true, Usage: view.Usage{Known: true, Uncached: 9}}},
		{"stream, cut before completed", true, sse(
			`{"type":"response.output_item.done","item":{"type":"message"}}`), view.Outcome{}},
		{"stream, failed", true, sse(
			`{"type":"response.output_item.done","item":{"type":"message"}}`,
			`{"type":"response.failed","response":{"status":"failed"}}`), view.Outcome{Failed: true}},
		{"JSON, incomplete", false,
			`{"status":"incomplete","output":[{"type":"message"}],"usage":{"input_tokens":9}}`,
			view.Outcome{Failed: true, Usage: view.Usage{Known: true, Uncached: 9}}},
		{"JSON, completed", false,
			`{"status":"completed","output":[{"type":"message"}],"usage":{"input_tokens":9,"input_tokens_details":{"cached_tokens":8}}}`,
			view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, CacheRead: 8, Uncached: 1}}},
		{"JSON, a cache write reported", false,
			`{"status":"completed","output":[{"type":"message"}],"usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":20,"cache_write_tokens":70},"output_tokens":3}}`,
			view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, CacheRead: 20, CacheWrite: 70, Uncached: 10, Output: 3}}},
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
