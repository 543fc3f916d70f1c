package gemini

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/answer"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Tools = (*Codec)(nil)

// AddTool implements view.Tools: a function declaration appended to the
// first tool holding functionDeclarations, or a tool of its own appended
// to "tools" (made when absent). Not for a request whose
// functionCallingConfig mode is NONE, nor one naming cachedContent (the
// API takes no tools beside it).
func (*Codec) AddTool(body []byte, t view.Tool) ([]byte, bool, error) {
	g := gjson.ParseBytes(body)
	if strings.EqualFold(mode(g), "NONE") || field(g, "cachedContent", "cached_content").String() != "" {
		return body, false, nil
	}
	decl := fmt.Sprintf(`{"name":%s,"description":%s,"parameters":%s}`, answer.Quote(t.Name), answer.Quote(t.Description), t.Schema)
	tools := g.Get("tools")
	if tools.IsArray() {
		at := -1
		key := ""
		tools.ForEach(func(k, tl gjson.Result) bool {
			for _, name := range []string{"functionDeclarations", "function_declarations"} {
				if tl.Get(name).IsArray() {
					at, key = int(k.Int()), name
					return false
				}
			}
			return true
		})
		if at >= 0 {
			out, err := sjson.SetRawBytes(body, fmt.Sprintf("tools.%d.%s.-1", at, key), []byte(decl))
			if err != nil {
				return nil, false, fmt.Errorf("gemini: adding a tool: %w", err)
			}
			return out, true, nil
		}
	}
	return answer.AppendTool(body, `{"functionDeclarations":[`+decl+`]}`)
}

// mode is the request's functionCallingConfig mode ("" when unset).
func mode(g gjson.Result) string {
	tc := field(g, "toolConfig", "tool_config")
	return field(tc, "functionCallingConfig", "function_calling_config").Get("mode").String()
}

// callOf reads a functionCall part (ok false for another part); k is its
// place among the answer's calls, which names a call without an id.
func callOf(p gjson.Result, k int) (view.ToolCall, bool) {
	fc := field(p, "functionCall", "function_call")
	if !fc.IsObject() {
		return view.ToolCall{}, false
	}
	args := fc.Get("args").Raw
	if args == "" {
		args = "{}"
	}
	c := view.ToolCall{ID: fc.Get("id").String(), Name: fc.Get("name").String(), Args: args}
	if c.ID == "" {
		c.ID = fmt.Sprintf("%s#%d", c.Name, k)
	}
	return c, true
}

// ReadAnswer implements view.Tools: the first candidate's parts.
func (*Codec) ReadAnswer(body []byte) (view.Answer, error) {
	if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() {
		return view.Answer{}, errors.New("gemini: answer is not a JSON object")
	}
	t := &answer.Turn{}
	a := view.Answer{Turn: t}
	gjson.GetBytes(body, "candidates.0.content.parts").ForEach(func(_, p gjson.Result) bool {
		if c, ok := callOf(p, len(a.Calls)); ok {
			a.Calls = append(a.Calls, c)
			t.Calls = append(t.Calls, len(t.Items))
		}
		t.Items = append(t.Items, p.Raw)
		return true
	})
	return a, nil
}

// AppendTurn implements view.Tools: a model content with the turn's parts
// (thoughts and their signatures as received) but the calls keep
// refuses, then a user content of functionResponse parts answering the
// calls kept ({"output": text}, with the call's id when it had one).
func (*Codec) AppendTurn(body []byte, a view.Answer, keep func(int, view.ToolCall) bool, results []view.ToolResult) ([]byte, error) {
	t, _ := a.Turn.(*answer.Turn)
	if t == nil {
		return nil, errors.New("gemini: no turn to append")
	}
	parts := t.Kept(a, keep)
	if len(parts) == 0 {
		parts = []string{`{"text":""}`}
	}
	out, err := sjson.SetRawBytes(body, "contents.-1", []byte(`{"role":"model","parts":[`+strings.Join(parts, ",")+`]}`))
	if err == nil && len(results) > 0 {
		byID := map[string]view.ToolCall{}
		for _, c := range a.Calls {
			byID[c.ID] = c
		}
		var rs []string
		for _, r := range results {
			c := byID[r.CallID]
			fr := `{"functionResponse":{`
			if !strings.HasPrefix(r.CallID, c.Name+"#") {
				fr += `"id":` + answer.Quote(r.CallID) + `,`
			}
			fr += `"name":` + answer.Quote(c.Name) + `,"response":{"output":` + answer.Quote(r.Text) + `}}}`
			rs = append(rs, fr)
		}
		out, err = sjson.SetRawBytes(out, "contents.-1", []byte(`{"role":"user","parts":[`+strings.Join(rs, ",")+`]}`))
	}
	if err != nil {
		return nil, fmt.Errorf("gemini: appending a turn: %w", err)
	}
	return out, nil
}

// DropCalls implements view.Tools: the calls leave every candidate's
// parts (a candidate left with none gets an empty text part).
func (*Codec) DropCalls(body []byte, drop func(view.ToolCall) bool) ([]byte, error) {
	out := body
	var err error
	gjson.GetBytes(body, "candidates").ForEach(func(k, cand gjson.Result) bool {
		var kept []string
		removed, n := 0, 0
		cand.Get("content.parts").ForEach(func(_, p gjson.Result) bool {
			if c, ok := callOf(p, n); ok {
				n++
				if drop(c) {
					removed++
					return true
				}
			}
			kept = append(kept, p.Raw)
			return true
		})
		if removed == 0 {
			return true
		}
		if len(kept) == 0 {
			kept = []string{`{"text":""}`}
		}
		out, err = sjson.SetRawBytes(out, "candidates."+k.String()+".content.parts", []byte("["+strings.Join(kept, ",")+"]"))
		return err == nil
	})
	if err != nil {
		return nil, fmt.Errorf("gemini: dropping calls: %w", err)
	}
	return out, nil
}

// Stream implements view.Tools.
func (*Codec) Stream(string) view.AnswerStream { return &stream{} }

// stream reads an answer's chunks ("data: {GenerateContentResponse}"),
// each carrying parts of the first candidate's content; a functionCall
// part comes whole in one chunk. A later round's chunks continue the
// agent's answer as they are: Gemini's chunks carry no index to renumber.
type stream struct {
	parts []string
	turn  []int // index in parts of each call
	calls []view.ToolCall
}

func (s *stream) Event(ev []byte) (view.EventKind, []byte, int) {
	_, data := answer.Parse(ev)
	if data == nil || !gjson.ValidBytes(data) {
		return view.EventPass, answer.End(ev), -1
	}
	kind, call := view.EventPass, -1
	gjson.GetBytes(data, "candidates.0.content.parts").ForEach(func(_, p gjson.Result) bool {
		if c, ok := callOf(p, len(s.calls)); ok {
			if kind != view.EventCall {
				kind, call = view.EventCall, len(s.calls)
			}
			s.calls = append(s.calls, c)
			s.turn = append(s.turn, len(s.parts))
		}
		s.parts = append(s.parts, p.Raw)
		return true
	})
	return kind, answer.End(ev), call
}

func (s *stream) Answer() view.Answer {
	t := &answer.Turn{Items: append([]string(nil), s.parts...), Calls: append([]int(nil), s.turn...)}
	return view.Answer{Calls: append([]view.ToolCall(nil), s.calls...), Turn: t}
}

func (s *stream) Next() { s.parts, s.turn, s.calls = nil, nil, nil }

func (*stream) KeepAlive() []byte { return []byte(": condense-proxy: answering a recall\n\n") }

// Release implements view.AnswerStream: the dropped calls leave the
// chunks' parts (a chunk left saying nothing — no part, no finish, no
// usage — is left out). The k-th call of the held chunks is the round's
// k-th: holding starts at its first.
func (s *stream) Release(held []view.Held, drop func(int, view.ToolCall) bool) []byte {
	dropped := make([]bool, len(s.calls))
	some := false
	for i, c := range s.calls {
		dropped[i] = drop(i, c)
		some = some || dropped[i]
	}
	var out bytes.Buffer
	if !some {
		for _, h := range held {
			out.Write(h.Event)
		}
		return out.Bytes()
	}
	k := 0
	if len(held) > 0 && held[0].Call > 0 {
		k = held[0].Call
	}
	for _, h := range held {
		name, data := answer.Parse(bytes.TrimRight(h.Event, "\n"))
		parts := gjson.GetBytes(data, "candidates.0.content.parts")
		if data == nil || !gjson.ValidBytes(data) || !parts.IsArray() {
			out.Write(h.Event)
			continue
		}
		var kept []string
		removed := 0
		parts.ForEach(func(_, p gjson.Result) bool {
			if _, ok := callOf(p, k); ok {
				k++
				if k-1 < len(dropped) && dropped[k-1] {
					removed++
					return true
				}
			}
			kept = append(kept, p.Raw)
			return true
		})
		if removed == 0 {
			out.Write(h.Event)
			continue
		}
		if len(kept) == 0 && gjson.GetBytes(data, "candidates.0.finishReason").String() == "" && !gjson.GetBytes(data, "usageMetadata").Exists() {
			continue
		}
		changed, err := sjson.SetRawBytes(data, "candidates.0.content.parts", []byte("["+strings.Join(kept, ",")+"]"))
		if err != nil {
			out.Write(h.Event)
			continue
		}
		out.Write(answer.Format(name, changed))
	}
	return out.Bytes()
}
