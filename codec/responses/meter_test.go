package responses

import (
	"testing"

	"github.com/condense-proxy/condense-proxy/codec/internal/codectest"
	"github.com/condense-proxy/condense-proxy/view"
)

// TestAnswerReader: a Responses answer, streamed or whole, read in pieces
// of any size: whether it completed the agent's turn, failed or calls a
// tool, and its usage.
func TestAnswerReader(t *testing.T) {
	cases := []codectest.AnswerCase{
		{Name: "stream, completed", SSE: true, Body: "event: response.completed\n" + codectest.SSE(
			`{"type":"response.output_item.done","item":{"type":"message"}}`,
			`{"type":"response.completed","response":{"status":"completed","output":[{"type":"reasoning"},{"type":"message"}],"usage":{"input_tokens":9000,"input_tokens_details":{"cached_tokens":8960},"output_tokens":7}}}`),
			Want: view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, CacheRead: 8960, Uncached: 40, Output: 7}}},
		{Name: "stream, function call", SSE: true, Body: codectest.SSE(
			`{"type":"response.output_item.done","item":{"type":"function_call","call_id":"c"}}`,
			`{"type":"response.completed","response":{"status":"completed","output":[],"usage":{"input_tokens":9}}}`),
			Want: view.Outcome{ToolCall: true, Usage: view.Usage{Known: true, Uncached: 9}}},
		{Name: "stream, cut before completed", SSE: true, Body: codectest.SSE(
			`{"type":"response.output_item.done","item":{"type":"message"}}`), Want: view.Outcome{}},
		{Name: "stream, failed", SSE: true, Body: codectest.SSE(
			`{"type":"response.output_item.done","item":{"type":"message"}}`,
			`{"type":"response.failed","response":{"status":"failed"}}`), Want: view.Outcome{Failed: true}},
		{Name: "JSON, incomplete", SSE: false,
			Body: `{"status":"incomplete","output":[{"type":"message"}],"usage":{"input_tokens":9}}`,
			Want: view.Outcome{Failed: true, Usage: view.Usage{Known: true, Uncached: 9}}},
		{Name: "JSON, completed", SSE: false,
			Body: `{"status":"completed","output":[{"type":"message"}],"usage":{"input_tokens":9,"input_tokens_details":{"cached_tokens":8}}}`,
			Want: view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, CacheRead: 8, Uncached: 1}}},
		{Name: "JSON, a cache write reported", SSE: false,
			Body: `{"status":"completed","output":[{"type":"message"}],"usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":20,"cache_write_tokens":70},"output_tokens":3}}`,
			Want: view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, CacheRead: 20, CacheWrite: 70, Uncached: 10, Output: 3}}},
	}
	codectest.CheckAnswers(t, New(nil), cases)
}
