package messages

import (
	"testing"

	"github.com/condense-proxy/condense-proxy/view"
)

// TestStripExtras: context_management goes, every other byte stays, and
// its beta is named for the proxy to remove; a body without it is
// returned as it is.
func TestStripExtras(t *testing.T) {
	c := New(nil)
	body := `{"model":"claude","context_management":{"edits":[{"type":"clear_thinking_20251015"}]},"messages":[{"role":"user","content":"hi"}]}`
	out, remove := c.StripExtras([]byte(body))
	if string(out) != `{"model":"claude","messages":[{"role":"user","content":"hi"}]}` {
		t.Errorf("stripped: %s", out)
	}
	if len(remove) != 1 || remove[0] != (view.Header{Name: "Anthropic-Beta", Value: ContextManagementBeta}) {
		t.Errorf("remove %v", remove)
	}
	plain := []byte(`{"model":"claude","messages":[]}`)
	if out, _ := c.StripExtras(plain); &out[0] != &plain[0] {
		t.Errorf("a body without the field copied: %s", out)
	}
}
