package messages

import (
	"regexp"

	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Sniffer = (*Codec)(nil)

// anthropicBlocks are the content blocks only Messages has.
var anthropicBlocks = regexp.MustCompile(`"type"\s*:\s*"(?:tool_use|tool_result|thinking|redacted_thinking)"`)

// Sniff implements view.Sniffer: a top-level system (chat puts it in a
// message), or a block only Messages has (tool_use, tool_result,
// thinking).
func (*Codec) Sniff(body []byte) bool {
	obj, _ := jsonscan.ScanObject(body, "messages")
	if _, sys := obj.Get("system"); sys {
		return true
	}
	return anthropicBlocks.Match(body)
}
