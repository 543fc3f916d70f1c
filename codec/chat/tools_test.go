package chat

import (
	"fmt"
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

func TestAddToolRefused(t *testing.T) {
	c := New(tokenizer.New(tokenizer.Options{}))
	for name, body := range map[string]string{
		"several choices":  `{"model":"m","n":2,"messages":[]}`,
		"legacy functions": `{"model":"m","functions":[{"name":"Read","parameters":{}}],"messages":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			out, ok, err := c.AddTool([]byte(body), testTool)
			if ok || err != nil || string(out) != body {
				t.Errorf("ok %v err %v body %s", ok, err, out)
			}
		})
	}
}

// TestLegacyFunctionCall: a legacy function_call is a call (of a made-up,
// stable id), appended as a tool call, and dropped with the answer ending
// its turn.
func TestLegacyFunctionCall(t *testing.T) {
	c := New(tokenizer.New(tokenizer.Options{}))
	answer := `{"choices":[{"index":0,"finish_reason":"function_call","message":{"role":"assistant","content":null,"function_call":{"name":"condense_recall","arguments":"{\"query\":\"x\"}"}}}]}`
	a, err := c.ReadAnswer([]byte(answer))
	if err != nil || len(a.Calls) != 1 || a.Calls[0].Name != "condense_recall" || a.Calls[0].ID == "" {
		t.Fatalf("answer %+v %v", a, err)
	}
	out, err := c.AppendTurn([]byte(`{"messages":[{"role":"user","content":"hi"}]}`), a, func(int, view.ToolCall) bool { return true },
		[]view.ToolResult{{CallID: a.Calls[0].ID, Text: "found"}})
	if err != nil || gjson.GetBytes(out, "messages.1.tool_calls.0.id").String() != a.Calls[0].ID ||
		gjson.GetBytes(out, "messages.2.tool_call_id").String() != a.Calls[0].ID {
		t.Errorf("turn: %s %v", out, err)
	}
	dropped, err := c.DropCalls([]byte(answer), func(c view.ToolCall) bool { return c.Name == "condense_recall" })
	if err != nil || strings.Contains(string(dropped), "condense_recall") || gjson.GetBytes(dropped, "choices.0.finish_reason").String() != "stop" {
		t.Errorf("dropped: %s %v", dropped, err)
	}
}

// TestDropCallsEveryChoice: the calls leave every choice, each choice's
// finish_reason saying what is left of it.
func TestDropCallsEveryChoice(t *testing.T) {
	c := New(tokenizer.New(tokenizer.Options{}))
	call := func(id, name string) string {
		return `{"id":"` + id + `","type":"function","function":{"name":"` + name + `","arguments":"{}"}}`
	}
	answer := `{"choices":[` +
		`{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"plain"}},` +
		`{"index":1,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[` + call("a", "condense_recall") + `]}},` +
		`{"index":2,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[` + call("b", "condense_recall") + `,` + call("c", "Read") + `]}}]}`
	out, err := c.DropCalls([]byte(answer), func(c view.ToolCall) bool { return c.Name == "condense_recall" })
	if err != nil || strings.Contains(string(out), "condense_recall") {
		t.Fatalf("dropped: %s %v", out, err)
	}
	for i, want := range []string{"stop", "stop", "tool_calls"} {
		if got := gjson.GetBytes(out, fmt.Sprintf("choices.%d.finish_reason", i)).String(); got != want {
			t.Errorf("choice %d: finish_reason %q, want %q", i, got, want)
		}
	}
	if gjson.GetBytes(out, "choices.2.message.tool_calls.0.id").String() != "c" || gjson.GetBytes(out, "choices.0.message.content").String() != "plain" {
		t.Errorf("what is left: %s", out)
	}
}

// TestStreamRelease: the released events leave the dropped calls out,
// number the others on from 0, and end the turn when no call is left.
func TestStreamRelease(t *testing.T) {
	recall := func(_ int, c view.ToolCall) bool { return c.Name == "condense_recall" }
	cases := []struct {
		name   string
		events []string
		finish string
		has    []string // in the released bytes
		hasNot []string
	}{
		{"recall then Read", []string{
			`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"r1","function":{"name":"condense_recall","arguments":"{}"}}]}}]}`,
			`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c1","function":{"name":"Read","arguments":"{}"}}]}}]}`,
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			`data: [DONE]`,
		}, "tool_calls", []string{`"id":"c1"`, `"index":0,"id":"c1"`, "[DONE]"}, []string{"condense_recall", `"index":1`}},
		{"recall alone", []string{
			`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"r1","function":{"name":"condense_recall","arguments":""}}]}}]}`,
			`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}`,
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			`data: [DONE]`,
		}, "stop", []string{"[DONE]"}, []string{"condense_recall", "tool_calls\"", `"arguments"`}},
		{"legacy", []string{
			`data: {"choices":[{"index":0,"delta":{"function_call":{"name":"condense_recall","arguments":""}}}]}`,
			`data: {"choices":[{"index":0,"delta":{"function_call":{"arguments":"{}"}}}]}`,
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"function_call"}]}`,
		}, "stop", nil, []string{"condense_recall", "function_call"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tokenizer.New(tokenizer.Options{})).Stream("condense_recall")
			var held []view.Held
			for _, e := range tc.events {
				_, out, call := s.Event([]byte(e))
				held = append(held, view.Held{Event: out, Call: call})
			}
			out := string(s.Release(held, recall))
			finish := ""
			for _, l := range strings.Split(out, "\n") {
				if v := gjson.Get(strings.TrimPrefix(l, "data: "), "choices.0.finish_reason").String(); strings.HasPrefix(l, "data: {") && v != "" {
					finish = v
				}
			}
			if finish != tc.finish {
				t.Errorf("finish_reason %q, want %q:\n%s", finish, tc.finish, out)
			}
			for _, h := range tc.has {
				if !strings.Contains(out, h) {
					t.Errorf("released events lack %s:\n%s", h, out)
				}
			}
			for _, h := range tc.hasNot {
				if strings.Contains(out, h) {
					t.Errorf("released events hold %s:\n%s", h, out)
				}
			}
			kept := string(s.Release(held, func(int, view.ToolCall) bool { return false }))
			var all strings.Builder
			for _, h := range held {
				all.Write(h.Event)
			}
			if kept != all.String() {
				t.Error("nothing dropped, but the events changed")
			}
		})
	}
}
