package messages

import (
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Stripper = (*Codec)(nil)

// ContextManagementBeta is the anthropic-beta value under which requests
// carry context_management (Claude Code sends both every turn).
const ContextManagementBeta = "context-management-2025-06-27"

// StripExtras implements view.Stripper: the top-level
// context_management, and its beta.
func (*Codec) StripExtras(body []byte) ([]byte, []view.Header) {
	if gjson.GetBytes(body, "context_management").Exists() {
		if out, err := sjson.DeleteBytes(body, "context_management"); err == nil {
			body = out
		}
	}
	return body, []view.Header{{Name: "Anthropic-Beta", Value: ContextManagementBeta}}
}
