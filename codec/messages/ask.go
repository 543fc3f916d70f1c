package messages

import (
	"fmt"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/answer"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Asker = (*Codec)(nil)

// Ask implements view.Asker: the text as a block appended to the last
// message when it is the user's (two user messages in a row would be one
// turn to the API), as a user message of its own otherwise; max_tokens
// bounds the answer, plus the thinking budget when thinking is on. Not
// for a request that forces a tool call.
func (*Codec) Ask(r *view.Request, text string, maxTokens int) ([]byte, bool, error) {
	if r.Array[1] == 0 || len(r.Items) == 0 || answer.ForcesAnswer(gjson.GetBytes(r.Body, "tool_choice")) {
		return nil, false, nil
	}
	block := `{"type":"text","text":` + answer.Quote(text) + `}`
	n := len(r.Items)
	edit := view.Edit{From: n, To: n, Insert: [][]byte{[]byte(`{"role":"user","content":[` + block + `]}`)}}
	if last := r.Raw(n - 1); gjson.Get(last, "role").Str == "user" {
		var m []byte
		var err error
		switch content := gjson.Get(last, "content"); {
		case content.IsArray():
			m, err = sjson.SetRawBytes([]byte(last), "content.-1", []byte(block))
		case content.Type == gjson.String:
			m, err = sjson.SetRawBytes([]byte(last), "content", []byte(`[{"type":"text","text":`+content.Raw+`},`+block+`]`))
		default:
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("messages: appending to the last message: %w", err)
		}
		edit = view.Edit{From: n - 1, To: n, Insert: [][]byte{m}}
	}
	body, err := view.SpliceArray(r, r.Array, edit)
	if err != nil {
		return nil, false, err
	}
	bound := maxTokens
	switch th := gjson.GetBytes(body, "thinking"); th.Get("type").Str {
	case "", "disabled":
	case "enabled":
		bound += int(th.Get("budget_tokens").Int())
	default:
		bound += view.ReasoningRoom
	}
	body, err = answer.Unstreamed(body, "max_tokens", bound)
	if err != nil {
		return nil, false, err
	}
	return body, true, nil
}
