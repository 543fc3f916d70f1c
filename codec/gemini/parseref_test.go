package gemini

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/slab"
	"github.com/condense-proxy/condense-proxy/view"
)

// gjsonParse is Parse as it was written before it read each content in
// one pass (jsonscan): every field through gjson. TestParseIsGjsons and
// FuzzScan hold Parse to its answers.
func gjsonParse(r *view.Request) error {
	var p refParser
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
type refParser struct {
	calls   []view.Call
	answers []string
	outputs []view.Output
	callS   slab.Slab[view.Call]
	answerS slab.Slab[string]
	outS    slab.Slab[view.Output]
}

// user fills in a user content: the responses it carries, or its own
// text.
func (p *refParser) user(it *view.Item, raw string, parts gjson.Result, prev []view.Call, i int) error {
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
		if s, e, ok := refResponseString(pt.Raw); ok {
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
func refResponseString(part string) (start, end int, ok bool) {
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

// sameParse parses body's scan with Parse and with gjsonParse and fails
// when they differ: the error (both nil or both view.ErrInvalid), or any
// field of any item.
func sameParse(t *testing.T, c view.Codec, body []byte) {
	t.Helper()
	r, err := c.Scan(body, o200k)
	if err != nil {
		return
	}
	ref := *r
	ref.Items = slices.Clone(r.Items)
	err, refErr := c.Parse(r), gjsonParse(&ref)
	if (err == nil) != (refErr == nil) || err != nil && !errors.Is(err, view.ErrInvalid) {
		t.Fatalf("%s\nParse: %v, gjson: %v", body, err, refErr)
	}
	if err != nil {
		return
	}
	if !reflect.DeepEqual(r.Items, ref.Items) || r.Head != ref.Head {
		for i := range r.Items {
			if !reflect.DeepEqual(r.Items[i], ref.Items[i]) {
				t.Fatalf("%s\nitem %d:\nParse: %+v\ngjson: %+v", body, i, r.Items[i], ref.Items[i])
			}
		}
		t.Fatalf("%s\nhead %d, gjson's %d", body, r.Head, ref.Head)
	}
}

// TestParseIsGjsons: Parse reads each field as gjson's Get did — the
// first of a repeated key, the later of a camel and a snake spelling,
// escaped keys decoded — on the shapes that tell those apart.
func TestParseIsGjsons(t *testing.T) {
	c := New(sharedCounter).WithModel("gemini-2.5-pro")
	call := `{"role":"model","parts":[{"text":"t"},{"functionCall":{"name":"a","id":"c1","args":{"x":1}}}]}`
	for _, s := range []string{
		string(body(cliSession(7, 15))),
		`{"contents":[{"role":"user","parts":[{"text":"x"}]},` + call + `,{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"a","response":{"output":"o"}}}]}]}`,
		// a response of two fields, of a number, with parts: frozen
		`{"contents":[` + call + `,{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"a","response":{"output":"o","x":1}}}]}]}`,
		`{"contents":[` + call + `,{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"a","response":{"output":1}}}]}]}`,
		`{"contents":[` + call + `,{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"a","parts":[],"response":{"output":"o"}}}]}]}`,
		`{"contents":[` + call + `,{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"a","response":{}}}]}]}`,
		// snake case, both spellings (the later wins), repeated keys (the first)
		`{"contents":[{"role":"model","parts":[{"function_call":{"name":"a","args":{}}}]},{"role":"user","parts":[{"function_response":{"name":"a","response":{"output":"o"}}}]}]}`,
		`{"contents":[{"role":"model","parts":[{"function_call":{"name":"b"},"functionCall":{"name":"a"}}]},{"role":"user","parts":[{"functionResponse":{"name":"b","response":{"o":"1"}},"function_response":{"name":"a","response":{"o":"2"}}}]}]}`,
		`{"contents":[{"role":"model","role":"user","parts":[{"functionCall":{"name":"a","name":"b","id":"x","id":"y"}}]},{"parts":[{"functionResponse":{"id":"y","name":"a","response":{"o":"1"}}}],"parts":[]}]}`,
		// escaped keys, decoded
		`{"contents":[{"r\u006fle":"model","parts":[{"functi\u006fnCall":{"n\u0061me":"a","args":{}}}]},{"role":"user","p\u0061rts":[{"functionResponse":{"name":"a","resp\u006fnse":{"output":"o"}}}]}]}`,
		`{"contents":[{"role":"m\u006fdel","parts":[{"functionCall":{"name":"a"}}]},{"role":"user","parts":[{"functionResponse":{"name":"a","response":{"\u006f":"o"}}}]}]}`,
		// frozen model parts: a thought, a signature, code
		`{"contents":[{"role":"model","parts":[{"text":"x","thought":true}]},{"role":"model","parts":[{"text":"x","thought":"true"}]},{"role":"model","parts":[{"text":"x","thought_signature":"s"}]},{"role":"model","parts":[{"executableCode":{}}]},{"role":"model","parts":[{"code_execution_result":{}}]}]}`,
		// refused: a role, a part, an answer to nothing, no parts
		`{"contents":[{"role":"tool","parts":[{"text":"x"}]}]}`,
		`{"contents":[{"role":"user","parts":[1]}]}`,
		`{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"a","response":{"output":"o"}}}]}]}`,
		`{"contents":[{"role":"user","parts":[]}]}`,
		`{"contents":[{"role":"user","parts":{"text":"x"}}]}`,
		`{"contents":[{"role":"user"}]}`,
	} {
		sameParse(t, c, []byte(s))
	}
}
