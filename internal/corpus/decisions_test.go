package corpus

import (
	"reflect"
	"testing"
)

// TestDetectDecisions: the first sentence of 30 characters or more of an
// assistant message that changes a file, by an edit tool or a shell
// command that writes; not of messages that only read, view or plan.
func TestDetectDecisions(t *testing.T) {
	call := func(name, args string) []ToolCall {
		return []ToolCall{{ID: "c", Type: "function", Function: Function{Name: name, Arguments: args}}}
	}
	s := &Session{Messages: []Message{
		{Role: "system", Content: Str("sys")},
		{Role: "user", Content: Str("fix it")},
		{Role: "assistant", Content: Str("Let me read the parser first to see the flow."), ToolCalls: call("Read", `{"file_path":"a.py"}`)},
		{Role: "assistant", Content: Str("Interesting! The sign is dropped before the unit is parsed. So I change it:\nmore"), ToolCalls: call("Edit", `{"file_path":"a.py"}`)},
		{Role: "assistant", Content: Str("I will track the remaining work in a to-do list."), ToolCalls: call("TodoWrite", `{"todos":[]}`)},
		{Role: "assistant", Content: Str("Let me view the editor's copy of the file now."), ToolCalls: call("str_replace_editor", `{"command":"view","path":"a.py"}`)},
		{Role: "assistant", Content: Str("THOUGHT: Now I need to patch the serializer to use qualname."), ToolCalls: call("bash", `{"command":"sed -i 's/__name__/__qualname__/' s.py"}`)},
		{Role: "assistant", Content: Str("Now I need to patch the serializer to use qualname."), ToolCalls: call("bash", `{"command":"cat > s.py <<'EOF'\nx\nEOF"}`)},
		{Role: "assistant", Content: Str("Run the tests to see whether the change holds up."), ToolCalls: call("bash", `{"command":"python -m pytest > out.txt"}`)},
		{Role: "assistant", Content: Str("Short."), ToolCalls: call("Write", `{"file_path":"b.py"}`)},
	}}
	want := []Fact{
		{"decision", "The sign is dropped before the unit is parsed."},
		{"decision", "Now I need to patch the serializer to use qualname."},
	}
	if got := DetectDecisions(s); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
