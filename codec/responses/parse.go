package responses

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/field"
	"github.com/condense-proxy/condense-proxy/codec/internal/items"
	"github.com/condense-proxy/condense-proxy/codec/internal/slab"
	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/view"
)

// The item fields Parse reads, in one pass per item (the last occurrence
// of a repeated key, as the API's decoder takes it).
var parseKeys = []string{"type", "role", "call_id", "id", "name", "arguments", "input", "output", "action", "operation", "content"}

const (
	fType = iota
	fRole
	fCallID
	fID
	fName
	fArguments
	fInput
	fOutput
	fAction
	fOperation
	fContent
)

// Item types by what the engine may do with them.
var (
	// outputTypes answer a client-side call by call_id.
	outputTypes = map[string]bool{
		"function_call_output":    true,
		"custom_tool_call_output": true,
		"local_shell_call_output": true,
		"computer_call_output":    true,
		"shell_call_output":       true,
		"apply_patch_call_output": true,
	}
	// serverToolTypes are tools the upstream ran itself: the model's
	// output, with no answer from the client; kept or dropped whole.
	serverToolTypes = map[string]bool{
		"web_search_call":       true,
		"file_search_call":      true,
		"code_interpreter_call": true,
		"image_generation_call": true,
		"mcp_call":              true,
		"mcp_list_tools":        true,
	}
)

// Parse implements view.Codec.
//
// Items: messages (roles system, developer, user, assistant; text,
// refusal, image and file parts); reasoning; client-run calls —
// function_call (its arguments string may be shortened by
// clear_tool_inputs), custom_tool_call (free-form input, never
// shortened), local_shell_call, shell_call, apply_patch_call,
// computer_call — and their outputs, paired by call_id (a
// local_shell_call_output may name its call by id); server-side tool
// items (web_search_call, file_search_call, code_interpreter_call,
// image_generation_call, mcp_call, mcp_list_tools); compaction items.
//
// Roles: messages keep theirs; reasoning, calls and server-side tool
// items are assistant items; outputs are tool items.
//
// Steps: every item the model produced — reasoning, an assistant message,
// a call, a server-side tool item — is glued to the item before it when
// that one is a model output too, so one response's reasoning stays with
// the calls and messages it produced; outputs are glued (they answer a
// call of their step, paired by call_id). A system, developer or user
// message starts a step. An output answering no call of its step, or a
// call left unanswered, is view.ErrInvalid: the API would refuse the
// request ("No tool call found for function call output with call_id …",
// "No tool output found for function call …").
//
// Frozen: reasoning items (encrypted_content), server-side tool items and
// compaction items are never edited; an output is digestible only when it
// is a string or text parts. A user message's text is an Own output: only
// the shrinking of the newest steps, when even they do not fit, digests it.
//
// Compaction items (from /v1/responses/compact or server-side
// compaction) carry, encrypted, everything before them (the API's guide
// lets a client drop what precedes the latest one): the head is extended
// through the latest one, so it and what precedes it are kept verbatim,
// and over any items glued to its last item, so no step straddles it.
//
// An additional_tools item (Codex 0.169 with its default model,
// gpt-6.1-sol, sends no top-level tools and declares them in a leading
// {"type":"additional_tools","role":"developer","tools":[namespaces…]}
// item instead, JavaScript exec tool included) is the request's tool
// declarations: frozen, and the head runs through the latest one, so it
// is never edited, dropped or moved (the calls after it name its tools).
// Its tools are counted with it (countItem counts the tools field by its
// JSON text).
//
// An item type this codec does not know is view.ErrInvalid: the request
// is forwarded unchanged rather than cut where its rules are unknown
// (item_reference, MCP approval requests and responses, types newer than
// this codec).
func (c *Codec) Parse(r *view.Request) error {
	spans := make([][2]int, len(parseKeys))
	prevModel := false
	lastCompaction, lastTools := -1, -1
	// An item's calls, answers and outputs come from shared blocks.
	var (
		callS   slab.Slab[view.Call]
		answerS slab.Slab[string]
		outS    slab.Slab[view.Output]
	)
	scanned, _ := r.Private.(*items.Fields)
	for i := range r.Items {
		it := &r.Items[i]
		*it = view.Item{Start: it.Start, End: it.End, Tokens: it.Tokens, Hash: it.Hash}
		raw := r.Raw(i)
		if e := scanned.Element(i); e.Only {
			// All its fields found by the scan: the other keys absent.
			clear(spans)
			spans[fType], spans[fRole], spans[fContent] = e.Spans[sType], e.Spans[sRole], e.Spans[sContent]
			spans[fCallID], spans[fOutput] = e.Spans[sCallID], e.Spans[sOutput]
		} else if !jsonscan.FieldSpansValid(raw, parseKeys, spans) {
			return fmt.Errorf("%w: input item %d is not an object", view.ErrInvalid, i)
		}
		val := func(f int) gjson.Result {
			if spans[f][1] == 0 {
				return gjson.Result{}
			}
			return gjson.Parse(raw[spans[f][0]:spans[f][1]])
		}
		typ := val(fType)
		if typ.Exists() && typ.Type != gjson.String {
			return fmt.Errorf("%w: input item %d has a type that is not a string", view.ErrInvalid, i)
		}
		t, role := typ.Str, val(fRole).Str
		if t == "" && role != "" {
			t = "message"
		}
		model := false
		switch {
		case t == "message":
			switch role {
			case view.RoleUser:
				it.Role = role
				// Its own text, which only the shrinking of the newest
				// steps may digest (a tool result pasted into a user
				// message).
				if sp := spans[fContent]; sp[1] > 0 {
					it.Outputs = outS.One(view.Output{Start: it.Start, End: it.End, Value: sp, Tokens: it.Tokens, Own: true, Frozen: !digestible(raw[sp[0]:sp[1]])})
				}
			case view.RoleSystem, view.RoleDeveloper:
				it.Role = role
			case view.RoleAssistant:
				it.Role, model = role, true
			default:
				return fmt.Errorf("%w: message %d has role %q", view.ErrInvalid, i, role)
			}
		case t == "reasoning":
			it.Role, it.Frozen, model = view.RoleAssistant, true, true
		case t == "function_call":
			args := val(fArguments)
			call := view.Call{ID: val(fCallID).Str, Name: val(fName).Str, Args: args.String()}
			if args.Type == gjson.String {
				call.ArgsSpan = [2]int{it.Start + spans[fArguments][0], it.Start + spans[fArguments][1]}
			}
			it.Role, it.Calls, model = view.RoleAssistant, callS.One(call), true
		case t == "custom_tool_call":
			// Free-form input (a patch…), not JSON: never shortened.
			it.Role, model = view.RoleAssistant, true
			it.Calls = callS.One(view.Call{ID: val(fCallID).Str, Name: val(fName).Str, Args: val(fInput).String()})
		case t == "local_shell_call", t == "computer_call", t == "shell_call", t == "apply_patch_call":
			// Built-in tools the client runs: what to do is an action
			// (or a patch operation) object, never shortened.
			id := val(fCallID).Str
			if id == "" && t == "local_shell_call" {
				id = val(fID).Str
			}
			args := val(fAction).Raw
			if t == "apply_patch_call" {
				args = val(fOperation).Raw
			}
			it.Role, model = view.RoleAssistant, true
			it.Calls = callS.One(view.Call{ID: id, Name: strings.TrimSuffix(t, "_call"), Args: args})
		case outputTypes[t]:
			id := val(fCallID).Str
			if id == "" && t == "local_shell_call_output" {
				id = val(fID).Str
			}
			if id == "" {
				return fmt.Errorf("%w: %s %d has no call_id", view.ErrInvalid, t, i)
			}
			out := view.Output{CallID: id, Start: it.Start, End: it.End, Tokens: it.Tokens}
			if sp := spans[fOutput]; sp[1] > 0 && digestible(raw[sp[0]:sp[1]]) {
				out.Value = spans[fOutput]
			} else {
				out.Frozen = true
			}
			it.Role, it.Glue, it.Answers, it.Outputs = view.RoleTool, true, answerS.One(id), outS.One(out)
		case serverToolTypes[t]:
			it.Role, it.Frozen, model = view.RoleAssistant, true, true
		case isCompaction(t):
			it.Role, it.Frozen = view.RoleAssistant, true
			lastCompaction = i
		case t == AdditionalTools:
			it.Role, it.Frozen = view.RoleDeveloper, true
			if role == view.RoleSystem {
				it.Role = role
			}
			lastTools = i
		default:
			return fmt.Errorf("%w: input item %d has type %q, which this codec does not condense", view.ErrInvalid, i, t)
		}
		if model && prevModel {
			it.Glue = true
		}
		prevModel = model
	}
	r.Head = max(r.Head, lastCompaction+1, lastTools+1)
	for r.Head < len(r.Items) && r.Items[r.Head].Glue {
		r.Head++
	}
	r.Parsed = true
	return nil
}

// digestible reports whether an output value (raw JSON) is text a digest
// may replace: a string, or text parts only (an image or file part would
// be lost). A string is not decoded.
func digestible(raw string) bool {
	switch raw[0] {
	case '"':
		return true
	case '[':
		ok := true
		gjson.Parse(raw).ForEach(func(_, p gjson.Result) bool {
			switch field.Of(p, "type").Str {
			case "input_text", "output_text", "text":
			default:
				ok = false
			}
			return ok
		})
		return ok
	}
	return false
}

// textKeys are the item fields Text reads, in one pass (the first
// occurrence of a repeated key, as gjson reads it).
var textKeys = [...]string{"type", "output", "summary", "action", "content"}

const (
	tType = iota
	tOutput
	tSummary
	tAction
	tContent
)

// Text implements view.Codec.
func (c *Codec) Text(r *view.Request, i int) view.Text {
	it := &r.Items[i]
	var (
		spans [len(textKeys)][2]int
		f     [len(textKeys)]gjson.Result
	)
	raw := r.Raw(i)
	if scanned, _ := r.Private.(*items.Fields); scanned.Element(i).Only {
		// All its fields found by the scan, each once: no summary nor
		// action.
		e := scanned.Element(i)
		f[tType], f[tOutput], f[tContent] = spanValue(raw, e.Spans[sType]), spanValue(raw, e.Spans[sOutput]), spanValue(raw, e.Spans[sContent])
	} else {
		field.GetAll(raw, textKeys[:], spans[:], f[:])
	}
	t := view.Text{Role: it.Role, Calls: it.Calls}
	typ := f[tType].Str
	switch {
	case len(it.Answers) > 0:
		t.Results = []view.Result{{CallID: it.Answers[0], Text: partsText(f[tOutput])}}
	case typ == "reasoning":
		var s []string
		f[tSummary].ForEach(func(_, p gjson.Result) bool {
			if x := field.Of(p, "text").String(); x != "" {
				s = append(s, x)
			}
			return true
		})
		t.Text = strings.Join(s, "\n")
	case len(it.Calls) > 0:
		// The call says it all.
	case serverToolTypes[typ]:
		what := typ
		if a := f[tAction]; a.Exists() {
			for _, k := range []string{"query", "url", "pattern"} {
				if v := a.Get(k).String(); v != "" {
					what += " " + k + "=" + v
				}
			}
		}
		t.Text = "[" + what + "]"
	case isCompaction(typ):
		t.Text = "[compaction]"
	case typ == AdditionalTools:
		t.Text = "[additional_tools]"
	default:
		t.Text = partsText(f[tContent])
	}
	return t
}

// spanValue is the value at sp in raw (the empty Result when sp is {0, 0}).
func spanValue(raw string, sp [2]int) gjson.Result {
	if sp[1] == 0 {
		return gjson.Result{}
	}
	return field.Value(raw[sp[0]:sp[1]])
}

// partsText is the text of a string or of content parts (text parts
// joined; other parts named by their type).
func partsText(v gjson.Result) string {
	if !v.IsArray() {
		if v.IsObject() {
			return "[" + field.Of(v, "type").String() + "]"
		}
		return v.String()
	}
	var parts []string
	v.ForEach(func(_, p gjson.Result) bool {
		switch typ := field.Of(p, "type").Str; {
		case field.Of(p, "text").Exists():
			parts = append(parts, field.Of(p, "text").String())
		case typ == "refusal":
			parts = append(parts, field.Of(p, "refusal").String())
		case typ != "":
			parts = append(parts, "["+typ+"]")
		}
		return true
	})
	return strings.Join(parts, "\n")
}
