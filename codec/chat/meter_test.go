package chat

import (
	"testing"

	"github.com/condense-proxy/condense-proxy/codec/internal/codectest"
	"github.com/condense-proxy/condense-proxy/view"
)

// TestAnswerReader: a chat completion, streamed or whole, read in pieces
// of any size: whether it ends the agent's turn, failed or calls a tool,
// and its usage — OpenAI's cached tokens, OpenRouter's cache writes,
// LiteLLM's Anthropic fields.
func TestAnswerReader(t *testing.T) {
	cases := []codectest.AnswerCase{
		{Name: "stream, stop with usage", SSE: true, Body: "data: " +
			`{"choices":[{"index":0,"delta":{"content":"hi"}}]}` + "\r\n\r\n" + codectest.SSE(
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":6000,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":5888}}}`,
			`[DONE]`), Want: view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, CacheRead: 5888, Uncached: 112, Output: 3}}},
		{Name: "stream, tool calls", SSE: true, Body: codectest.SSE(
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`), Want: view.Outcome{ToolCall: true}},
		{Name: "stream, an error chunk", SSE: true, Body: codectest.SSE(
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"error":{"message":"overloaded"}}`), Want: view.Outcome{Failed: true}},
		{Name: "JSON, stop but a tool call", SSE: false,
			Body: `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","tool_calls":[{"id":"c"}]}}]}`, Want: view.Outcome{ToolCall: true}},
		{Name: "JSON, LiteLLM's Anthropic usage", SSE: false,
			Body: `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":1000,"completion_tokens":1,"cache_creation_input_tokens":900,"cache_read_input_tokens":0}}`,
			Want: view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, CacheWrite: 900, Uncached: 100, Output: 1}}},
		{Name: "JSON, OpenRouter's cache write", SSE: false,
			Body: `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":1000,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":600,"cache_write_tokens":300}}}`,
			Want: view.Outcome{EndTurn: true, Usage: view.Usage{Known: true, CacheRead: 600, CacheWrite: 300, Uncached: 100, Output: 2}}},
	}
	codectest.CheckAnswers(t, New(nil), cases)
}
