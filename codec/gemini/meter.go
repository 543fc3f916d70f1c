package gemini

import (
	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/answer"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Meter = (*Codec)(nil)

// AnswerReader implements view.Meter: a Gemini answer's finishReason,
// functionCall parts, error and usageMetadata. A stream's chunks each
// carry the usage so far (the last one the whole); a stream asked without
// alt=sse comes as one JSON array of chunks, read as they are.
func (*Codec) AnswerReader(sse bool) view.AnswerReader { return answer.NewReader(&meter{}, sse) }

// meter is what a Gemini answer said, as far as it was read.
type meter struct {
	finish   string
	failed   bool
	toolCall bool
	usage    view.Usage
}

func (m *meter) Event(v gjson.Result) { m.chunk(v) }

func (m *meter) Whole(v gjson.Result) {
	if v.IsArray() {
		v.ForEach(func(_, c gjson.Result) bool {
			m.chunk(c)
			return true
		})
		return
	}
	m.chunk(v)
}

// chunk reads one GenerateContentResponse (or an error).
func (m *meter) chunk(v gjson.Result) {
	if v.Get("error").Exists() {
		m.failed = true
		return
	}
	if fr := v.Get("candidates.0.finishReason"); fr.Type == gjson.String {
		m.finish = fr.String()
	}
	if v.Get("promptFeedback.blockReason").String() != "" {
		m.failed = true
	}
	v.Get("candidates.0.content.parts").ForEach(func(_, p gjson.Result) bool {
		if field(p, "functionCall", "function_call").Exists() {
			m.toolCall = true
		}
		return true
	})
	if u := v.Get("usageMetadata"); u.IsObject() {
		m.usage = Usage(u)
	}
}

// Usage reads a usageMetadata object: the prompt's total with the part
// read from the (implicit or explicit) cache; Gemini bills no cache
// write. Output is the candidates' tokens and the thoughts'.
func Usage(u gjson.Result) view.Usage {
	prompt := u.Get("promptTokenCount").Int() + u.Get("toolUsePromptTokenCount").Int()
	read := min(u.Get("cachedContentTokenCount").Int(), prompt)
	return view.Usage{Known: true, CacheRead: int(read), Uncached: int(prompt - read),
		Output: int(u.Get("candidatesTokenCount").Int() + u.Get("thoughtsTokenCount").Int())}
}

func (m *meter) Outcome() view.Outcome {
	o := view.Outcome{Failed: m.failed, ToolCall: m.toolCall, Usage: m.usage}
	switch m.finish {
	case "", "STOP", "MAX_TOKENS", "FINISH_REASON_UNSPECIFIED":
	default:
		// SAFETY, RECITATION, MALFORMED_FUNCTION_CALL…: no answer.
		o.Failed = true
	}
	o.EndTurn = !o.Failed && m.finish == "STOP" && !m.toolCall
	return o
}
