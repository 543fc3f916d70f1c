package eval

import "testing"

// TestLabelOf: a native form's session, already named with its form, is
// not named with it twice in the checks' lines.
func TestLabelOf(t *testing.T) {
	for _, c := range [][3]string{{"x.jsonl", "chat", "x.jsonl [chat]"}, {"x.jsonl [gemini]", "gemini", "x.jsonl [gemini]"}, {"x [chat]", "messages", "x [chat] [messages]"}} {
		if got := labelOf(c[0], c[1]); got != c[2] {
			t.Errorf("labelOf(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}
