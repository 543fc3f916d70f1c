package responses

import (
	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/answer"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Meter = (*Codec)(nil)

// AnswerReader implements view.Meter: whether a Responses response
// completed, the output items that ask the client to act, failures and
// usage (in a stream, from response.completed).
func (*Codec) AnswerReader(sse bool) view.AnswerReader { return answer.NewReader(&meter{}, sse) }

// meter is what a Responses answer said, as far as it was read.
type meter struct {
	completed bool
	failed    bool
	toolCall  bool
	usage     view.Usage
}

func (m *meter) Event(v gjson.Result) {
	switch v.Get("type").String() {
	case "response.output_item.done", "response.output_item.added":
		if clientCall(v.Get("item.type").String()) {
			m.toolCall = true
		}
	case "response.completed":
		m.Whole(v.Get("response"))
	case "response.incomplete", "response.failed", "error":
		m.failed = true
	}
}

// Whole reads a response object.
func (m *meter) Whole(r gjson.Result) {
	switch r.Get("status").String() {
	case "completed":
		m.completed = true
	case "failed", "incomplete":
		m.failed = true
	}
	r.Get("output").ForEach(func(_, it gjson.Result) bool {
		if clientCall(it.Get("type").String()) {
			m.toolCall = true
		}
		return true
	})
	if u := r.Get("usage"); u.IsObject() {
		if usage, ok := answer.OpenAIUsage(u); ok {
			m.usage = usage
		}
	}
}

func (m *meter) Outcome() view.Outcome {
	return view.Outcome{EndTurn: !m.failed && m.completed && !m.toolCall, Failed: m.failed, ToolCall: m.toolCall, Usage: m.usage}
}

// clientCall reports whether an output item asks the client to act (run
// a tool, approve a call): the turn goes on.
func clientCall(typ string) bool {
	switch typ {
	case "function_call", "custom_tool_call", "local_shell_call", "shell_call", "apply_patch_call",
		"computer_call", "mcp_approval_request":
		return true
	}
	return false
}
