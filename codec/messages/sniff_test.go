package messages

import "testing"

// TestSniff: a top-level system or a block only Messages has claims a
// body; a chat request does not.
func TestSniff(t *testing.T) {
	c := New(nil)
	for body, want := range map[string]bool{
		`{"model":"claude","system":"s"}`: true,
		`{"messages":[{"role":"assistant","content":[{"type" : "tool_use","id":"t","name":"R","input":{}}]}]}`: true,
		`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}]}`:    true,
		`{"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"x","signature":"s"}]}]}`:   true,
		`{"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`:                        false,
		`{"messages":[{"role":"user","content":"say \"type\":\"tool_use\""}]}`:                                 false,
		`not json`: false,
	} {
		if got := c.Sniff([]byte(body)); got != want {
			t.Errorf("Sniff(%s) = %v", body, got)
		}
	}
}
