package messages

import (
	"regexp"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/view"
)

// Thinking blocks and a condensed prefix.
//
// A thinking block's signature covers its own content, which the proxy
// never edits. Models with preserved thinking (Claude Fable 5.1 and later)
// also bind each block to its prefix: system, tools and every earlier
// message. Condensing changes that prefix for every thinking block it
// keeps after a summary, a window cut or a digest; the API then rejects
// the request, or drops the blocks whose prefix changed when the request
// asks for it with thinking.block_binding.prefix_mismatch_behavior
// "drop_block" (beta thinking-binding-controls-2026-08-01). So when a
// condensed request for such a model keeps a thinking block after the
// first byte condensing changed, Finish sets that behaviour (unless the
// caller chose one) and adds the beta: the model loses the stale
// reasoning, never the request. Earlier models check signatures only, and
// their requests are forwarded with the thinking settings as received.
// Which models bind is the model registry's to say (config's
// thinking_binding), given to New with BindsThinking.

// BindingBeta is the anthropic-beta value that enables block_binding.
const BindingBeta = "thinking-binding-controls-2026-08-01"

var thinkingBlock = regexp.MustCompile(`"type"\s*:\s*"(?:redacted_)?thinking"`)

// Finish implements view.Finisher: see the package's note on thinking
// blocks above.
func (c *Codec) Finish(in *view.Request, out []byte) ([]byte, []view.Header, error) {
	if c.bindsThinking == nil || !c.bindsThinking(in.Model) {
		return out, nil, nil
	}
	d := 0
	for d < len(out) && d < len(in.Body) && out[d] == in.Body[d] {
		d++
	}
	// A quoted "type":"thinking" outside a string is a block: inside one,
	// its quotes would be escaped.
	if !thinkingBlock.Match(out[d:]) {
		return out, nil, nil
	}
	obj, ok := jsonscan.ScanObject(out, "messages")
	if !ok {
		return out, nil, nil
	}
	sp, ok := obj.Get("thinking")
	if !ok {
		return out, nil, nil
	}
	th := gjson.ParseBytes(out[sp[0]:sp[1]])
	if !th.IsObject() || th.Get("type").Str == "disabled" || th.Get("block_binding").Exists() {
		// Thinking off, or the caller chose the behaviour.
		return out, nil, nil
	}
	ins := `"block_binding":{"prefix_mismatch_behavior":"drop_block"}`
	if len(th.Map()) > 0 {
		ins += ","
	}
	body := make([]byte, 0, len(out)+len(ins))
	body = append(body, out[:sp[0]+1]...)
	body = append(body, ins...)
	body = append(body, out[sp[0]+1:]...)
	return body, []view.Header{{Name: "Anthropic-Beta", Value: BindingBeta}}, nil
}
