package gemini

import (
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Asker = (*Codec)(nil)

// Ask implements view.Asker: the text as a user content appended to the
// contents (after a model filler turn when the last content is the
// user's: the API wants turns to alternate, and every content stays byte
// for byte); generationConfig.maxOutputTokens bounds the answer, plus
// room for thinking unless the request turns it off (thinkingBudget 0).
// The answer is not streamed: a summary is asked at :generateContent.
// Not for a request that forces a call (mode ANY) or names cachedContent.
func (c *Codec) Ask(r *view.Request, text string, maxTokens int) ([]byte, bool, error) {
	g := gjson.ParseBytes(r.Body)
	if r.Array[1] == 0 || len(r.Items) == 0 || strings.EqualFold(mode(g), "ANY") || r.Untouchable != "" {
		return nil, false, nil
	}
	n := len(r.Items)
	edit := view.Edit{From: n, To: n, Insert: [][]byte{c.Note(text)}}
	if roleOf(gjson.Parse(r.Raw(n-1))) == "user" {
		edit.Insert = [][]byte{modelFiller, c.Note(text)}
	}
	body, err := view.SpliceArray(r, r.Array, edit)
	if err != nil {
		return nil, false, err
	}
	key := "generationConfig"
	if !g.Get(key).Exists() && g.Get("generation_config").Exists() {
		key = "generation_config"
	}
	gc := g.Get(key)
	bound := maxTokens
	tc := field(gc, "thinkingConfig", "thinking_config")
	if budget := field(tc, "thinkingBudget", "thinking_budget"); !budget.Exists() || budget.Int() != 0 {
		bound += view.ReasoningRoom
	}
	name := "maxOutputTokens"
	if gc.Get("max_output_tokens").Exists() && !gc.Get(name).Exists() {
		name = "max_output_tokens"
	}
	if body, err = sjson.SetBytes(body, key+"."+name, bound); err != nil {
		return nil, false, err
	}
	return body, true, nil
}
