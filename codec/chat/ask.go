package chat

import (
	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/answer"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Asker = (*Codec)(nil)

// Ask implements view.Asker: a user message appended to "messages", the
// answer bound by max_completion_tokens (with view.ReasoningRoom) where
// the request bounds it so or sets a reasoning effort, by max_tokens
// otherwise. Not for a request that forces a tool call or a structured
// answer, or asks for several choices.
func (*Codec) Ask(r *view.Request, text string, maxTokens int) ([]byte, bool, error) {
	if r.Array[1] == 0 || answer.ForcesAnswer(gjson.GetBytes(r.Body, "tool_choice")) ||
		gjson.GetBytes(r.Body, "n").Int() > 1 {
		return nil, false, nil
	}
	if t := gjson.GetBytes(r.Body, "response_format.type").Str; t != "" && t != "text" {
		return nil, false, nil
	}
	msg := `{"role":"user","content":` + answer.Quote(text) + `}`
	n := len(r.Items)
	body, err := view.SpliceArray(r, r.Array, view.Edit{From: n, To: n, Insert: [][]byte{[]byte(msg)}})
	if err != nil {
		return nil, false, err
	}
	reasons := gjson.GetBytes(body, "reasoning_effort").Exists()
	if gjson.GetBytes(body, "max_completion_tokens").Exists() || (reasons && !gjson.GetBytes(body, "max_tokens").Exists()) {
		if body, err = answer.Unstreamed(body, "max_completion_tokens", maxTokens+view.ReasoningRoom); err != nil {
			return nil, false, err
		}
	}
	if !reasons || gjson.GetBytes(body, "max_tokens").Exists() {
		if body, err = answer.Unstreamed(body, "max_tokens", maxTokens); err != nil {
			return nil, false, err
		}
	}
	return body, true, nil
}
