package gemini

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/compaction"
	"github.com/condense-proxy/condense-proxy/codec/internal/slab"
	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/view"
)

// Parse implements view.Codec.
//
// Roles: "model" is the assistant's; "user", none and the legacy
// "function" are the user's; any other is view.ErrInvalid. Every part
// must be an object. A model content's functionCall parts are its calls,
// by their id, or — Gemini pairs calls and responses by position and
// name when they carry none — by a name the codec gives them (the call's
// name, its content's hash and its place). A user content holding
// functionResponse parts must follow a model content making calls, and
// each response must answer one of them (by id, or the first of that name
// not yet answered); it is glued to that model content. Anything else is
// view.ErrInvalid: the API would refuse it. The engine's step split
// checks that every call is answered.
func (c *Codec) Parse(r *view.Request) error {
	var p parser
	prevCalls := []view.Call(nil)
	for i := range r.Items {
		it := &r.Items[i]
		*it = view.Item{Start: it.Start, End: it.End, Tokens: it.Tokens, Hash: it.Hash}
		raw := r.Raw(i)
		g := gjson.Parse(raw)
		if !g.IsObject() {
			return fmt.Errorf("%w: content %d is not an object", view.ErrInvalid, i)
		}
		switch role := g.Get("role"); {
		case !role.Exists(), role.String() == "user", role.String() == "function", role.String() == "model":
		default:
			return fmt.Errorf("%w: content %d has role %s", view.ErrInvalid, i, clip(role.Raw))
		}
		parts := g.Get("parts")
		if !parts.IsArray() || len(parts.Array()) == 0 {
			return fmt.Errorf("%w: content %d has no parts", view.ErrInvalid, i)
		}
		bad := false
		parts.ForEach(func(_, pt gjson.Result) bool {
			bad = !pt.IsObject()
			return !bad
		})
		if bad {
			return fmt.Errorf("%w: content %d has a part that is not an object", view.ErrInvalid, i)
		}
		if roleOf(g) == "model" {
			it.Role = view.RoleAssistant
			p.calls = p.calls[:0]
			parts.ForEach(func(_, pt gjson.Result) bool {
				if fc := field(pt, "functionCall", "function_call"); fc.Exists() {
					name := fc.Get("name").String()
					id := fc.Get("id").String()
					if id == "" {
						id = fmt.Sprintf("%s#%x.%d", name, it.Hash, len(p.calls))
					}
					p.calls = append(p.calls, view.Call{ID: id, Name: name, Args: fc.Get("args").Raw})
				}
				if pt.Get("thought").Bool() || field(pt, "thoughtSignature", "thought_signature").Exists() ||
					field(pt, "executableCode", "executable_code").Exists() || field(pt, "codeExecutionResult", "code_execution_result").Exists() {
					it.Frozen = true
				}
				return true
			})
			it.Calls = p.callS.Copy(p.calls)
			prevCalls = it.Calls
			continue
		}
		it.Role = view.RoleUser
		if err := p.user(it, raw, parts, prevCalls, i); err != nil {
			return err
		}
		prevCalls = nil
	}
	if r.Head > 0 {
		for i := 0; i < r.Head; i++ {
			if len(r.Items[i].Answers) > 0 || len(r.Items[i].Calls) > 0 {
				r.Head = 0
				break
			}
		}
	}
	r.Parsed = true
	return nil
}

// parser is what Parse reuses from content to content.
type parser struct {
	calls   []view.Call
	answers []string
	outputs []view.Output
	callS   slab.Slab[view.Call]
	answerS slab.Slab[string]
	outS    slab.Slab[view.Output]
}

// user fills in a user content: the responses it carries, or its own
// text.
func (p *parser) user(it *view.Item, raw string, parts gjson.Result, prev []view.Call, i int) error {
	p.answers, p.outputs = p.answers[:0], p.outputs[:0]
	var err error
	answered := make([]bool, len(prev))
	parts.ForEach(func(_, pt gjson.Result) bool {
		fr := field(pt, "functionResponse", "function_response")
		if !fr.Exists() {
			return true
		}
		k := -1
		if id := fr.Get("id").String(); id != "" {
			for j, c := range prev {
				if c.ID == id && !answered[j] {
					k = j
					break
				}
			}
		}
		if k < 0 {
			// By name: a response without an id, or with one its client
			// made up for a call that had none (Gemini CLI does).
			name := fr.Get("name").String()
			for j, c := range prev {
				if c.Name == name && !answered[j] {
					k = j
					break
				}
			}
		}
		if k < 0 {
			err = fmt.Errorf("%w: content %d has a functionResponse answering no call of the content before it", view.ErrInvalid, i)
			return false
		}
		answered[k] = true
		start := it.Start + pt.Index
		out := view.Output{CallID: prev[k].ID, Start: start, End: start + len(pt.Raw)}
		out.Tokens = int(int64(it.Tokens) * int64(len(pt.Raw)) / int64(max(len(raw), 1)))
		if s, e, ok := responseString(pt.Raw); ok {
			out.Value = [2]int{s, e}
		} else {
			out.Frozen = true
		}
		p.answers = append(p.answers, prev[k].ID)
		p.outputs = append(p.outputs, out)
		return true
	})
	if err != nil {
		return err
	}
	if len(p.answers) > 0 {
		it.Answers, it.Outputs = p.answerS.Copy(p.answers), p.outS.Copy(p.outputs)
		it.Glue = true
		return nil
	}
	// Its own text, which only the shrinking of the newest steps may
	// digest (a tool result pasted into a user message).
	own := view.Output{Start: it.Start, End: it.End, Tokens: it.Tokens, Own: true}
	if s, e, ok := ownText(raw); ok {
		own.Value = [2]int{s, e}
	} else {
		own.Frozen = true
	}
	it.Outputs = p.outS.One(own)
	return nil
}

// responseString returns the span, within part (a functionResponse part's
// raw JSON), of the string a digest may replace: the response's only
// field when it is a string ({"output": "…"}); ok is false for any other
// response, or one carrying parts (media).
func responseString(part string) (start, end int, ok bool) {
	g := gjson.Parse(part)
	fr := field(g, "functionResponse", "function_response")
	if !fr.IsObject() || fr.Get("parts").Exists() {
		return 0, 0, false
	}
	resp := fr.Get("response")
	if !resp.IsObject() {
		return 0, 0, false
	}
	n := 0
	var val gjson.Result
	resp.ForEach(func(_, v gjson.Result) bool {
		n++
		val = v
		return n < 2
	})
	if n != 1 || val.Type != gjson.String {
		return 0, 0, false
	}
	start = val.Index
	return start, start + len(val.Raw), start > 0 && start+len(val.Raw) <= len(part) && part[start:start+len(val.Raw)] == val.Raw
}

// ownText returns the span, within raw (a user content), of its text when
// it is one text part and nothing else.
func ownText(raw string) (start, end int, ok bool) {
	g := gjson.Parse(raw)
	parts := g.Get("parts")
	arr := parts.Array()
	if len(arr) != 1 {
		return 0, 0, false
	}
	t := arr[0].Get("text")
	if t.Type != gjson.String || arr[0].Get("thought").Bool() {
		return 0, 0, false
	}
	for _, k := range []string{"inlineData", "inline_data", "fileData", "file_data", "functionCall", "function_call"} {
		if arr[0].Get(k).Exists() {
			return 0, 0, false
		}
	}
	start = t.Index
	return start, start + len(t.Raw), start > 0 && start+len(t.Raw) <= len(raw) && raw[start:start+len(t.Raw)] == t.Raw
}

// lastCompaction returns the agent whose compaction instruction the last
// content carries when it is a user content ("" otherwise): every text
// part is tried.
func lastCompaction(raw string) string {
	g := gjson.Parse(raw)
	if !g.IsObject() || roleOf(g) != "user" {
		return ""
	}
	agent := ""
	g.Get("parts").ForEach(func(_, p gjson.Result) bool {
		if t := p.Get("text"); t.Type == gjson.String {
			agent = compaction.Match(t.Str)
		}
		return agent == ""
	})
	return agent
}

// Text implements view.Codec: the text parts (thoughts left out), calls
// and responses.
func (c *Codec) Text(r *view.Request, i int) view.Text {
	it := r.Items[i]
	t := view.Text{Role: it.Role, Calls: it.Calls}
	var texts []string
	k := 0
	gjson.Get(r.Raw(i), "parts").ForEach(func(_, p gjson.Result) bool {
		switch {
		case p.Get("thought").Bool():
		case p.Get("text").Exists():
			texts = append(texts, p.Get("text").String())
		case field(p, "functionResponse", "function_response").Exists():
			fr := field(p, "functionResponse", "function_response")
			id := ""
			if k < len(it.Answers) {
				id = it.Answers[k]
			}
			k++
			text := fr.Get("response").Raw
			if s, e, ok := responseString(p.Raw); ok {
				text = gjson.Parse(p.Raw[s:e]).Str
			}
			t.Results = append(t.Results, view.Result{CallID: id, Text: text})
		case field(p, "functionCall", "function_call").Exists():
		case field(p, "inlineData", "inline_data").Exists():
			texts = append(texts, "[inlineData "+field(field(p, "inlineData", "inline_data"), "mimeType", "mime_type").String()+"]")
		case field(p, "fileData", "file_data").Exists():
			texts = append(texts, "[fileData "+field(field(p, "fileData", "file_data"), "fileUri", "file_uri").String()+"]")
		default:
			texts = append(texts, "["+clip(p.Raw)+"]")
		}
		return true
	})
	t.Text = strings.Join(texts, "\n")
	return t
}

// clip shortens raw JSON for an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// TextSpan, Editable, ValueText and TextValue implement selective.Codec:
// selective digests a functionResponse's string (or a user content's one
// text part) in place through them, knowing no field of the format.

// TextSpan returns the span, within raw (a content, or a functionResponse
// part), of the string holding its text.
func (*Codec) TextSpan(raw string) (start, end int, ok bool) {
	if !validObject(raw) {
		return 0, 0, false
	}
	if s, e, ok := responseString(raw); ok {
		return s, e, true
	}
	return ownText(raw)
}

// Editable reports whether a digest may replace value: a string (the
// only values the codec points at).
func (*Codec) Editable(value string) bool {
	return len(value) > 0 && value[0] == '"' && jsonscan.Valid(value)
}

// ValueText returns the text of an editable value.
func (*Codec) ValueText(value string) string { return gjson.Parse(value).String() }

// TextValue renders text as the string that replaces an editable one.
func (*Codec) TextValue(text string) []byte {
	b, _ := json.Marshal(text)
	return b
}
