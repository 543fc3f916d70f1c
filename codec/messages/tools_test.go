package messages

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

func recallCall(c view.ToolCall) bool { return c.Name == "condense_recall" }

func TestToolsAddAndDrop(t *testing.T) {
	c := New(tokenizer.New(tokenizer.Options{}))
	tool := view.Tool{Name: "condense_recall", Description: "Recall.", Schema: `{"type":"object"}`}
	out, ok, err := c.AddTool([]byte(`{"model":"m","tools":[{"name":"Read","input_schema":{}}],"messages":[]}`), tool)
	if err != nil || !ok || gjson.GetBytes(out, "tools.1.input_schema.type").String() != "object" {
		t.Fatalf("add: %s %v %v", out, ok, err)
	}
	if _, ok, _ := c.AddTool([]byte(`{"tool_choice":{"type":"none"},"messages":[]}`), tool); ok {
		t.Error("added to a request whose tool_choice is none")
	}
	answer := `{"content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"u1","name":"condense_recall","input":{"query":"x"}}],"stop_reason":"tool_use"}`
	dropped, err := c.DropCalls([]byte(answer), recallCall)
	if err != nil || strings.Contains(string(dropped), "condense_recall") || gjson.GetBytes(dropped, "stop_reason").String() != "end_turn" {
		t.Errorf("dropped: %s %v", dropped, err)
	}
	a, _ := c.ReadAnswer([]byte(answer))
	turn, err := c.AppendTurn([]byte(`{"messages":[{"role":"user","content":"hi"}]}`), a, func(_ int, c view.ToolCall) bool { return recallCall(c) }, []view.ToolResult{{CallID: "u1", Text: "found"}})
	if err != nil || gjson.GetBytes(turn, "messages.1.content.0.type").String() != "thinking" ||
		gjson.GetBytes(turn, "messages.2.content.0.tool_use_id").String() != "u1" {
		t.Errorf("turn: %s %v", turn, err)
	}
}

// TestStreamRounds: a later round drops its message_start and numbers
// its blocks after those the agent received (the blocks before each
// earlier round's first call).
func TestStreamRounds(t *testing.T) {
	s := New(tokenizer.New(tokenizer.Options{})).Stream("condense_recall")
	ev := func(name, data string) (view.EventKind, string, int) {
		k, out, call := s.Event([]byte("event: " + name + "\ndata: " + data))
		return k, string(out), call
	}
	ev("message_start", `{"type":"message_start","message":{}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`)
	ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`)
	ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}`)
	if k, _, call := ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"u1","name":"condense_recall","input":{}}}`); k != view.EventCall || call != 0 {
		t.Fatalf("tool_use start: kind %v call %d", k, call)
	}
	ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"x\"}"}}`)
	a := s.Answer()
	if len(a.Calls) != 1 || a.Calls[0].Args != `{"query":"x"}` {
		t.Fatalf("answer %+v", a)
	}
	s.Next()
	if k, _, _ := ev("message_start", `{"type":"message_start","message":{}}`); k != view.EventDrop {
		t.Error("a later round's message_start is not dropped")
	}
	_, out, _ := ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	if gjson.Get(strings.TrimPrefix(strings.SplitN(out, "\n", 2)[1], "data: "), "index").Int() != 1 {
		t.Errorf("the next round's first block is not numbered after the one received: %s", out)
	}
}

// TestStreamRelease: the dropped tool_use blocks leave the released
// events, the blocks after them are numbered on without a gap, and the
// stop_reason is end_turn when no tool_use is left.
func TestStreamRelease(t *testing.T) {
	recall := func(_ int, c view.ToolCall) bool { return c.Name == "condense_recall" }
	block := func(idx int, typ, name string) []string {
		start := `{"type":"content_block_start","index":` + fmt.Sprint(idx) + `,"content_block":{"type":"` + typ + `"`
		if typ == "tool_use" {
			start += `,"id":"u` + fmt.Sprint(idx) + `","name":"` + name + `","input":{}`
		} else {
			start += `,"text":""`
		}
		return []string{"event: content_block_start\ndata: " + start + "}}",
			"event: content_block_stop\ndata: " + `{"type":"content_block_stop","index":` + fmt.Sprint(idx) + `}`}
	}
	cases := []struct {
		name    string
		blocks  [][]string
		stop    string
		indexes []int64
	}{
		{"recall alone", [][]string{block(0, "text", ""), block(1, "tool_use", "condense_recall")}, "end_turn", []int64{0}},
		{"recall then Read", [][]string{block(0, "text", ""), block(1, "tool_use", "condense_recall"), block(2, "tool_use", "Read")}, "tool_use", []int64{0, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tokenizer.New(tokenizer.Options{})).Stream("condense_recall")
			s.Event([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}"))
			var held []view.Held
			holding := false
			events := []string{}
			for _, b := range tc.blocks {
				events = append(events, b...)
			}
			events = append(events, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"}}",
				"event: message_stop\ndata: {\"type\":\"message_stop\"}")
			for _, e := range events {
				kind, out, call := s.Event([]byte(e))
				holding = holding || kind == view.EventCall
				if holding {
					held = append(held, view.Held{Event: out, Call: call})
				}
			}
			out := string(s.Release(held, recall))
			if strings.Contains(out, "condense_recall") {
				t.Errorf("the recall block was released:\n%s", out)
			}
			var stop string
			var starts []int64
			for _, l := range strings.Split(out, "\n") {
				d := gjson.Parse(strings.TrimPrefix(l, "data: "))
				if v := d.Get("delta.stop_reason").String(); v != "" {
					stop = v
				}
				if d.Get("type").String() == "content_block_start" {
					starts = append(starts, d.Get("index").Int())
				}
			}
			if stop != tc.stop {
				t.Errorf("stop_reason %q, want %q", stop, tc.stop)
			}
			// The text block (0) went before the hold; what is held
			// starts at the first call.
			if want := tc.indexes[1:]; fmt.Sprint(starts) != fmt.Sprint(want) {
				t.Errorf("held blocks start at %v, want %v:\n%s", starts, want, out)
			}
		})
	}
}
