package messages

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

// AddTool implements view.Tools: a client tool appended to "tools" (made
// when absent); not for a request whose tool_choice is {"type":"none"}.
func (*Codec) AddTool(body []byte, t view.Tool) ([]byte, bool, error) {
	if gjson.GetBytes(body, "tool_choice.type").String() == "none" {
		return body, false, nil
	}
	tool := fmt.Sprintf(`{"name":%s,"description":%s,"input_schema":%s}`, answer.Quote(t.Name), answer.Quote(t.Description), t.Schema)
	return answer.AppendTool(body, tool)
}

func callOf(b gjson.Result) view.ToolCall {
	args := b.Get("input").Raw
	if args == "" {
		args = "{}"
	}
	return view.ToolCall{ID: b.Get("id").String(), Name: b.Get("name").String(), Args: args}
}

// toolUse recognizes a tool_use block.
func toolUse(b gjson.Result) (view.ToolCall, bool) {
	if b.Get("type").String() != "tool_use" {
		return view.ToolCall{}, false
	}
	return callOf(b), true
}

// ReadAnswer implements view.Tools: the message's tool_use blocks.
func (*Codec) ReadAnswer(body []byte) (view.Answer, error) {
	if !gjson.ValidBytes(body) {
		return view.Answer{}, errors.New("messages: answer is not JSON")
	}
	return answer.ReadItems(body, "content", toolUse), nil
}

// AppendTurn implements view.Tools: an assistant message with the turn's
// blocks (thinking first, as the API requires; empty text blocks left
// out) but the calls keep refuses, then a user message of tool_result
// blocks.
func (*Codec) AppendTurn(body []byte, a view.Answer, keep func(int, view.ToolCall) bool, results []view.ToolResult) ([]byte, error) {
	t, _ := a.Turn.(*answer.Turn)
	if t == nil {
		return nil, errors.New("messages: no turn to append")
	}
	var blocks []string
	for _, b := range t.Kept(a, keep) {
		g := gjson.Parse(b)
		if g.Get("type").String() == "text" && g.Get("text").String() == "" {
			continue
		}
		blocks = append(blocks, b)
	}
	out, err := sjson.SetRawBytes(body, "messages.-1", []byte(`{"role":"assistant","content":[`+strings.Join(blocks, ",")+`]}`))
	if err == nil && len(results) > 0 {
		var rs []string
		for _, r := range results {
			rs = append(rs, `{"type":"tool_result","tool_use_id":`+answer.Quote(r.CallID)+`,"content":`+answer.Quote(r.Text)+`}`)
		}
		out, err = sjson.SetRawBytes(out, "messages.-1", []byte(`{"role":"user","content":[`+strings.Join(rs, ",")+`]}`))
	}
	if err != nil {
		return nil, fmt.Errorf("messages: appending a turn: %w", err)
	}
	return out, nil
}

// DropCalls implements view.Tools: the tool_use blocks leave the content
// (and when none is left, the answer ends its turn).
func (*Codec) DropCalls(body []byte, drop func(view.ToolCall) bool) ([]byte, error) {
	out, _, left, err := answer.DropCalls(body, "content", toolUse, drop)
	if err == nil && left == 0 && gjson.GetBytes(out, "stop_reason").String() == "tool_use" {
		out, err = sjson.SetBytes(out, "stop_reason", "end_turn")
	}
	return out, err
}

// Stream implements view.Tools.
func (*Codec) Stream(string) view.AnswerStream { return &stream{} }

// stream reads an answer's events (message_start, content_block_start /
// delta / stop, message_delta, message_stop, ping). A later round drops
// its message_start and numbers its blocks after the ones the agent
// received (the blocks before each earlier round's first call).
type stream struct {
	round  int
	offset int64 // blocks the agent received from earlier rounds
	first  int64 // this round's first call block (-1: none yet)
	blocks map[int64]*blockAcc
	order  []int64
}

type blockAcc struct {
	start  string // the content_block of content_block_start
	typ    string
	text   strings.Builder // text, thinking
	sig    string
	input  strings.Builder // tool_use input JSON
	call   int             // index among the calls, -1: not a call
	callID string
	name   string
}

func (s *stream) Event(ev []byte) (view.EventKind, []byte, int) {
	name, data := answer.Parse(ev)
	if data == nil || !gjson.ValidBytes(data) {
		return view.EventPass, answer.End(ev), -1
	}
	if s.blocks == nil {
		s.blocks, s.first = map[int64]*blockAcc{}, -1
	}
	typ := gjson.GetBytes(data, "type").String()
	if typ == "" {
		typ = name
	}
	kind, call := view.EventPass, -1
	switch typ {
	case "message_start":
		if s.round > 0 {
			return view.EventDrop, nil, -1
		}
	case "content_block_start", "content_block_delta", "content_block_stop":
		idx := gjson.GetBytes(data, "index").Int()
		b := s.blocks[idx]
		if typ == "content_block_start" {
			cb := gjson.GetBytes(data, "content_block")
			b = &blockAcc{start: cb.Raw, typ: cb.Get("type").String(), call: -1}
			if b.typ == "tool_use" {
				b.call, b.callID, b.name = s.calls(), cb.Get("id").String(), cb.Get("name").String()
				kind = view.EventCall
				if s.first < 0 {
					s.first = idx
				}
			}
			s.blocks[idx] = b
			s.order = append(s.order, idx)
		}
		if b != nil {
			call = b.call
			if typ == "content_block_delta" {
				d := gjson.GetBytes(data, "delta")
				switch d.Get("type").String() {
				case "text_delta":
					b.text.WriteString(d.Get("text").String())
				case "thinking_delta":
					b.text.WriteString(d.Get("thinking").String())
				case "signature_delta":
					b.sig += d.Get("signature").String()
				case "input_json_delta":
					b.input.WriteString(d.Get("partial_json").String())
				}
			}
		}
		if s.offset > 0 {
			out, err := sjson.SetBytes(data, "index", idx+s.offset)
			if err == nil {
				return kind, answer.Format(name, out), call
			}
		}
	}
	return kind, answer.End(ev), call
}

// calls counts the call blocks started so far.
func (s *stream) calls() int {
	n := 0
	for _, b := range s.blocks {
		if b.call >= 0 {
			n++
		}
	}
	return n
}

func (s *stream) Answer() view.Answer {
	t := &answer.Turn{}
	a := view.Answer{Turn: t}
	for _, idx := range s.order {
		b := s.blocks[idx]
		var raw string
		switch b.typ {
		case "text":
			raw = `{"type":"text","text":` + answer.Quote(b.text.String()) + `}`
		case "thinking":
			raw = `{"type":"thinking","thinking":` + answer.Quote(b.text.String()) + `,"signature":` + answer.Quote(b.sig) + `}`
		case "tool_use":
			input := b.input.String()
			if strings.TrimSpace(input) == "" || !gjson.Valid(input) {
				input = "{}"
			}
			raw = `{"type":"tool_use","id":` + answer.Quote(b.callID) + `,"name":` + answer.Quote(b.name) + `,"input":` + input + `}`
			a.Calls = append(a.Calls, view.ToolCall{ID: b.callID, Name: b.name, Args: input})
			t.Calls = append(t.Calls, len(t.Items))
		default:
			// redacted_thinking, server tool blocks: complete in their
			// start event.
			raw = b.start
		}
		t.Items = append(t.Items, raw)
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
	s.blocks, s.order, s.first = nil, nil, -1
}

func (*stream) KeepAlive() []byte { return []byte("event: ping\ndata: {\"type\": \"ping\"}\n\n") }

// Release implements view.AnswerStream: the dropped calls' blocks left
// out, the blocks after them numbered on, and message_delta's stop_reason
// end_turn when no tool_use block is left.
func (s *stream) Release(held []view.Held, drop func(int, view.ToolCall) bool) []byte {
	return answer.Release(held, s.Answer().Calls, drop, "index", func(data []byte, left bool) []byte {
		if left || gjson.GetBytes(data, "type").String() != "message_delta" || gjson.GetBytes(data, "delta.stop_reason").String() != "tool_use" {
			return data
		}
		if out, err := sjson.SetBytes(data, "delta.stop_reason", "end_turn"); err == nil {
			return out
		}
		return data
	})
}
