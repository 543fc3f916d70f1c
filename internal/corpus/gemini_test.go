package corpus

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
)

// TestGeminiForm converts a session with every kind of message into
// Gemini form: every request is valid for the strict fake (roles
// alternate, each functionResponse answers the call before it by id and
// name, signatures it issued), and an assistant message with nothing to
// send opens no request.
func TestGeminiForm(t *testing.T) {
	call := func(id, name, args string) ToolCall {
		return ToolCall{ID: id, Type: "function", Function: Function{Name: name, Arguments: args}}
	}
	s := &Session{Name: "x", Format: "test", Tools: []string{"bash", "read"}, Messages: []Message{
		{Role: "system", Content: Str("You are an agent.")},
		{Role: "user", Content: Str("Fix it")},
		{Role: "assistant", Content: Str("Looking."), Reasoning: "Start with ls.", ToolCalls: []ToolCall{call("c1", "bash", `{"command": "ls"}`)}},
		{Role: "tool", ToolCallID: "c1", Content: Str("a.go")},
		{Role: "assistant", Content: Str(""), ToolCalls: []ToolCall{call("c2", "bash", `{"command": "grep -n '<div>' a.go && cat a.go"}`), call("c3", "read", `not json`)}},
		{Role: "tool", ToolCallID: "c2", Content: Str("package a")},
		{Role: "tool", ToolCallID: "c3", Content: Str("")},
		{Role: "user", Content: Str("also check b")},
		{Role: "assistant", Content: Str(""), Reasoning: "Nothing to say."},
		{Role: "user", Content: Str("and?")},
		{Role: "assistant", Content: Str("Done.")},
		{Role: "assistant", Content: Str("Really.")},
		{Role: "user", Content: Str("thanks")},
	}}
	g := Gemini(s)
	// Before messages 2, 4 and 10, and the whole session; message 8 sends
	// nothing, message 11 shares message 10's content.
	if g.Turns() != 4 {
		t.Fatalf("%d turns", g.Turns())
	}
	for k := range g.Turns() {
		body, _ := g.Request(k)
		if err := fakeupstream.ValidateGemini(body, fakeupstream.Signer{}); err != nil {
			t.Fatalf("request %d rejected: %v\n%s", k, err, body)
		}
		if n := len(gjson.GetBytes(body, "contents").Array()); n != g.Contents(k) {
			t.Errorf("request %d: %d contents, want %d", k, n, g.Contents(k))
		}
	}
	body, _ := g.Request(3)
	var shape []string
	gjson.GetBytes(body, "contents").ForEach(func(_, c gjson.Result) bool {
		var parts []string
		c.Get("parts").ForEach(func(_, p gjson.Result) bool {
			switch {
			case p.Get("functionCall").Exists():
				parts = append(parts, "call:"+p.Get("functionCall.id").String())
			case p.Get("functionResponse").Exists():
				parts = append(parts, "response:"+p.Get("functionResponse.id").String()+":"+p.Get("functionResponse.name").String())
			default:
				parts = append(parts, p.Get("text").String())
			}
			if p.Get("thoughtSignature").Exists() {
				parts[len(parts)-1] += "+sig"
			}
			return true
		})
		shape = append(shape, c.Get("role").String()+"["+strings.Join(parts, " ")+"]")
		return true
	})
	want := "user[" + geminiSessionContext + " Fix it] model[Looking. call:c1+sig] user[response:c1:bash] " +
		"model[call:c2+sig call:c3] user[response:c2:bash response:c3:read also check b and?] model[Done. Really.] user[thanks]"
	if got := strings.Join(shape, " "); got != want {
		t.Errorf("contents\n%s\nwant\n%s", got, want)
	}
	root := gjson.ParseBytes(body)
	if got := root.Get("systemInstruction").Raw; got != `{"parts":[{"text":"You are an agent."}]}` {
		t.Errorf("systemInstruction %s", got)
	}
	if got := root.Get("contents.1.parts.1.functionCall.args").Raw; got != `{"command":"ls"}` {
		t.Errorf("args %s", got)
	}
	if got := root.Get("contents.3.parts.1.functionCall.args.arguments").String(); got != "not json" {
		t.Errorf("arguments that are no object: %q", got)
	}
	if got := root.Get("contents.2.parts.0.functionResponse.response").Raw; got != `{"output":"a.go"}` {
		t.Errorf("response %s", got)
	}
	var keys []string
	root.ForEach(func(k, _ gjson.Result) bool { keys = append(keys, k.String()); return true })
	if got := strings.Join(keys, ","); got != "contents,systemInstruction,tools,generationConfig" {
		t.Errorf("keys %s", got)
	}
	if got := root.Get("tools.0.functionDeclarations.#.name").Raw; got != `["bash","read"]` {
		t.Errorf("tools %s", got)
	}
	if b0, _ := g.Request(0); len(gjson.GetBytes(b0, "contents").Array()) != 1 {
		t.Errorf("first request %s", b0)
	}
	// Each request is the next one's prefix.
	for k := 1; k < g.Turns(); k++ {
		a, _ := g.Request(k - 1)
		b, _ := g.Request(k)
		pa, pb := gjson.GetBytes(a, "contents").Raw, gjson.GetBytes(b, "contents").Raw
		if !strings.HasPrefix(pb, strings.TrimSuffix(pa, "]")) {
			t.Errorf("request %d does not extend request %d", k, k-1)
		}
	}
	if _, err := g.Request(4); err == nil {
		t.Error("request past the end")
	}
}
