package gemini

import (
	"fmt"
	"strings"
	"testing"
)

// escapeHeavy is a tool output as agents read them: source lines with
// tabs, quotes, backslashes and newlines, each of which the request's JSON
// escapes.
func escapeHeavy(lines int) string {
	var b strings.Builder
	for i := 0; i < lines; i++ {
		fmt.Fprintf(&b, "%4d\t\tif err := parse(\"%d\\n\", `a\\b`); err != nil {\n", i+1, i)
	}
	return b.String()
}

// TestCountStructuredByText: a response's output and a call's args count
// as their text (keys, values, a delimiter pair a string), not as the
// escapes of the request's JSON: an output costs about what the same text
// costs as a text part, and nested values count too.
func TestCountStructuredByText(t *testing.T) {
	c := New(sharedCounter).WithModel("gemini-2.5-pro")
	out := escapeHeavy(200)
	count := func(parts ...any) int {
		contents := []string{
			mustJSON(map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Fix it."}}}),
			mustJSON(map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"id": "c1", "name": "run", "args": map[string]any{"command": out}}}}}),
			mustJSON(map[string]any{"role": "user", "parts": parts}),
		}
		r := scanParse(t, c, body(contents))
		return r.Items[2].Tokens
	}
	text := count(map[string]any{"text": out})
	resp := count(map[string]any{"functionResponse": map[string]any{"id": "c1", "name": "run", "response": map[string]any{"output": out}}})
	if d := resp - text; d < 0 || d > 12 {
		t.Fatalf("output: %d tokens as a response, %d as text: a response should cost its text and a few tokens", resp, text)
	}
	nested := count(map[string]any{"functionResponse": map[string]any{"id": "c1", "name": "run", "response": map[string]any{
		"output": out, "exit": map[string]any{"code": 1, "lines": []any{out, true}}}}})
	if d := nested - 2*text; d < 0 || d > 30 {
		t.Fatalf("nested response: %d tokens, its two outputs %d each", nested, text)
	}
	r := scanParse(t, c, body([]string{
		mustJSON(map[string]any{"role": "user", "parts": []any{map[string]any{"text": out}}}),
		mustJSON(map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"id": "c1", "name": "run", "args": map[string]any{"command": out}}}}}),
		mustJSON(map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"id": "c1", "name": "run", "response": map[string]any{"output": "ok"}}}}}),
	}))
	if d := r.Items[1].Tokens - r.Items[0].Tokens; d < 0 || d > 12 {
		t.Fatalf("call: %d tokens, its argument as text %d", r.Items[1].Tokens, r.Items[0].Tokens)
	}
}
