package messages

import (
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/codec/internal/answer"
	"github.com/condense-proxy/condense-proxy/codec/internal/codectest"
	"github.com/condense-proxy/condense-proxy/view"
)

// TestAnswerReader: a Messages answer, streamed or whole, read in pieces
// of any size: whether it ends the agent's turn, failed or calls a tool,
// and its usage (with the cache write's 1h share).
func TestAnswerReader(t *testing.T) {
	big := `{"type":"content_block_delta","delta":{"text":"` + strings.Repeat("x", answer.MaxLine) + `"}}`
	cases := []codectest.AnswerCase{
		{Name: "stream, end turn", SSE: true, Body: "event: message_start\n" + codectest.SSE(
			`{"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":9000,"cache_creation_input_tokens":200,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":42}}`,
			`{"type":"message_stop"}`),
			Want: view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, Uncached: 10, CacheRead: 9000, CacheWrite: 200, Output: 42}}},
		{Name: "stream, tool use", SSE: true, Body: codectest.SSE(
			`{"type":"message_start","message":{"usage":{"input_tokens":10}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"Bash","input":{}}}`,
			`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}`),
			Want: view.Outcome{ToolCall: true, Usage: view.Usage{Known: true, Uncached: 10, Output: 5}}},
		{Name: "stream, error event", SSE: true, Body: codectest.SSE(
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`,
			`{"type":"error","error":{"type":"overloaded_error"}}`), Want: view.Outcome{Failed: true}},
		{Name: "stream, an over-long line skipped", SSE: true, Body: codectest.SSE(
			`{"type":"message_start","message":{"usage":{"input_tokens":3,"cache_read_input_tokens":7}}}`, big,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`),
			Want: view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, Uncached: 3, CacheRead: 7, Output: 2}}},
		{Name: "stream, the write split by lifetime", SSE: true, Body: codectest.SSE(
			`{"type":"message_start","message":{"usage":{"input_tokens":5,"cache_creation_input_tokens":3000,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000},"output_tokens":1}}}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":8}}`),
			Want: view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, Uncached: 5, CacheWrite: 3000, CacheWrite1h: 2000, Output: 8}}},
		{Name: "JSON, end turn", SSE: false,
			Body: `{"type":"message","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":4,"cache_read_input_tokens":5000,"output_tokens":1}}`,
			Want: view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, Uncached: 4, CacheRead: 5000, Output: 1}}},
		{Name: "JSON, max tokens", SSE: false,
			Body: `{"type":"message","stop_reason":"max_tokens","usage":{"input_tokens":4}}`, Want: view.Outcome{Usage: view.Usage{Known: true, Uncached: 4}}},
		{Name: "JSON, tool use", SSE: false,
			Body: `{"type":"message","content":[{"type":"tool_use","id":"t","name":"Read","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":4}}`,
			Want: view.Outcome{ToolCall: true, Usage: view.Usage{Known: true, Uncached: 4}}},
		{Name: "JSON, only the split of the write", SSE: false,
			Body: `{"type":"message","stop_reason":"end_turn","usage":{"input_tokens":4,"cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":50}}}`,
			Want: view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, Uncached: 4, CacheWrite: 150, CacheWrite1h: 50}}},
		{Name: "JSON past its bound", SSE: false,
			Body: `{"stop_reason":"end_turn","content":"` + strings.Repeat("x", answer.MaxJSON) + `"}`, Want: view.Outcome{}},
	}
	codectest.CheckAnswers(t, New(nil), cases)
}
