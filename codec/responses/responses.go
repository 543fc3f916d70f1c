// Package responses is the codec of OpenAI's Responses format
// (POST /v1/responses), the only API Codex CLI speaks.
//
// The conversation is the top-level "input" array of items. Codex sends
// the whole history every turn with store:false: its base prompt as
// leading developer items, the user's messages, and for each model turn a
// reasoning item (encrypted_content), the function calls it made
// (exec_command…) and, from the client, their function_call_output items
// paired by call_id. A request that continues server-side state
// (previous_response_id, conversation) carries only the new items: it is
// counted and forwarded untouched (view.Request.Untouchable).
//
// The engine sees:
//   - the head: the leading run of system/developer/user messages (Codex's
//     base prompt, AGENTS.md, environment context and the task); once
//     parsed, extended through the latest compaction item (see Parse);
//   - steps: a user (or developer) message alone, or one model turn — the
//     reasoning, assistant messages and calls it produced, glued to each
//     other — with the outputs answering its calls;
//   - outputs whose `output` text a digest may replace; reasoning,
//     compaction and server-side tool items are frozen (dropped with their
//     step, never edited).
//
// Summaries and markers are user messages with one input_text part.
//
// A Codec is safe for concurrent use.
package responses

import (
	"errors"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/apierror"
	"github.com/condense-proxy/condense-proxy/codec/internal/compaction"
	"github.com/condense-proxy/condense-proxy/codec/internal/field"
	"github.com/condense-proxy/condense-proxy/codec/internal/items"
	"github.com/condense-proxy/condense-proxy/codec/internal/textvalue"
	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// Format is the codec's wire format name.
const Format = "responses"

// Codec reads and writes Responses requests.
type Codec struct {
	counter *tokenizer.Counter
}

var _ view.Codec = (*Codec)(nil)

// New returns the Responses codec, counting with counter.
func New(counter *tokenizer.Counter) *Codec { return &Codec{counter: counter} }

// Format implements view.Codec.
func (*Codec) Format() string { return Format }

// Scan implements view.Codec: one validating pass over the body finds the
// top-level fields and the input items; each item is counted with the
// per-item cache, the instructions and tools with it too.
//
// A body that is not a JSON object, has an escaped top-level key (it may
// decode to one the scan looks for), or whose input is absent or a plain
// string (a single turn: nothing to condense, view.ErrSingleTurn) is
// view.ErrNotRequest.
func (c *Codec) Scan(body []byte, encodingFor func(model string) string) (*view.Request, error) {
	r, obj, enc, f, err := items.ScanFields(c.counter, body, "input", "responses-item", true, encodingFor, scanKeys[:], c.countScanned)
	if errors.Is(err, view.ErrNotRequest) && singleTurn(body) {
		return nil, view.ErrSingleTurn
	}
	if err != nil {
		return nil, err
	}
	r.Private = f
	r.Total += c.countRest(enc, r, obj) + replyPriming
	r.Head = head(r)
	r.Untouchable = untouchable(r, obj)
	if n := len(r.Items); n > 0 {
		lastCompaction(r, r.Raw(n-1))
	}
	return r, nil
}

// CompactionTrigger is what view.Request.Compaction says of a request
// whose last input item is {"type":"compaction_trigger"}: Codex (with
// OpenAI as provider, "remote compaction v2") asks the upstream to compact
// the conversation and expects exactly one compaction output item back.
const CompactionTrigger = "compaction_trigger"

// lastCompaction marks the agent's own compaction request by its last
// input item: a compaction_trigger (forwarded untouched: the upstream
// compacts, and the trigger must stay last with the tools unchanged), or
// a user message opening with an agent's summary instruction (Codex's
// local compaction prompt with custom providers).
func lastCompaction(r *view.Request, raw string) {
	var sp [3][2]int
	if !jsonscan.FieldSpans(raw, []string{"type", "role", "content"}, sp[:]) {
		return
	}
	typ, role := strValue(raw, sp[0]), strValue(raw, sp[1])
	switch {
	case typ == CompactionTrigger:
		r.Compaction = CompactionTrigger
		if r.Untouchable == "" {
			r.Untouchable = "compaction_trigger: the upstream compacts the conversation"
		}
	case (typ == "message" || typ == "") && role == view.RoleUser && sp[2][1] > 0:
		r.Compaction = compaction.Content(raw[sp[2][0]:sp[2][1]])
	}
}

// untouchable says why a request must be forwarded as received: it
// continues state the upstream keeps (the items before it are not in the
// body, so nothing here can be condensed, and cutting the new items would
// lose them for good).
func untouchable(r *view.Request, obj *jsonscan.Object) string {
	for _, key := range []string{"previous_response_id", "conversation"} {
		sp, ok := obj.Get(key)
		if !ok {
			continue
		}
		v := gjson.Parse(r.Span(sp[0], sp[1]))
		if v.Type == gjson.Null || (v.Type == gjson.String && v.Str == "") {
			continue
		}
		return key + " continues server-side state"
	}
	return ""
}

// kind returns an item's type and role, from its top-level fields (the
// last occurrence of a repeated key, as decoders take it). A message may
// omit its type ("easy input message").
func kind(raw string) (typ, role string) {
	var sp [2][2]int
	if !jsonscan.FieldSpans(raw, []string{"type", "role"}, sp[:]) {
		return "", ""
	}
	typ = strValue(raw, sp[0])
	role = strValue(raw, sp[1])
	if typ == "" && role != "" {
		typ = "message"
	}
	return typ, role
}

func strValue(raw string, sp [2]int) string {
	if sp[1] == 0 {
		return ""
	}
	return field.Str(raw[sp[0]:sp[1]])
}

// AdditionalTools is the input item type that declares tools in the
// conversation rather than in the top-level tools field (Codex 0.169 with
// gpt-6.1-sol: {"type":"additional_tools","role":"developer","tools":[…]}).
const AdditionalTools = "additional_tools"

// head returns how many leading items are the head: the leading run of
// system, developer and user messages (Codex sends its base prompt as
// developer items, then AGENTS.md and its environment context as user
// messages, then the task) and additional_tools items (Codex's tool
// declarations, first of all with gpt-6.1-sol). Parse extends it through
// the latest compaction and additional_tools item.
func head(r *view.Request) int {
	h := 0
	for h < len(r.Items) {
		typ, role := kind(r.Raw(h))
		if typ == AdditionalTools {
			h++
			continue
		}
		if typ != "message" || (role != view.RoleSystem && role != view.RoleDeveloper && role != view.RoleUser) {
			break
		}
		h++
	}
	return h
}

// isCompaction reports whether an input item type carries, compacted,
// everything before it: a compaction item (/v1/responses/compact, server
// compaction, compaction_trigger's answer), its older name, and the
// context_compaction item newer Codex versions know.
func isCompaction(typ string) bool {
	return typ == "compaction" || typ == "compaction_summary" || typ == "context_compaction"
}

// Note implements view.Codec: a user message with one input_text part.
func (*Codec) Note(text string) []byte {
	t := textvalue.String(text)
	b := make([]byte, 0, len(t)+64)
	b = append(b, `{"type":"message","role":"user","content":[{"type":"input_text","text":`...)
	b = append(b, t...)
	return append(b, "}]}"...)
}

// Splice implements view.Codec: the input array is rewritten as the kept
// items and the inserted ones; every other byte of the body stays.
func (c *Codec) Splice(r *view.Request, e view.Edit) ([]byte, error) {
	if r.Array[1] == 0 {
		return nil, errors.New("responses: no input array to splice")
	}
	return view.SpliceArray(r, r.Array, e)
}

// Error implements view.Codec: the error body Responses clients read
// (OpenAI's).
func (*Codec) Error(status int, typ, msg string) []byte { return apierror.OpenAI(typ, msg) }
