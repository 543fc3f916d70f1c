// Package chat is the codec of OpenAI's chat-completions format
// (POST /v1/chat/completions): the conversation is the top-level
// "messages" array; a step is a user message, or an assistant message with
// the "tool" messages answering its tool_calls; a summary or marker is a
// user message.
//
// A Codec is safe for concurrent use.
package chat

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/apierror"
	"github.com/condense-proxy/condense-proxy/codec/internal/field"
	"github.com/condense-proxy/condense-proxy/codec/internal/slab"
	"github.com/condense-proxy/condense-proxy/codec/internal/textvalue"
	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// Format is the codec's wire format name.
const Format = "chat"

// Codec reads and writes chat-completions requests.
type Codec struct {
	counter *tokenizer.Counter
}

var _ view.Codec = (*Codec)(nil)

// New returns the chat codec, counting with counter.
func New(counter *tokenizer.Counter) *Codec { return &Codec{counter: counter} }

// Format implements view.Codec.
func (*Codec) Format() string { return Format }

type tooMany struct{ error }

func (tooMany) Is(target error) bool { return target == view.ErrTooManyItems }

// Scan implements view.Codec: one validating pass over the body finds the
// messages, their main fields and the model; each message is counted with
// the per-message cache.
func (c *Codec) Scan(body []byte, encodingFor func(model string) string) (*view.Request, error) {
	r, sc, err := c.count(body, encodingFor)
	if err != nil {
		return nil, err
	}
	c.finish(r, sc)
	return r, nil
}

// str is the text of the string at sp in raw ("" when absent or not a
// string).
func str(raw string, sp [2]int) string {
	if sp[1] == 0 {
		return ""
	}
	return field.Str(raw[sp[0]:sp[1]])
}

// callKeys and functionKeys are the fields of a tool call that Parse
// reads, and of its function.
var callKeys, functionKeys = []string{"id", "function"}, []string{"name", "arguments"}

// callFields is parseCall's scratch space, reused across calls.
type callFields struct {
	spans  [2][2]int
	values [2]gjson.Result
}

// parseCall reads one element of a message's tool_calls (tc, at offset
// at in the body): its id, function name and arguments, the arguments'
// span when they are a string. The first occurrence of a field wins, as
// in gjson.
func parseCall(tc string, at int, f *callFields) view.Call {
	field.GetAll(tc, callKeys, f.spans[:], f.values[:])
	call := view.Call{ID: f.values[0].Str}
	fn := f.values[1]
	if !fn.IsObject() {
		return call
	}
	field.GetAll(fn.Raw, functionKeys, f.spans[:], f.values[:])
	name, args := f.values[0], f.values[1]
	call.Name, call.Args = name.Str, args.String()
	if args.Type == gjson.String && args.Index > 0 && fn.Index > 0 {
		start := at + fn.Index + args.Index
		call.ArgsSpan = [2]int{start, start + len(args.Raw)}
	}
	return call
}

// Parse implements view.Codec. The head is the leading system/developer
// messages and the first user message.
func (c *Codec) Parse(r *view.Request) error {
	sc, _ := r.Private.(*scan)
	spans := make([][2]int, len(messageKeys))
	// An item's calls, answers and outputs come from shared blocks.
	var (
		calls      []view.Call
		elems      [][2]int
		callFields callFields
		callS      slab.Slab[view.Call]
		answerS    slab.Slab[string]
		outS       slab.Slab[view.Output]
	)
	for i := range r.Items {
		it := &r.Items[i]
		// What a parse sets starts empty: a copy of a parsed request
		// (background work's) is parsed again, and must not append to
		// the calls it shares with the original.
		*it = view.Item{Start: it.Start, End: it.End, Tokens: it.Tokens, Hash: it.Hash}
		raw := r.Raw(i)
		f := spans
		if sc != nil && (i+1)*len(messageKeys) <= len(sc.fields) {
			f = sc.message(i)
		} else {
			jsonscan.FieldSpansValid(raw, messageKeys, spans)
		}
		it.Role = str(raw, f[fieldRole])
		switch it.Role {
		case view.RoleTool:
			id := str(raw, f[fieldToolCallID])
			it.Glue = true
			it.Answers = answerS.One(id)
			it.Outputs = outS.One(view.Output{CallID: id, Start: it.Start, End: it.End, Value: f[fieldContent], Tokens: it.Tokens})
		case view.RoleUser:
			if f[fieldContent][1] > 0 {
				it.Outputs = outS.One(view.Output{Start: it.Start, End: it.End, Value: f[fieldContent], Tokens: it.Tokens, Own: true})
			}
		case view.RoleAssistant:
			if f[fieldToolCalls][1] == 0 || raw[f[fieldToolCalls][0]] != '[' {
				break
			}
			// The calls, each read from its own element (the offset of
			// its arguments in the message is the element's plus theirs
			// in it).
			jsonscan.FieldSpansElemsValid(raw, nil, nil, "tool_calls", &elems)
			calls = calls[:0]
			for _, el := range elems {
				calls = append(calls, parseCall(raw[el[0]:el[1]], it.Start+el[0], &callFields))
			}
			it.Calls = callS.Copy(calls)
		}
	}
	for i := r.Head; i < len(r.Items); i++ {
		switch role := r.Items[i].Role; role {
		case view.RoleUser, view.RoleSystem, view.RoleDeveloper, view.RoleAssistant, view.RoleTool, "function":
		default:
			return fmt.Errorf("%w: message %d has role %q", view.ErrInvalid, i, role)
		}
	}
	r.Parsed = true
	return nil
}

// Text implements view.Codec.
func (c *Codec) Text(r *view.Request, i int) view.Text {
	it := &r.Items[i]
	t := view.Text{Role: it.Role, Calls: it.Calls}
	text, ok := c.plainContent(r, i)
	if !ok {
		text = messageText(gjson.Parse(r.Raw(i)))
	}
	if it.Role == view.RoleTool {
		t.Results = []view.Result{{CallID: it.Answers[0], Text: text}}
		return t
	}
	t.Text = text
	return t
}

// plainContent returns messageText of message i read from the scan's span
// of its content, when the scan's spans are the first occurrences (what
// messageText reads) and the content is a string without escapes, or
// absent; ok is false otherwise.
func (c *Codec) plainContent(r *view.Request, i int) (text string, ok bool) {
	sc, _ := r.Private.(*scan)
	if sc == nil || !sc.once || (i+1)*len(messageKeys) > len(sc.fields) {
		return "", false
	}
	sp := sc.message(i)[fieldContent]
	if sp[1] == 0 {
		return "", true
	}
	return field.Plain(r.Raw(i)[sp[0]:sp[1]])
}

// messageText is the text of a message's content (string or text parts).
func messageText(m gjson.Result) string {
	c := field.Of(m, "content")
	if c.IsArray() {
		var parts []string
		c.ForEach(func(_, p gjson.Result) bool {
			if t := field.Of(p, "text"); t.Exists() {
				parts = append(parts, t.String())
			} else if typ := field.Of(p, "type").Str; typ != "" {
				parts = append(parts, "["+typ+"]")
			}
			return true
		})
		return strings.Join(parts, "\n")
	}
	return c.String()
}

// Note implements view.Codec: a user message.
func (*Codec) Note(text string) []byte {
	t := textvalue.String(text)
	b := make([]byte, 0, len(t)+32)
	b = append(b, `{"content":`...)
	b = append(b, t...)
	return append(b, `,"role":"user"}`...)
}

// Splice implements view.Codec: the messages array is rewritten as the
// kept messages and the inserted ones, joined by commas; every other byte
// of the body stays.
func (c *Codec) Splice(r *view.Request, e view.Edit) ([]byte, error) {
	if r.Array[1] == 0 {
		return nil, errors.New("chat: no messages array to splice")
	}
	return view.SpliceArray(r, r.Array, e)
}

// Error implements view.Codec: the error body chat completions clients read
// (OpenAI's).
func (*Codec) Error(status int, typ, msg string) []byte { return apierror.OpenAI(typ, msg) }
