package chat

import (
	"testing"

	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// TestParseACopyAgain: background work parses a copy of a parsed request
// (its items copied, Parsed cleared). The copy must come out as the
// original did, and the original must not change: parsing appended to
// the calls the two share, so the copy's steps held every call twice and
// its extractive summaries differed from the request's own.
func TestParseACopyAgain(t *testing.T) {
	c := New(tokenizer.New(tokenizer.Options{}))
	body := `{"model":"gpt-4o","messages":[{"role":"system","content":"s"},{"role":"user","content":"u"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"grep","arguments":"{\"p\":1}"}},` +
		`{"id":"b","type":"function","function":{"name":"read","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"a","content":"x"},{"role":"tool","tool_call_id":"b","content":"y"}]}`
	r, err := c.Scan([]byte(body), func(string) string { return "o200k_base" })
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Parse(r); err != nil {
		t.Fatal(err)
	}
	// The calls' backing array has room: an append by the copy's parse
	// would write into the original's.
	r.Items[2].Calls = append(make([]view.Call, 0, 8), r.Items[2].Calls...)
	cp := *r
	cp.Items = append([]view.Item(nil), r.Items...)
	cp.Parsed = false
	if err := c.Parse(&cp); err != nil {
		t.Fatal(err)
	}
	for name, req := range map[string]*view.Request{"original": r, "copy": &cp} {
		calls := req.Items[2].Calls
		if len(calls) != 2 || calls[0].ID != "a" || calls[1].ID != "b" {
			t.Errorf("%s: calls %+v, want a and b once", name, calls)
		}
	}
	if cap(r.Items[2].Calls) == 8 && len(r.Items[2].Calls[:3]) == 3 && r.Items[2].Calls[:3][2].ID != "" {
		t.Errorf("the copy's parse wrote into the original's calls: %+v", r.Items[2].Calls[:3])
	}
}

// TestParseCalls: each tool call's id, name and arguments (unescaped), and
// the span of its arguments string in the body, whatever the white space
// and field order around it.
func TestParseCalls(t *testing.T) {
	c := New(tokenizer.New(tokenizer.Options{}))
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"u"},` +
		`{"role":"assistant", "tool_calls": [ {"type":"function","function":{"arguments":"{\"p\":\"a\\\"b\"}", "name":"grep"},"id":"a"} ,` +
		"\n" + `{"id":"b","function":{"name":"read","arguments":{"x":1}}}, {"id":"c","function":{"name":"ls","arguments":""}}], "content":null},` +
		`{"role":"tool","tool_call_id":"a","content":"x"},{"role":"tool","tool_call_id":"b","content":"y"},{"role":"tool","tool_call_id":"c","content":"z"}]}`
	r, err := c.Scan([]byte(body), func(string) string { return tokenizer.O200kBase })
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Parse(r); err != nil {
		t.Fatal(err)
	}
	calls := r.Items[1].Calls
	want := []struct{ id, name, args, span string }{
		{"a", "grep", `{"p":"a\"b"}`, `"{\"p\":\"a\\\"b\"}"`},
		{"b", "read", `{"x":1}`, ""},
		{"c", "ls", "", `""`},
	}
	if len(calls) != len(want) {
		t.Fatalf("%d calls: %+v", len(calls), calls)
	}
	for i, w := range want {
		got := calls[i]
		sp := ""
		if got.ArgsSpan[1] > 0 {
			sp = body[got.ArgsSpan[0]:got.ArgsSpan[1]]
		}
		if got.ID != w.id || got.Name != w.name || got.Args != w.args || sp != w.span {
			t.Errorf("call %d: %q %q %q span %q, want %+v", i, got.ID, got.Name, got.Args, sp, w)
		}
	}
}
