package gemini

import (
	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Sniffer = (*Codec)(nil)

// Sniff implements view.Sniffer: a top-level contents array whose first
// element has parts (no other format has either).
func (*Codec) Sniff(body []byte) bool {
	g := gjson.ParseBytes(body)
	return g.IsObject() && g.Get("contents").IsArray() && g.Get("contents.0.parts").IsArray()
}
