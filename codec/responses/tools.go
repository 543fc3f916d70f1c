package responses

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
// (made when absent); not for a request whose tool_choice is "none", nor
// for one continuing state the upstream keeps (previous_response_id,
// conversation), whose turns the proxy could not append.
func (*Codec) AddTool(body []byte, t view.Tool) ([]byte, bool, error) {
	if gjson.GetBytes(body, "tool_choice").String() == "none" || !gjson.GetBytes(body, "input").IsArray() ||
		gjson.GetBytes(body, "previous_response_id").String() != "" || gjson.GetBytes(body, "conversation").Exists() {
		return body, false, nil
	}
	tool := fmt.Sprintf(`{"type":"function","name":%s,"description":%s,"parameters":%s,"strict":false}`, answer.Quote(t.Name), answer.Quote(t.Description), t.Schema)
	return answer.AppendTool(body, tool)
}

func callOf(it gjson.Result) (view.ToolCall, bool) {
	if it.Get("type").String() != "function_call" {
		return view.ToolCall{}, false
	}
	return view.ToolCall{ID: it.Get("call_id").String(), Name: it.Get("name").String(), Args: it.Get("arguments").String()}, true
}

// ReadAnswer implements view.Tools: the response's function_call items.
func (*Codec) ReadAnswer(body []byte) (view.Answer, error) {
	if !gjson.ValidBytes(body) {
		return view.Answer{}, errors.New("responses: answer is not JSON")
	}
	return answer.ReadItems(body, "output", callOf), nil
}

// AppendTurn implements view.Tools: the answer's output items (reasoning
// with its encrypted_content, messages, the kept calls) appended to
// "input", then a function_call_output per result.
func (*Codec) AppendTurn(body []byte, a view.Answer, keep func(int, view.ToolCall) bool, results []view.ToolResult) ([]byte, error) {
	t, _ := a.Turn.(*answer.Turn)
	if t == nil {
		return nil, errors.New("responses: no turn to append")
	}
	out := body
	var err error
	for _, it := range t.Kept(a, keep) {
		if out, err = sjson.SetRawBytes(out, "input.-1", []byte(it)); err != nil {
			return nil, fmt.Errorf("responses: appending a turn: %w", err)
		}
	}
	for _, r := range results {
		item := `{"type":"function_call_output","call_id":` + answer.Quote(r.CallID) + `,"output":` + answer.Quote(r.Text) + `}`
		if out, err = sjson.SetRawBytes(out, "input.-1", []byte(item)); err != nil {
			return nil, fmt.Errorf("responses: appending a result: %w", err)
		}
	}
	return out, nil
}

// DropCalls implements view.Tools: the function_call items leave the
// output.
func (*Codec) DropCalls(body []byte, drop func(view.ToolCall) bool) ([]byte, error) {
	out, _, _, err := answer.DropCalls(body, "output", callOf, drop)
	return out, err
}

// Stream implements view.Tools.
func (*Codec) Stream(proxyTool string) view.AnswerStream { return &stream{hide: proxyTool} }

// stream reads an answer's events (response.created, .in_progress,
// .output_item.added / .done and the events of an item's parts,
// .completed). A later round drops its created and in_progress events,
// numbers its items after the ones the agent received (the items before
// each earlier round's first call), keeps the first round's response id
// and numbers its events after the ones sent.
type stream struct {
	hide   string // calls of this tool leave response.completed's output
	round  int
	offset int64 // items the agent received from earlier rounds
	first  int64 // this round's first call item (-1: none yet)
	seq    int64 // highest sequence_number seen
	base   int64 // added to this round's sequence numbers
	id     string
	items  map[int64]*itemAcc
	order  []int64
}

type itemAcc struct {
	done string // the item of output_item.done
	call int    // index among the calls, -1: not a call
	fc   view.ToolCall
	args strings.Builder
}

func (s *stream) Event(ev []byte) (view.EventKind, []byte, int) {
	name, data := answer.Parse(ev)
	if data == nil || !gjson.ValidBytes(data) {
		return view.EventPass, answer.End(ev), -1
	}
	if s.items == nil {
		s.items, s.first = map[int64]*itemAcc{}, -1
	}
	root := gjson.ParseBytes(data)
	typ := root.Get("type").String()
	if typ == "" {
		typ = name
	}
	if s.id == "" {
		s.id = root.Get("response.id").String()
	}
	kind, call := view.EventPass, -1
	switch typ {
	case "response.created", "response.in_progress", "response.queued":
		if s.round > 0 {
			return view.EventDrop, nil, -1
		}
	}
	oi := root.Get("output_index")
	if oi.Exists() {
		idx := oi.Int()
		it := s.items[idx]
		if typ == "response.output_item.added" {
			it = &itemAcc{call: -1}
			if c, ok := callOf(root.Get("item")); ok {
				it.call, it.fc = s.calls(), c
				kind = view.EventCall
				if s.first < 0 {
					s.first = idx
				}
			}
			s.items[idx] = it
			s.order = append(s.order, idx)
		}
		if it != nil {
			call = it.call
			switch typ {
			case "response.function_call_arguments.delta":
				it.args.WriteString(root.Get("delta").String())
			case "response.output_item.done":
				it.done = root.Get("item").Raw
				if c, ok := callOf(root.Get("item")); ok {
					it.fc = c
				}
			}
		}
	}
	if sn := root.Get("sequence_number"); sn.Exists() {
		s.seq = max(s.seq, sn.Int())
	}
	out := data
	var err error
	if out, err = s.hideCalls(root, out); err != nil {
		return kind, answer.End(ev), call
	}
	if s.round == 0 {
		if len(out) == len(data) {
			return kind, answer.End(ev), call
		}
		return kind, answer.Format(name, out), call
	}
	if oi.Exists() {
		out, err = sjson.SetBytes(out, "output_index", oi.Int()+s.offset)
	}
	if sn := root.Get("sequence_number"); err == nil && sn.Exists() {
		out, err = sjson.SetBytes(out, "sequence_number", sn.Int()+s.base)
	}
	if r := root.Get("response.id"); err == nil && r.Exists() && s.id != "" {
		out, err = sjson.SetBytes(out, "response.id", s.id)
	}
	if err != nil {
		return kind, answer.End(ev), call
	}
	return kind, answer.Format(name, out), call
}

// hideCalls removes the calls of the proxy's tool from the output an
// event restates (response.completed and its kin).
func (s *stream) hideCalls(root gjson.Result, data []byte) ([]byte, error) {
	if s.hide == "" || !root.Get("response.output").IsArray() {
		return data, nil
	}
	out, hidden, _, err := answer.DropCalls(data, "response.output", callOf, func(c view.ToolCall) bool { return c.Name == s.hide })
	if err != nil || hidden == 0 {
		return data, err
	}
	return out, nil
}

// calls counts the call items started so far.
func (s *stream) calls() int {
	n := 0
	for _, it := range s.items {
		if it.call >= 0 {
			n++
		}
	}
	return n
}

func (s *stream) Answer() view.Answer {
	t := &answer.Turn{}
	a := view.Answer{Turn: t}
	for _, idx := range s.order {
		it := s.items[idx]
		raw := it.done
		if it.call >= 0 {
			c := it.fc
			if raw == "" {
				c.Args = it.args.String()
				raw = `{"type":"function_call","call_id":` + answer.Quote(c.ID) + `,"name":` + answer.Quote(c.Name) + `,"arguments":` + answer.Quote(c.Args) + `}`
			}
			a.Calls = append(a.Calls, c)
			t.Calls = append(t.Calls, len(t.Items))
		}
		if raw != "" {
			t.Items = append(t.Items, raw)
		}
	}
	return a
}

func (s *stream) Next() {
	if s.first >= 0 {
		s.offset += s.first
	} else {
		s.offset += int64(len(s.order))
	}
	s.round++
	s.base = s.seq + 1 + s.base
	s.seq = 0
	s.items, s.order, s.first = nil, nil, -1
}

func (*stream) KeepAlive() []byte { return []byte(": condense-proxy: answering a recall\n\n") }

// Release implements view.AnswerStream: the dropped calls' items left
// out (their events, and their place in the output an event restates),
// the items after them numbered on.
func (s *stream) Release(held []view.Held, drop func(int, view.ToolCall) bool) []byte {
	calls := s.Answer().Calls
	gone := map[view.ToolCall]bool{}
	for i, c := range calls {
		if drop(i, c) {
			gone[view.ToolCall{ID: c.ID, Name: c.Name}] = true
		}
	}
	return answer.Release(held, calls, drop, "output_index", func(data []byte, _ bool) []byte {
		if len(gone) == 0 || !gjson.GetBytes(data, "response.output").IsArray() {
			return data
		}
		out, _, _, err := answer.DropCalls(data, "response.output", callOf, func(c view.ToolCall) bool {
			return gone[view.ToolCall{ID: c.ID, Name: c.Name}]
		})
		if err != nil {
			return data
		}
		return out
	})
}
