package responses

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

func TestToolsAdd(t *testing.T) {
	c := New(tokenizer.New(tokenizer.Options{}))
	tool := view.Tool{Name: "condense_recall", Description: "Recall.", Schema: `{"type":"object"}`}
	cases := []struct {
		name, body string
		ok         bool
	}{
		{"a conversation", `{"input":[],"tools":[]}`, true},
		{"continuing server-side state", `{"input":[],"previous_response_id":"resp_1"}`, false},
		{"a plain-string input", `{"input":"hi"}`, false},
		{"tool_choice none", `{"input":[],"tool_choice":"none"}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, ok, err := c.AddTool([]byte(tc.body), tool)
			if err != nil || ok != tc.ok {
				t.Fatalf("ok %v err %v", ok, err)
			}
			if ok && gjson.GetBytes(out, "tools.0.name").String() != "condense_recall" {
				t.Errorf("tools %s", out)
			}
		})
	}
}

// TestStreamRounds: a later round drops its created events, numbers its
// items after those the agent received, keeps the first round's response
// id and numbers its events after those sent; response.completed leaves
// out the proxy's calls.
func TestStreamRounds(t *testing.T) {
	s := New(tokenizer.New(tokenizer.Options{})).Stream("condense_recall")
	ev := func(data string) (view.EventKind, gjson.Result) {
		k, out, _ := s.Event([]byte("event: x\ndata: " + data))
		_, d, _ := strings.Cut(string(out), "data: ")
		return k, gjson.Parse(strings.TrimSpace(d))
	}
	ev(`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1"}}`)
	ev(`{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"message"}}`)
	if k, _ := ev(`{"type":"response.output_item.added","sequence_number":2,"output_index":1,"item":{"type":"function_call","call_id":"c1","name":"condense_recall","arguments":""}}`); k != view.EventCall {
		t.Fatal("function_call not a call")
	}
	ev(`{"type":"response.output_item.done","sequence_number":3,"output_index":1,"item":{"type":"function_call","call_id":"c1","name":"condense_recall","arguments":"{}"}}`)
	if len(s.Answer().Calls) != 1 {
		t.Fatalf("answer %+v", s.Answer())
	}
	s.Next()
	if k, _ := ev(`{"type":"response.created","sequence_number":0,"response":{"id":"resp_2"}}`); k != view.EventDrop {
		t.Error("a later round's response.created is not dropped")
	}
	_, d := ev(`{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"message"}}`)
	if d.Get("output_index").Int() != 1 || d.Get("sequence_number").Int() <= 3 {
		t.Errorf("the next round's first item: %s", d.Raw)
	}
	_, d = ev(`{"type":"response.completed","sequence_number":5,"response":{"id":"resp_2","output":[{"type":"message"},{"type":"function_call","name":"condense_recall","call_id":"c9","arguments":"{}"}]}}`)
	if d.Get("response.id").String() != "resp_1" || d.Get("response.output.#").Int() != 1 {
		t.Errorf("response.completed: %s", d.Raw)
	}
}

// TestStreamRelease: a dropped function_call item leaves the released
// events and the output response.completed restates; the items after it
// are numbered on without a gap.
func TestStreamRelease(t *testing.T) {
	s := New(tokenizer.New(tokenizer.Options{})).Stream("")
	events := []string{
		`{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"r1","name":"condense_recall","arguments":""}}`,
		`{"type":"response.function_call_arguments.delta","output_index":0,"delta":"{}"}`,
		`{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":"r1","name":"condense_recall","arguments":"{}"}}`,
		`{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","call_id":"c1","name":"Read","arguments":""}}`,
		`{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","call_id":"c1","name":"Read","arguments":"{}"}}`,
		`{"type":"response.completed","response":{"id":"resp_1","output":[{"type":"function_call","call_id":"r1","name":"condense_recall","arguments":"{}"},{"type":"function_call","call_id":"c1","name":"Read","arguments":"{}"}]}}`,
	}
	var held []view.Held
	for _, e := range events {
		_, out, call := s.Event([]byte("event: x\ndata: " + e))
		held = append(held, view.Held{Event: out, Call: call})
	}
	out := string(s.Release(held, func(_ int, c view.ToolCall) bool { return c.Name == "condense_recall" }))
	if strings.Contains(out, "condense_recall") {
		t.Errorf("the recall call was released:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		d := gjson.Parse(strings.TrimPrefix(l, "data: "))
		if oi := d.Get("output_index"); oi.Exists() && oi.Int() != 0 {
			t.Errorf("the Read item is numbered %d, want 0: %s", oi.Int(), l)
		}
		if d.Get("type").String() == "response.completed" && d.Get("response.output.#").Int() != 1 {
			t.Errorf("response.completed: %s", l)
		}
	}
}
