package chat

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/answer"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Tools = (*Codec)(nil)

// AddTool implements view.Tools: a function tool appended to "tools"
// (made when absent); not for a request whose tool_choice is "none".
func (*Codec) AddTool(body []byte, t view.Tool) ([]byte, bool, error) {
	if gjson.GetBytes(body, "tool_choice").String() == "none" {
		return body, false, nil
	}
	tool := fmt.Sprintf(`{"type":"function","function":{"name":%s,"description":%s,"parameters":%s}}`, answer.Quote(t.Name), answer.Quote(t.Description), t.Schema)
	return answer.AppendTool(body, tool)
}

// turn is a chat answer's assistant message.
type turn struct {
	content string // the text said (may be empty)
	calls   []string
}

// callOf reads one of a message's tool_calls.
func callOf(tc gjson.Result) view.ToolCall {
	return view.ToolCall{ID: tc.Get("id").String(), Name: tc.Get("function.name").String(), Args: tc.Get("function.arguments").String()}
}

// ReadAnswer implements view.Tools: the first choice's message.
func (*Codec) ReadAnswer(body []byte) (view.Answer, error) {
	if !gjson.ValidBytes(body) {
		return view.Answer{}, errors.New("chat: answer is not JSON")
	}
	msg := gjson.GetBytes(body, "choices.0.message")
	t := &turn{content: msg.Get("content").String()}
	a := view.Answer{Turn: t}
	msg.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		a.Calls = append(a.Calls, callOf(tc))
		t.calls = append(t.calls, tc.Raw)
		return true
	})
	return a, nil
}

// AppendTurn implements view.Tools: an assistant message with the kept
// calls, then a tool message per result.
func (*Codec) AppendTurn(body []byte, a view.Answer, keep func(view.ToolCall) bool, results []view.ToolResult) ([]byte, error) {
	t, _ := a.Turn.(*turn)
	if t == nil {
		return nil, errors.New("chat: no turn to append")
	}
	var calls []string
	for i, c := range a.Calls {
		if keep(c) && i < len(t.calls) {
			calls = append(calls, t.calls[i])
		}
	}
	content := "null"
	if t.content != "" {
		content = answer.Quote(t.content)
	}
	msg := `{"role":"assistant","content":` + content
	if len(calls) > 0 {
		msg += `,"tool_calls":[` + strings.Join(calls, ",") + `]`
	}
	msg += "}"
	out, err := sjson.SetRawBytes(body, "messages.-1", []byte(msg))
	for _, r := range results {
		if err != nil {
			break
		}
		out, err = sjson.SetRawBytes(out, "messages.-1", []byte(`{"role":"tool","tool_call_id":`+answer.Quote(r.CallID)+`,"content":`+answer.Quote(r.Text)+`}`))
	}
	if err != nil {
		return nil, fmt.Errorf("chat: appending a turn: %w", err)
	}
	return out, nil
}

// DropCalls implements view.Tools: the calls leave the first choice's
// tool_calls (and when none is left, the answer ends its turn).
func (*Codec) DropCalls(body []byte, drop func(view.ToolCall) bool) ([]byte, error) {
	var kept []string
	gjson.GetBytes(body, "choices.0.message.tool_calls").ForEach(func(_, tc gjson.Result) bool {
		if !drop(callOf(tc)) {
			kept = append(kept, tc.Raw)
		}
		return true
	})
	if len(kept) > 0 {
		return sjson.SetRawBytes(body, "choices.0.message.tool_calls", []byte("["+strings.Join(kept, ",")+"]"))
	}
	out, err := sjson.DeleteBytes(body, "choices.0.message.tool_calls")
	if err == nil {
		out, err = sjson.SetBytes(out, "choices.0.finish_reason", "stop")
	}
	return out, err
}

// Stream implements view.Tools.
func (*Codec) Stream(string) view.AnswerStream { return &stream{} }

// stream reads a chat answer's chunks ("data: {…}", "data: [DONE]"). A
// later round's chunks continue the agent's message as they are (the
// calls of earlier rounds were held and dropped, so call indexes start
// again at 0); only their role delta is removed.
type stream struct {
	round   int
	content strings.Builder
	calls   []*callAcc
	byIndex map[int64]int
}

type callAcc struct {
	id, name string
	args     strings.Builder
}

func (s *stream) Event(ev []byte) (view.EventKind, []byte, int) {
	_, data := answer.Parse(ev)
	if data == nil || string(data) == "[DONE]" || !gjson.ValidBytes(data) {
		return view.EventPass, answer.End(ev), -1
	}
	delta := gjson.GetBytes(data, "choices.0.delta")
	s.content.WriteString(delta.Get("content").String())
	kind, call := view.EventPass, -1
	delta.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		idx := tc.Get("index").Int()
		if s.byIndex == nil {
			s.byIndex = map[int64]int{}
		}
		i, ok := s.byIndex[idx]
		if !ok {
			i = len(s.calls)
			s.byIndex[idx] = i
			s.calls = append(s.calls, &callAcc{})
			kind = view.EventCall
		}
		c := s.calls[i]
		if id := tc.Get("id").String(); id != "" {
			c.id = id
		}
		if n := tc.Get("function.name").String(); n != "" {
			c.name = n
		}
		c.args.WriteString(tc.Get("function.arguments").String())
		call = i
		return true
	})
	if s.round > 0 && delta.Get("role").Exists() {
		if out, err := sjson.DeleteBytes(data, "choices.0.delta.role"); err == nil {
			return kind, answer.Format("", out), call
		}
	}
	return kind, answer.End(ev), call
}

func (s *stream) Answer() view.Answer {
	t := &turn{content: s.content.String()}
	a := view.Answer{Turn: t}
	for _, c := range s.calls {
		args := c.args.String()
		a.Calls = append(a.Calls, view.ToolCall{ID: c.id, Name: c.name, Args: args})
		t.calls = append(t.calls, fmt.Sprintf(`{"id":%s,"type":"function","function":{"name":%s,"arguments":%s}}`, answer.Quote(c.id), answer.Quote(c.name), answer.Quote(args)))
	}
	return a
}

func (s *stream) Next() {
	s.round++
	s.content.Reset()
	s.calls, s.byIndex = nil, nil
}

func (*stream) KeepAlive() []byte { return []byte(": condense-proxy: answering a recall\n\n") }
