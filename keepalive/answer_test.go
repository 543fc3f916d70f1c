package keepalive

import (
	"strings"
	"testing"
)

func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	return b.String()
}

func TestParser(t *testing.T) {
	big := `{"type":"content_block_delta","delta":{"text":"` + strings.Repeat("x", maxLine) + `"}}`
	cases := []struct {
		name    string
		format  string
		sse     bool
		body    string
		endTurn bool
		usage   Usage
	}{
		{"messages stream, end turn", FormatMessages, true, "event: message_start\n" + sse(
			`{"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":9000,"cache_creation_input_tokens":200,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":42}}`,
			`{"type":"message_stop"}`), true,
			Usage{Known: true, Uncached: 10, CacheRead: 9000, CacheWrite: 200, Output: 42}},
		{"messages stream, tool use", FormatMessages, true, sse(
			`{"type":"message_start","message":{"usage":{"input_tokens":10}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"Bash","input":{}}}`,
			`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}`), false,
			Usage{Known: true, Uncached: 10, Output: 5}},
		{"messages stream, error event", FormatMessages, true, sse(
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`,
			`{"type":"error","error":{"type":"overloaded_error"}}`), false, Usage{}},
		{"messages stream, an over-long line skipped", FormatMessages, true, sse(
			`{"type":"message_start","message":{"usage":{"input_tokens":3,"cache_read_input_tokens":7}}}`, big,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`), true,
			Usage{Known: true, Uncached: 3, CacheRead: 7, Output: 2}},
		{"messages JSON, end turn", FormatMessages, false,
			`{"type":"message","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":4,"cache_read_input_tokens":5000,"output_tokens":1}}`,
			true, Usage{Known: true, Uncached: 4, CacheRead: 5000, Output: 1}},
		{"messages JSON, max tokens", FormatMessages, false,
			`{"type":"message","stop_reason":"max_tokens","usage":{"input_tokens":4}}`, false, Usage{Known: true, Uncached: 4}},
		{"chat stream, stop with usage", FormatChat, true, "data: " +
			`{"choices":[{"index":0,"delta":{"content":"hi"}}]}` + "\r\n\r\n" + sse(
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":6000,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":5888}}}`,
			`[DONE]`), true, Usage{Known: true, CacheRead: 5888, Uncached: 112, Output: 3}},
		{"chat stream, tool calls", FormatChat, true, sse(
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`), false, Usage{}},
		{"chat JSON, stop but a tool call", FormatChat, false,
			`{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","tool_calls":[{"id":"c"}]}}]}`, false, Usage{}},
		{"chat JSON, LiteLLM's Anthropic usage", FormatChat, false,
			`{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":1000,"completion_tokens":1,"cache_creation_input_tokens":900,"cache_read_input_tokens":0}}`,
			true, Usage{Known: true, CacheWrite: 900, Uncached: 100, Output: 1}},
		{"responses stream, completed", FormatResponses, true, "event: response.completed\n" + sse(
			`{"type":"response.output_item.done","item":{"type":"message"}}`,
			`{"type":"response.completed","response":{"status":"completed","output":[{"type":"reasoning"},{"type":"message"}],"usage":{"input_tokens":9000,"input_tokens_details":{"cached_tokens":8960},"output_tokens":7}}}`),
			true, Usage{Known: true, CacheRead: 8960, Uncached: 40, Output: 7}},
		{"responses stream, function call", FormatResponses, true, sse(
			`{"type":"response.output_item.done","item":{"type":"function_call","call_id":"c"}}`,
			`{"type":"response.completed","response":{"status":"completed","output":[],"usage":{"input_tokens":9}}}`),
			false, Usage{Known: true, Uncached: 9}},
		{"responses stream, cut before completed", FormatResponses, true, sse(
			`{"type":"response.output_item.done","item":{"type":"message"}}`), false, Usage{}},
		{"responses JSON, incomplete", FormatResponses, false,
			`{"status":"incomplete","output":[{"type":"message"}],"usage":{"input_tokens":9}}`, false, Usage{Known: true, Uncached: 9}},
		{"responses JSON, completed", FormatResponses, false,
			`{"status":"completed","output":[{"type":"message"}],"usage":{"input_tokens":9,"input_tokens_details":{"cached_tokens":8}}}`,
			true, Usage{Known: true, CacheRead: 8, Uncached: 1}},
		{"JSON past its bound", FormatMessages, false,
			`{"stop_reason":"end_turn","content":"` + strings.Repeat("x", maxJSON) + `"}`, false, Usage{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, piece := range []int{len(tc.body) + 1, 7, 1} {
				p := newParser(tc.format, tc.sse)
				for b := []byte(tc.body); len(b) > 0; {
					n := min(piece, len(b))
					p.Write(b[:n])
					b = b[n:]
				}
				got := p.result()
				if got.EndTurn != tc.endTurn || got.Usage != tc.usage {
					t.Fatalf("in pieces of %d: got %+v, want end turn %v, usage %+v", piece, got, tc.endTurn, tc.usage)
				}
				if len(p.buf) > maxJSON || cap(p.buf) > 2*maxJSON {
					t.Fatalf("parser holds %d bytes", cap(p.buf))
				}
			}
		})
	}
}

func TestReadMostly(t *testing.T) {
	cases := []struct {
		name string
		u    Usage
		want bool
	}{
		{"read", Usage{Known: true, CacheRead: 9000, Uncached: 10}, true},
		{"written", Usage{Known: true, CacheWrite: 9000, Uncached: 10}, false},
		{"not cached at all", Usage{Known: true, Uncached: 9000}, false},
		{"no usage", Usage{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.u.readMostly(); got != tc.want {
				t.Errorf("readMostly(%+v) = %v", tc.u, got)
			}
		})
	}
}
