package responses

import (
	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/answer"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Asker = (*Codec)(nil)

// Ask implements view.Asker: a user message item appended to "input",
// max_output_tokens bounding the answer (with view.ReasoningRoom when the
// request reasons). Not for a request that continues a stored response
// (previous_response_id), runs in the background, forces a tool call or
// a structured answer.
func (*Codec) Ask(r *view.Request, text string, maxTokens int) ([]byte, bool, error) {
	if r.Array[1] == 0 || gjson.GetBytes(r.Body, "previous_response_id").Exists() || gjson.GetBytes(r.Body, "background").Bool() ||
		answer.ForcesAnswer(gjson.GetBytes(r.Body, "tool_choice")) {
		return nil, false, nil
	}
	if t := gjson.GetBytes(r.Body, "text.format.type").Str; t != "" && t != "text" {
		return nil, false, nil
	}
	item := `{"type":"message","role":"user","content":[{"type":"input_text","text":` + answer.Quote(text) + `}]}`
	n := len(r.Items)
	body, err := view.SpliceArray(r, r.Array, view.Edit{From: n, To: n, Insert: [][]byte{[]byte(item)}})
	if err != nil {
		return nil, false, err
	}
	bound := maxTokens
	if gjson.GetBytes(body, "reasoning").Exists() {
		bound += view.ReasoningRoom
	}
	body, err = answer.Unstreamed(body, "max_output_tokens", bound)
	if err != nil {
		return nil, false, err
	}
	return body, true, nil
}
