package chat

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

var testTool = view.Tool{Name: "condense_recall", Description: "Recall.", Schema: `{"type":"object"}`}

func TestAddTool(t *testing.T) {
	c := New(tokenizer.New(tokenizer.Options{}))
	cases := []struct {
		name, body string
		ok         bool
		tools      int
	}{
		{"appended after the agent's tools", `{"model":"m","tools":[{"type":"function","function":{"name":"Read"}}],"messages":[]}`, true, 2},
		{"tools made when absent", `{"model":"m","messages":[]}`, true, 1},
		{"tools null", `{"model":"m","tools":null,"messages":[]}`, true, 1},
		{"tool_choice none", `{"model":"m","tool_choice":"none","tools":[],"messages":[]}`, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, ok, err := c.AddTool([]byte(tc.body), testTool)
			if err != nil || ok != tc.ok {
				t.Fatalf("ok %v err %v", ok, err)
			}
			if !ok {
				if string(out) != tc.body {
					t.Errorf("body changed: %s", out)
				}
				return
			}
			tools := gjson.GetBytes(out, "tools").Array()
			if len(tools) != tc.tools || tools[len(tools)-1].Get("function.name").String() != "condense_recall" {
				t.Errorf("tools %s", gjson.GetBytes(out, "tools").Raw)
			}
			again, _, _ := c.AddTool([]byte(tc.body), testTool)
			if string(again) != string(out) {
				t.Error("the same request got different bytes")
			}
		})
	}
}

func TestAnswerAndTurn(t *testing.T) {
	c := New(tokenizer.New(tokenizer.Options{}))
	answer := `{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"Looking.","tool_calls":[` +
		`{"id":"c1","type":"function","function":{"name":"Read","arguments":"{}"}},` +
		`{"id":"c2","type":"function","function":{"name":"condense_recall","arguments":"{\"query\":\"x\"}"}}]}}]}`
	a, err := c.ReadAnswer([]byte(answer))
	if err != nil || len(a.Calls) != 2 || a.Calls[1].Name != "condense_recall" || a.Calls[1].Args != `{"query":"x"}` {
		t.Fatalf("answer %+v %v", a, err)
	}
	recall := func(c view.ToolCall) bool { return c.Name == "condense_recall" }
	keepRecall := func(_ int, c view.ToolCall) bool { return recall(c) }
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	out, err := c.AppendTurn([]byte(body), a, keepRecall, []view.ToolResult{{CallID: "c2", Text: "found"}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := gjson.GetBytes(out, "messages").Array()
	if len(msgs) != 3 || len(msgs[1].Get("tool_calls").Array()) != 1 || msgs[1].Get("tool_calls.0.id").String() != "c2" ||
		msgs[2].Get("tool_call_id").String() != "c2" || msgs[2].Get("content").String() != "found" {
		t.Errorf("turn appended: %s", out)
	}
	dropped, err := c.DropCalls([]byte(answer), recall)
	if err != nil || strings.Contains(string(dropped), "condense_recall") || gjson.GetBytes(dropped, "choices.0.message.tool_calls.#").Int() != 1 {
		t.Errorf("dropped: %s %v", dropped, err)
	}
	only := strings.Replace(answer, `{"id":"c1","type":"function","function":{"name":"Read","arguments":"{}"}},`, "", 1)
	dropped, _ = c.DropCalls([]byte(only), recall)
	if gjson.GetBytes(dropped, "choices.0.finish_reason").String() != "stop" || gjson.GetBytes(dropped, "choices.0.message.tool_calls").Exists() {
		t.Errorf("all calls dropped: %s", dropped)
	}
}

func TestStreamRounds(t *testing.T) {
	s := New(tokenizer.New(tokenizer.Options{})).Stream("condense_recall")
	events := []struct {
		ev   string
		kind view.EventKind
	}{
		{`data: {"choices":[{"delta":{"role":"assistant","content":"Hi"}}]}`, view.EventPass},
		{`data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"condense_recall","arguments":"{\"qu"}}]}}]}`, view.EventCall},
		{`data: {"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ery\":\"x\"}"}}]}}]}`, view.EventPass},
		{`data: [DONE]`, view.EventPass},
	}
	for i, e := range events {
		kind, out, _ := s.Event([]byte(e.ev))
		if kind != e.kind || string(out) != e.ev+"\n\n" {
			t.Errorf("event %d: kind %v out %q", i, kind, out)
		}
	}
	a := s.Answer()
	if len(a.Calls) != 1 || a.Calls[0].ID != "c1" || a.Calls[0].Args != `{"query":"x"}` {
		t.Fatalf("answer %+v", a)
	}
	s.Next()
	_, out, _ := s.Event([]byte(`data: {"choices":[{"delta":{"role":"assistant","content":"Done"}}]}`))
	if strings.Contains(string(out), "role") || !strings.Contains(string(out), "Done") {
		t.Errorf("a later round's role delta: %s", out)
	}
	if len(s.Answer().Calls) != 0 {
		t.Error("the next round starts with the last round's calls")
	}
}
