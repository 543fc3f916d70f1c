package chat

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/answer"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Tools = (*Codec)(nil)

// AddTool implements view.Tools: a function tool appended to "tools"
// (made when absent); not for a request whose tool_choice is "none", nor
// for one that asks for several choices (n > 1: the proxy could continue
// only one of them) or declares the legacy "functions" (tools beside them
// would be a request of two kinds).
func (*Codec) AddTool(body []byte, t view.Tool) ([]byte, bool, error) {
	if gjson.GetBytes(body, "tool_choice").String() == "none" || gjson.GetBytes(body, "n").Int() > 1 ||
		gjson.GetBytes(body, "functions").Exists() {
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

// legacyID is the id given to a legacy function_call (which has none) so
// that it can be answered as a tool call.
func legacyID(name, args string) string {
	h := fnv.New64a()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write([]byte(args))
	return fmt.Sprintf("call_fc_%016x", h.Sum64())
}

// toolCallJSON is a call as one of a message's tool_calls.
func toolCallJSON(c view.ToolCall) string {
	return fmt.Sprintf(`{"id":%s,"type":"function","function":{"name":%s,"arguments":%s}}`, answer.Quote(c.ID), answer.Quote(c.Name), answer.Quote(c.Args))
}

// messageCalls reads a message's calls: its tool_calls, then its legacy
// function_call (answered as a tool call of a made-up id).
func messageCalls(msg gjson.Result, each func(c view.ToolCall, raw string)) {
	msg.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		each(callOf(tc), tc.Raw)
		return true
	})
	if fc := msg.Get("function_call"); fc.IsObject() {
		c := view.ToolCall{Name: fc.Get("name").String(), Args: fc.Get("arguments").String()}
		c.ID = legacyID(c.Name, c.Args)
		each(c, toolCallJSON(c))
	}
}

// ReadAnswer implements view.Tools: the first choice's message (the one
// a recall round continues; DropCalls sees to the others).
func (*Codec) ReadAnswer(body []byte) (view.Answer, error) {
	if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() {
		return view.Answer{}, errors.New("chat: answer is not a JSON object")
	}
	msg := gjson.GetBytes(body, "choices.0.message")
	t := &turn{content: msg.Get("content").String()}
	a := view.Answer{Turn: t}
	messageCalls(msg, func(c view.ToolCall, raw string) {
		a.Calls = append(a.Calls, c)
		t.calls = append(t.calls, raw)
	})
	return a, nil
}

// AppendTurn implements view.Tools: an assistant message with the kept
// calls, then a tool message per result.
func (*Codec) AppendTurn(body []byte, a view.Answer, keep func(int, view.ToolCall) bool, results []view.ToolResult) ([]byte, error) {
	t, _ := a.Turn.(*turn)
	if t == nil {
		return nil, errors.New("chat: no turn to append")
	}
	var calls []string
	for i, c := range a.Calls {
		if keep(i, c) && i < len(t.calls) {
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

// DropCalls implements view.Tools: the calls leave every choice's
// tool_calls (and its legacy function_call); a choice left without a call
// ends its turn (finish_reason "stop").
func (*Codec) DropCalls(body []byte, drop func(view.ToolCall) bool) ([]byte, error) {
	out := body
	var err error
	gjson.GetBytes(body, "choices").ForEach(func(k, ch gjson.Result) bool {
		msg := ch.Get("message")
		var kept []string
		removed, left := 0, 0
		msg.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
			if drop(callOf(tc)) {
				removed++
			} else {
				kept = append(kept, tc.Raw)
				left++
			}
			return true
		})
		base := "choices." + k.String() + ".message"
		if msg.Get("tool_calls").Exists() && removed > 0 {
			if len(kept) > 0 {
				out, err = sjson.SetRawBytes(out, base+".tool_calls", []byte("["+strings.Join(kept, ",")+"]"))
			} else {
				out, err = sjson.DeleteBytes(out, base+".tool_calls")
			}
		}
		if fc := msg.Get("function_call"); err == nil && fc.IsObject() {
			c := view.ToolCall{Name: fc.Get("name").String(), Args: fc.Get("arguments").String()}
			c.ID = legacyID(c.Name, c.Args)
			if drop(c) {
				removed++
				out, err = sjson.DeleteBytes(out, base+".function_call")
			} else {
				left++
			}
		}
		if err == nil && removed > 0 && left == 0 {
			out, err = sjson.SetBytes(out, "choices."+k.String()+".finish_reason", "stop")
		}
		return err == nil
	})
	if err != nil {
		return nil, fmt.Errorf("chat: dropping calls: %w", err)
	}
	return out, nil
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

// legacyIndex is the call index a legacy function_call delta is kept
// under (it has none).
const legacyIndex = -1

type callAcc struct {
	index    int64 // the chunks' index of the call
	id, name string
	args     strings.Builder
}

// call returns the call of the chunks' index idx, and whether it begins
// here.
func (s *stream) call(idx int64) (int, bool) {
	if s.byIndex == nil {
		s.byIndex = map[int64]int{}
	}
	i, ok := s.byIndex[idx]
	if !ok {
		i = len(s.calls)
		s.byIndex[idx] = i
		s.calls = append(s.calls, &callAcc{index: idx})
	}
	return i, !ok
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
		i, begins := s.call(tc.Get("index").Int())
		if begins {
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
	if fc := delta.Get("function_call"); fc.IsObject() {
		i, begins := s.call(legacyIndex)
		if begins {
			kind = view.EventCall
		}
		c := s.calls[i]
		if n := fc.Get("name").String(); n != "" {
			c.name = n
		}
		c.args.WriteString(fc.Get("arguments").String())
		call = i
	}
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
		tc := view.ToolCall{ID: c.id, Name: c.name, Args: c.args.String()}
		if c.index == legacyIndex {
			tc.ID = legacyID(tc.Name, tc.Args)
		}
		a.Calls = append(a.Calls, tc)
		t.calls = append(t.calls, toolCallJSON(tc))
	}
	return a
}

func (s *stream) Next() {
	s.round++
	s.content.Reset()
	s.calls, s.byIndex = nil, nil
}

func (*stream) KeepAlive() []byte { return []byte(": condense-proxy: answering a recall\n\n") }

// Release implements view.AnswerStream: the dropped calls leave the
// chunks' tool_calls (a chunk left with nothing to say is left out), the
// calls after them are numbered on, and when no call is left the
// finish_reason is "stop".
func (s *stream) Release(held []view.Held, drop func(int, view.ToolCall) bool) []byte {
	a := s.Answer()
	gone := map[int64]bool{}
	renumber := map[int64]int64{}
	var next int64
	left := false
	for i, c := range a.Calls {
		idx := s.calls[i].index
		if drop(i, c) {
			gone[idx] = true
			continue
		}
		left = true
		if idx != legacyIndex {
			renumber[idx] = next
			next++
		}
	}
	var out bytes.Buffer
	if len(gone) == 0 {
		for _, h := range held {
			out.Write(h.Event)
		}
		return out.Bytes()
	}
	for _, h := range held {
		name, data := answer.Parse(bytes.TrimRight(h.Event, "\n"))
		if data == nil || !gjson.ValidBytes(data) {
			out.Write(h.Event)
			continue
		}
		changed, keep := releaseChunk(data, gone, renumber, left)
		switch {
		case !keep:
		case bytes.Equal(changed, data):
			out.Write(h.Event)
		default:
			out.Write(answer.Format(name, changed))
		}
	}
	return out.Bytes()
}

// releaseChunk rewrites one chunk for Release: keep is false when the
// chunk said nothing but the dropped calls.
func releaseChunk(data []byte, gone map[int64]bool, renumber map[int64]int64, left bool) ([]byte, bool) {
	out := data
	var err error
	delta := gjson.GetBytes(data, "choices.0.delta")
	emptied := false
	if tcs := delta.Get("tool_calls"); tcs.IsArray() {
		var kept []string
		tcs.ForEach(func(_, tc gjson.Result) bool {
			idx := tc.Get("index").Int()
			if gone[idx] {
				return true
			}
			raw := tc.Raw
			if n, ok := renumber[idx]; ok && n != idx {
				if b, e := sjson.Set(raw, "index", n); e == nil {
					raw = b
				}
			}
			kept = append(kept, raw)
			return true
		})
		if len(kept) == 0 {
			out, err = sjson.DeleteBytes(out, "choices.0.delta.tool_calls")
			emptied = true
		} else {
			out, err = sjson.SetRawBytes(out, "choices.0.delta.tool_calls", []byte("["+strings.Join(kept, ",")+"]"))
		}
	}
	if err == nil && gone[legacyIndex] && delta.Get("function_call").Exists() {
		out, err = sjson.DeleteBytes(out, "choices.0.delta.function_call")
		emptied = true
	}
	if fr := gjson.GetBytes(out, "choices.0.finish_reason").String(); err == nil && !left && (fr == "tool_calls" || fr == "function_call") {
		out, err = sjson.SetBytes(out, "choices.0.finish_reason", "stop")
	}
	if err != nil {
		return data, true
	}
	if emptied {
		// Nothing left to say: no content, no finish, no usage.
		ch := gjson.GetBytes(out, "choices.0")
		d := ch.Get("delta")
		said := d.Get("content").String() != "" || d.Get("refusal").String() != "" || d.Get("tool_calls").Exists() ||
			d.Get("reasoning_content").String() != "" || d.Get("reasoning").String() != "" ||
			ch.Get("finish_reason").String() != "" || gjson.GetBytes(out, "usage").IsObject()
		if !said {
			return nil, false
		}
	}
	return out, true
}
