package chat

import (
	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/answer"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Meter = (*Codec)(nil)

// AnswerReader implements view.Meter: a chat completion's (or its
// chunks') finish_reason, tool calls and usage.
func (*Codec) AnswerReader(sse bool) view.AnswerReader {
	return answer.NewReader(&meter{chunks: sse}, sse)
}

// meter is what a chat answer said, as far as it was read.
type meter struct {
	chunks   bool
	stop     string
	failed   bool
	toolCall bool
	usage    view.Usage
}

func (m *meter) Event(v gjson.Result) { m.read(v) }
func (m *meter) Whole(v gjson.Result) { m.read(v) }

// read reads a chat completion or one of its chunks.
func (m *meter) read(v gjson.Result) {
	if v.Get("error").IsObject() {
		m.failed = true // an error chunk, or an error answer
	}
	v.Get("choices").ForEach(func(_, c gjson.Result) bool {
		if fr := c.Get("finish_reason"); fr.Type == gjson.String && fr.String() != "" {
			m.stop = fr.String()
		}
		calls := c.Get("message.tool_calls")
		if m.chunks {
			calls = c.Get("delta.tool_calls")
		}
		if calls.IsArray() && len(calls.Array()) > 0 || c.Get("message.function_call").IsObject() || c.Get("delta.function_call").IsObject() {
			m.toolCall = true
		}
		return true
	})
	if u := v.Get("usage"); u.IsObject() {
		if usage, ok := answer.OpenAIUsage(u); ok {
			m.usage = usage
		}
	}
}

func (m *meter) Outcome() view.Outcome {
	return view.Outcome{EndTurn: !m.failed && m.stop == "stop" && !m.toolCall, Failed: m.failed, ToolCall: m.toolCall, Usage: m.usage}
}
