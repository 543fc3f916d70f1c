package messages

import (
	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/answer"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Meter = (*Codec)(nil)

// AnswerReader implements view.Meter: a Messages answer's stop_reason,
// tool_use blocks, error events and usage (message_start carries the
// prompt's, message_delta the output's and, from newer APIs, the
// prompt's again).
func (*Codec) AnswerReader(sse bool) view.AnswerReader { return answer.NewReader(&meter{}, sse) }

// meter is what a Messages answer said, as far as it was read.
type meter struct {
	stop     string
	failed   bool
	toolCall bool
	usage    view.Usage
}

func (m *meter) Event(v gjson.Result) {
	switch v.Get("type").String() {
	case "message_start":
		m.merge(v.Get("message.usage"))
	case "message_delta":
		if s := v.Get("delta.stop_reason"); s.Type == gjson.String {
			m.stop = s.String()
		}
		m.merge(v.Get("usage"))
	case "content_block_start":
		if v.Get("content_block.type").String() == "tool_use" {
			m.toolCall = true
		}
	case "error":
		m.failed = true
	}
}

func (m *meter) Whole(v gjson.Result) {
	m.stop = v.Get("stop_reason").String()
	if v.Get("type").String() == "error" {
		m.failed = true
	}
	v.Get("content").ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").String() == "tool_use" {
			m.toolCall = true
		}
		return true
	})
	m.merge(v.Get("usage"))
}

func (m *meter) Outcome() view.Outcome {
	o := view.Outcome{Failed: m.failed, ToolCall: m.toolCall, Usage: m.usage}
	o.EndTurn = !m.failed && m.stop == "end_turn" && !m.toolCall
	return o
}

// merge merges an Anthropic usage object into what was read: the fields
// it has replace those read before. cache_creation_input_tokens is the
// whole write; its cache_creation object splits it by lifetime.
func (m *meter) merge(u gjson.Result) {
	if !u.IsObject() {
		return
	}
	m.usage.Known = true
	if v := u.Get("input_tokens"); v.Exists() {
		m.usage.Uncached = int(v.Int())
	}
	if v := u.Get("cache_read_input_tokens"); v.Exists() {
		m.usage.CacheRead = int(v.Int())
	}
	split := u.Get("cache_creation")
	if v := u.Get("cache_creation_input_tokens"); v.Exists() {
		m.usage.CacheWrite = int(v.Int())
	} else if split.IsObject() {
		m.usage.CacheWrite = int(split.Get("ephemeral_5m_input_tokens").Int() + split.Get("ephemeral_1h_input_tokens").Int())
	}
	if split.IsObject() {
		m.usage.CacheWrite1h = min(m.usage.CacheWrite, int(split.Get("ephemeral_1h_input_tokens").Int()))
	}
	if v := u.Get("output_tokens"); v.Exists() {
		m.usage.Output = int(v.Int())
	}
}
