package proxy

import (
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// ContextManagementBeta is the anthropic-beta value under which Messages
// requests carry context_management (Claude Code sends both every turn).
const ContextManagementBeta = "context-management-2025-06-27"

// stripContextManagement removes a Messages body's top-level
// context_management and its beta from h's anthropic-beta, for upstreams
// that refuse them ("Extra inputs are not permitted"). Every other byte
// of the body stays; a body without the field is returned as it is.
func stripContextManagement(body []byte, h http.Header) []byte {
	if gjson.GetBytes(body, "context_management").Exists() {
		if out, err := sjson.DeleteBytes(body, "context_management"); err == nil {
			body = out
		}
	}
	removeListHeader(h, "Anthropic-Beta", ContextManagementBeta)
	return body
}

// removeListHeader removes value from a comma-separated list header, and
// the header when nothing is left.
func removeListHeader(h http.Header, name, value string) {
	vals := h.Values(name)
	if len(vals) == 0 {
		return
	}
	var kept []string
	changed := false
	for _, v := range vals {
		var parts []string
		for _, e := range strings.Split(v, ",") {
			if strings.TrimSpace(e) == value {
				changed = true
				continue
			}
			parts = append(parts, e)
		}
		if len(parts) > 0 {
			kept = append(kept, strings.TrimSpace(strings.Join(parts, ",")))
		}
	}
	if !changed {
		return
	}
	h.Del(name)
	for _, v := range kept {
		h.Add(name, v)
	}
}
