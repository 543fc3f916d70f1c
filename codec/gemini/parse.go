package gemini

import (
	"encoding/json"
	"fmt"
	"slices"
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
		if raw == "" || raw[0] != '{' {
			return fmt.Errorf("%w: content %d is not an object", view.ErrInvalid, i)
		}
		var f [2][2]int
		firsts(raw, contentKeys[:], f[:])
		role := gjson.Parse(raw[f[0][0]:f[0][1]])
		switch s := role.String(); {
		case !role.Exists(), s == "user", s == "function", s == "model":
		default:
			return fmt.Errorf("%w: content %d has role %s", view.ErrInvalid, i, clip(role.Raw))
		}
		parts := raw[f[1][0]:f[1][1]]
		if p.parts = jsonscan.ArrayElemsValid(parts, p.parts[:0]); len(p.parts) == 0 {
			return fmt.Errorf("%w: content %d has no parts", view.ErrInvalid, i)
		}
		for k, e := range p.parts {
			if parts[e[0]] != '{' {
				return fmt.Errorf("%w: content %d has a part that is not an object", view.ErrInvalid, i)
			}
			p.parts[k] = [2]int{f[1][0] + e[0], f[1][0] + e[1]} // within raw
		}
		if role.String() == "model" {
			it.Role = view.RoleAssistant
			p.model(it, raw)
			prevCalls = it.Calls
			continue
		}
		it.Role = view.RoleUser
		if err := p.user(it, raw, prevCalls, i); err != nil {
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

// The fields Parse reads, by their place in these lists.
var (
	contentKeys = [...]string{"role", "parts"}
	partKeys    = [...]string{"functionCall", "function_call", "thought", "thoughtSignature", "thought_signature",
		"executableCode", "executable_code", "codeExecutionResult", "code_execution_result", "functionResponse", "function_response"}
	callKeys     = [...]string{"name", "id", "args"}
	responseKeys = [...]string{"id", "name", "parts", "response"}
)

const (
	pCall, pCallSnake = 0, 1
	pThought          = 2
	pResponse         = 9
	pResponseSnake    = 10
)

// firsts sets spans[j] to the span, within obj (an object of a body Scan
// accepted), of the value of obj's first field named keys[j] ({0, 0}:
// none) — the field gjson's Get finds, in one pass over obj.
func firsts(obj string, keys []string, spans [][2]int) {
	if !jsonscan.FirstsValid(obj, keys, spans) {
		return
	}
	// A key holds an escape that may decode to one of keys: gjson
	// decodes them.
	g := gjson.Parse(obj)
	for j, k := range keys {
		spans[j] = [2]int{}
		if v := g.Get(k); v.Exists() {
			spans[j] = [2]int{v.Index, v.Index + len(v.Raw)}
		}
	}
}

// either is the span of a field written in camel case (spans[camel]) or
// snake case (spans[snake]): the later one when both are (as field).
func either(spans [][2]int, camel, snake int) [2]int {
	if s := spans[snake]; s[1] > 0 && (spans[camel][1] == 0 || s[0] > spans[camel][0]) {
		return s
	}
	return spans[camel]
}

// parser is what Parse reuses from content to content.
type parser struct {
	parts   [][2]int // the current content's parts, within its raw JSON
	calls   []view.Call
	answers []string
	outputs []view.Output
	callS   slab.Slab[view.Call]
	answerS slab.Slab[string]
	outS    slab.Slab[view.Output]
}

// model fills in a model content: its calls (functionCall parts, by their
// id or a name the codec gives them), frozen when a part is a thought, is
// signed or runs code.
func (p *parser) model(it *view.Item, raw string) {
	p.calls = p.calls[:0]
	var f [len(partKeys)][2]int
	var cf [len(callKeys)][2]int
	for _, e := range p.parts {
		pt := raw[e[0]:e[1]]
		firsts(pt, partKeys[:], f[:])
		if fc := either(f[:], pCall, pCallSnake); fc[1] > 0 {
			firsts(pt[fc[0]:fc[1]], callKeys[:], cf[:])
			val := func(k int) string { return pt[fc[0]+cf[k][0] : fc[0]+cf[k][1]] }
			name, id := gjson.Parse(val(0)).String(), gjson.Parse(val(1)).String()
			if id == "" {
				id = fmt.Sprintf("%s#%x.%d", name, it.Hash, len(p.calls))
			}
			p.calls = append(p.calls, view.Call{ID: id, Name: name, Args: val(2)})
		}
		if gjson.Parse(pt[f[pThought][0]:f[pThought][1]]).Bool() || slices.ContainsFunc(f[pThought+1:pResponse], func(s [2]int) bool { return s[1] > 0 }) {
			it.Frozen = true
		}
	}
	it.Calls = p.callS.Copy(p.calls)
}

// user fills in a user content: the responses it carries, or its own
// text.
func (p *parser) user(it *view.Item, raw string, prev []view.Call, i int) error {
	p.answers, p.outputs = p.answers[:0], p.outputs[:0]
	answered := make([]bool, len(prev))
	var f [len(partKeys)][2]int
	var rf [len(responseKeys)][2]int
	for _, e := range p.parts {
		pt := raw[e[0]:e[1]]
		firsts(pt, partKeys[:], f[:])
		fr := either(f[:], pResponse, pResponseSnake)
		if fr[1] == 0 {
			continue
		}
		firsts(pt[fr[0]:fr[1]], responseKeys[:], rf[:])
		val := func(k int) string { return gjson.Parse(pt[fr[0]+rf[k][0] : fr[0]+rf[k][1]]).String() }
		k := -1
		if id := val(0); id != "" {
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
			name := val(1)
			for j, c := range prev {
				if c.Name == name && !answered[j] {
					k = j
					break
				}
			}
		}
		if k < 0 {
			return fmt.Errorf("%w: content %d has a functionResponse answering no call of the content before it", view.ErrInvalid, i)
		}
		answered[k] = true
		start := it.Start + e[0]
		out := view.Output{CallID: prev[k].ID, Start: start, End: start + len(pt)}
		out.Tokens = int(int64(it.Tokens) * int64(len(pt)) / int64(max(len(raw), 1)))
		if s, e, ok := stringResponse(pt, fr, rf[2], rf[3]); ok {
			out.Value = [2]int{s, e}
		} else {
			out.Frozen = true
		}
		p.answers = append(p.answers, prev[k].ID)
		p.outputs = append(p.outputs, out)
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
	var f [len(partKeys)][2]int
	firsts(part, partKeys[:], f[:])
	fr := either(f[:], pResponse, pResponseSnake)
	if fr[1] == 0 {
		return 0, 0, false
	}
	var rf [len(responseKeys)][2]int
	firsts(part[fr[0]:fr[1]], responseKeys[:], rf[:])
	return stringResponse(part, fr, rf[2], rf[3])
}

// stringResponse is responseString given the spans of the part's
// functionResponse (fr, within part) and of that's parts and response
// fields (within fr).
func stringResponse(part string, fr, parts, resp [2]int) (start, end int, ok bool) {
	if part[fr[0]] != '{' || parts[1] > 0 || resp[1] == 0 {
		return 0, 0, false
	}
	obj := part[fr[0]+resp[0] : fr[0]+resp[1]]
	if obj[0] != '{' {
		return 0, 0, false
	}
	_, v, next, ok := jsonscan.NextFieldValid(obj, 1)
	if !ok || obj[v[0]] != '"' {
		return 0, 0, false
	}
	if _, _, _, more := jsonscan.NextFieldValid(obj, next); more {
		return 0, 0, false
	}
	start = fr[0] + resp[0] + v[0]
	return start, start + v[1] - v[0], true
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
