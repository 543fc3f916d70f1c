// Package view is the neutral picture of an LLM request that the
// condensing engine works on, whatever the request's wire format.
//
// A request travels route → codec → engine → codec → upstream: the proxy
// route picks the Codec of its wire format (chat completions, Anthropic
// Messages, OpenAI Responses); the codec scans the raw body into a Request
// — ordered items with their raw byte spans and token counts, and, when
// condensing is needed, each item's role, tool calls, tool outputs and
// which items are glued into one step; the engine (package condense, with
// package selective) decides what to cut, summarize or digest, and the
// codec writes those edits back into the raw bytes, never re-serializing
// the whole body: items replaced by others are an Edit (Codec.Splice); a
// value replaced inside an item (a tool output's digest, shortened
// arguments) is a Patch of the body (ApplyPatches), written as the codec
// renders it; an Edit carries the patches of the items it keeps, so that
// digests and a window are one splice of the body as received (Compose
// maps an edit planned on a digested copy onto it). The engine never learns a format's field names: adding a
// format is adding a codec.
//
// A codec owns every byte of its format in both directions. Besides
// Codec, it has optional capabilities, each a small interface found by
// type assertion: Deriver (the scan of an edited body, from the edit),
// Finisher (a last adjustment of a condensed body), Aligner (the items a
// splice adds at an edit's seams), Asker (a summary
// asked in place), Tools (the tool the proxy answers itself), Meter (the
// upstream's answers: end of turn, failure, tool calls, usage), Pinger
// (keep-alive pings), SummaryAPI (summary requests and their answers),
// Stripper (fields some upstreams refuse) and Sniffer (whose request a
// body is). No package outside codec/ spells a format's field names
// (internal/formatnames checks it).
package view

import (
	"errors"
	"unsafe"
)

// ErrNotRequest is returned by Scan when a body is not a request of the
// codec's format (not JSON, or no items array): it is forwarded untouched.
var ErrNotRequest = errors.New("not a request of this format")

// ErrTooManyItems is returned by Scan when a request has more items than
// the configured limit (the proxy answers 413).
var ErrTooManyItems = errors.New("too many messages in request")

// ErrInvalid is returned by Parse when the items break a rule the API
// enforces (a tool result answering no call, a call left unanswered…).
var ErrInvalid = errors.New("conversation is not valid for the API")

// Roles of items, as the engine sees them.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Request is a scanned request. Codecs fill it; the engine reads it and
// never changes Body.
type Request struct {
	// Body is the raw request as received.
	Body []byte
	// Model is the request's model ("" when absent).
	Model string
	// Encoding is the tokenizer encoding the request was counted with.
	Encoding string
	// Total is the request's input tokens (items, tools, system and the
	// format's overheads), before any safety factor.
	Total int
	// Items are the elements of the request's conversation array, in
	// order.
	Items []Item
	// Array delimits the conversation array in Body, brackets included.
	Array [2]int
	// CacheHits is how many items were counted from the count cache.
	CacheHits int
	// Head is how many leading items are the head (kept verbatim, before
	// any summary): system/developer items and the first user message.
	Head int
	// Untouchable, when set, says why this request must be forwarded as
	// received even over the threshold (a Responses request continuing
	// server-side state with previous_response_id): it is counted and
	// reported, never condensed.
	Untouchable string
	// Compaction, when set, names the agent whose own compaction request
	// this is: its last message is a user message opening with the
	// agent's summary instruction ("claude-code", "codex"…), or it asks
	// the upstream to compact the conversation (a Responses
	// compaction_trigger, with Untouchable set too). The engine never
	// summarizes such a request: it is forwarded as received when it fits
	// the window, with digests of its tool outputs only when it does not.
	Compaction string

	// Parsed reports that Parse ran.
	Parsed bool

	// Codec-private scan data (a codec may keep what its Parse or Splice
	// needs here).
	Private any
}

// Raw returns the raw JSON of item i. The string shares Body's memory
// (Body is never modified while the Request is in use).
func (r *Request) Raw(i int) string {
	it := &r.Items[i]
	return r.Span(it.Start, it.End)
}

// Span returns Body[start:end] as a string sharing Body's memory.
func (r *Request) Span(start, end int) string {
	if start >= end {
		return ""
	}
	return unsafe.String(&r.Body[start], end-start)
}

// Item is one element of the conversation array: a message (chat,
// Messages) or an input item (Responses).
type Item struct {
	// Start and End delimit the item's raw JSON in Request.Body.
	Start, End int
	// Tokens is the item's count.
	Tokens int
	// Hash is the hash of the item's raw JSON that its count is cached
	// under (tokenizer.ItemHash), set by Scan; 0: not known.
	Hash uint64

	// Set by Parse:

	// Role is one of the Role constants (a Responses function call is an
	// assistant item, its output a tool item).
	Role string
	// Glue: the item belongs to the same step as the item before it (a
	// Messages tool_result turn, a Responses call after its reasoning).
	Glue bool
	// Frozen: the item may be dropped with its step but never edited
	// (thinking blocks, encrypted reasoning, compaction items). (Beside
	// Glue: an item is 128 bytes, not 136.)
	Frozen bool
	// Calls are the tool calls the item makes.
	Calls []Call
	// Answers are the ids of the calls the item answers.
	Answers []string
	// Outputs are the tool outputs the item carries whose text a digest
	// may replace.
	Outputs []Output
}

// Call is one tool call.
type Call struct {
	ID   string
	Name string
	// Args is the call's arguments as JSON text.
	Args string
	// ArgsSpan delimits, in Request.Body, a JSON string value holding the
	// arguments as JSON text ({0,0}: the arguments are not a string the
	// engine may shorten).
	ArgsSpan [2]int
}

// Output is one tool output inside an item.
type Output struct {
	// CallID is the call answered.
	CallID string
	// Start and End delimit the output's own raw JSON in Request.Body
	// (the whole item for a chat tool message or a Responses output item;
	// the tool_result block in a Messages user turn).
	Start, End int
	// Value delimits, relative to Start, the value a digest replaces with
	// a JSON string ({0,0}: none; the output is never digested).
	Value [2]int
	// Tokens is the output's count (the whole item's for chat).
	Tokens int
	// Frozen: never digested (marked cache_control, holds images…).
	Frozen bool
	// Own: the item's own text rather than a tool's output (a user
	// message holding a pasted tool result, as some agents send): only
	// the shrinking of the newest steps digests it, and only when it
	// starts with a pasted result's header naming the tool (never a
	// user's own prompt); never selective mode.
	Own bool
}

// Text is the plain text of an item, for transcripts and extractive
// summaries.
type Text struct {
	Role    string
	Text    string   // the message text (text parts joined)
	Calls   []Call   // tool calls made
	Results []Result // tool results carried
}

// Result is one tool result as text.
type Result struct {
	CallID string
	Text   string
}

// Edit describes how a condensed request differs from the received one:
// items [From, To) are replaced by Insert (raw items the codec rendered
// with Note), and every other item is kept, verbatim but for Patches:
// edits of the received body inside the items kept (digests of their
// tool outputs, shortened arguments), each inside one item; those inside
// [From, To) go with their items. One Splice writes it all in one pass.
type Edit struct {
	From, To int
	Insert   [][]byte
	Patches  []Patch
}

// Codec reads and writes one wire format. Codecs are safe for concurrent
// use; a Request is used by one goroutine at a time.
type Codec interface {
	// Format names the wire format ("chat", "messages", "responses").
	Format() string
	// Scan validates body, counts it and finds its head. encodingFor gets the model name
	// and returns the tokenizer encoding to count with. It returns
	// ErrNotRequest for a body that is not a request of this format, and
	// ErrTooManyItems over the item limit.
	Scan(body []byte, encodingFor func(model string) string) (*Request, error)
	// Parse fills in the items' roles, calls, outputs and glue, checking
	// the pairing rules of the API (ErrInvalid).
	Parse(r *Request) error
	// Text returns the plain text of item i of a parsed request.
	Text(r *Request, i int) Text
	// Note renders text as a user-side item of this format (a summary or
	// a marker), raw JSON.
	Note(text string) []byte
	// Splice returns r.Body with e applied to its items array (its
	// patches too, in the same pass); every other byte stays as it was.
	Splice(r *Request, e Edit) ([]byte, error)
	// Error returns the error body this format's clients read, for an
	// answer the proxy gives itself (status, an OpenAI-style error type,
	// a message).
	Error(status int, typ, msg string) []byte
}

// Finisher is an optional capability of a Codec: a last adjustment of a
// condensed body that the format needs (Messages: thinking blocks after
// a changed prefix). in is the request as received; out the condensed
// body. It returns the body to forward and headers to add to the
// outgoing request.
type Finisher interface {
	Finish(in *Request, out []byte) (body []byte, headers []Header, err error)
}

// Aligner is an optional capability of a Codec whose Splice adds items at
// an edit's seams (Gemini: a filler turn where two contents of one role
// would meet): Align returns e with those items inserted, the edit Splice
// applies, so that the engine lays the derived request (Deriver) out as
// the body is. Splice of an aligned edit adds nothing more.
type Aligner interface {
	Align(r *Request, e Edit) Edit
}

// Header is one header to add to the outgoing request.
type Header struct{ Name, Value string }
