// Package messages is the codec of Anthropic's Messages format
// (POST /v1/messages), the only API Claude Code speaks.
//
// The conversation is the top-level "messages" array; "system", "tools",
// "thinking", "metadata", "context_management", "output_config" and every
// other field stay byte for byte as received. The engine sees:
//   - the head: the first message when it is a user message (the task; for
//     Claude Code also its system reminders);
//   - steps: a user message alone, or an assistant message with the next
//     user message when that one opens with the tool_result blocks
//     answering its tool_use blocks (glued);
//   - outputs: each tool_result block's content, which a digest may replace
//     with a string (tool_use_id and is_error stay); a user message's own
//     text, which only the shrinking of the newest steps may digest;
//   - frozen: assistant messages carrying thinking, redacted_thinking,
//     compaction (server compaction, compact_20260112) or
//     server tool blocks are never edited (dropped only with their step);
//     an output carrying a cache_control marker or an image, document or
//     search result is never digested (markers are never added, moved or
//     removed by an edit).
//
// Summaries and markers are user messages with one text block.
//
// A Codec is safe for concurrent use.
package messages

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/compaction"
	"github.com/condense-proxy/condense-proxy/codec/internal/field"
	"github.com/condense-proxy/condense-proxy/codec/internal/items"
	"github.com/condense-proxy/condense-proxy/codec/internal/textvalue"
	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// Format is the codec's wire format name.
const Format = "messages"

// Codec reads and writes Messages requests.
type Codec struct {
	counter       *tokenizer.Counter
	bindsThinking func(model string) bool
}

var (
	_ view.Codec    = (*Codec)(nil)
	_ view.Finisher = (*Codec)(nil)
)

// Option configures a Codec.
type Option func(*Codec)

// BindsThinking tells the codec which models bind thinking blocks to
// their prefix (see Finish): the model registry's answer. Without it no
// model does, and thinking settings are forwarded as received.
func BindsThinking(f func(model string) bool) Option {
	return func(c *Codec) { c.bindsThinking = f }
}

// New returns the Messages codec, counting with counter.
func New(counter *tokenizer.Counter, opts ...Option) *Codec {
	c := &Codec{counter: counter}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Format implements view.Codec.
func (*Codec) Format() string { return Format }

// Scan implements view.Codec: one validating pass over the body finds the
// top-level fields and the messages; each message is counted with the
// per-item cache, the system prompt and the tools with it too.
//
// A body that is not a JSON object, has an escaped top-level key (it may
// decode to one the scan looks for), or has no messages array is
// view.ErrNotRequest, as is an empty messages array.
func (c *Codec) Scan(body []byte, encodingFor func(model string) string) (*view.Request, error) {
	// An empty messages array: the API's own error answers it.
	r, obj, enc, f, err := items.ScanFields(c.counter, body, "messages", "messages-message", false, encodingFor, topKeys[:], c.countScanned)
	if err != nil {
		return nil, err
	}
	r.Private = f
	r.Total += c.countRest(enc, r, obj)
	if len(r.Items) > 0 && isTask(r.Raw(0)) {
		r.Head = 1
	}
	if n := len(r.Items); n > 0 {
		r.Compaction = lastCompaction(r.Raw(n - 1))
	}
	return r, nil
}

// lastCompaction returns the agent whose compaction instruction the last
// message carries when it is a user message ("" otherwise): Claude Code
// sends it as the last user message's text, after the tool results of the
// turn when it compacts in a tool loop.
func lastCompaction(raw string) string {
	var sp [2][2]int
	if !jsonscan.FieldSpans(raw, []string{"role", "content"}, sp[:]) || strValue(raw, sp[0]) != view.RoleUser || sp[1][1] == 0 {
		return ""
	}
	return compaction.Content(raw[sp[1][0]:sp[1][1]])
}

// isTask reports whether a message is a user message that answers no tool
// call: the task the head keeps.
func isTask(raw string) bool {
	var sp [2][2]int
	if !jsonscan.FieldSpans(raw, []string{"role", "content"}, sp[:]) || strValue(raw, sp[0]) != view.RoleUser {
		return false
	}
	if sp[1][1] == 0 {
		return false
	}
	content := raw[sp[1][0]:sp[1][1]]
	return !strings.HasPrefix(content, "[") || gjson.Get(content, "0.type").Str != "tool_result"
}

func strValue(raw string, sp [2]int) string {
	if sp[1] == 0 {
		return ""
	}
	return field.Str(raw[sp[0]:sp[1]])
}

// Note implements view.Codec: a user message with one text block.
func (*Codec) Note(text string) []byte {
	t := textvalue.String(text)
	b := make([]byte, 0, len(t)+64)
	b = append(b, `{"role":"user","content":[{"type":"text","text":`...)
	b = append(b, t...)
	return append(b, "}]}"...)
}

// Splice implements view.Codec: the messages array is rewritten as the
// kept messages and the inserted ones; every other byte of the body stays.
func (c *Codec) Splice(r *view.Request, e view.Edit) ([]byte, error) {
	if r.Array[1] == 0 {
		return nil, errors.New("messages: no messages array to splice")
	}
	return view.SpliceArray(r, r.Array, e)
}

// Error implements view.Codec: Anthropic's error body, its type named
// by status where Anthropic names one (typ otherwise, when it is one of
// Anthropic's).
func (*Codec) Error(status int, typ, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": errorType(status, typ), "message": msg}})
	return b
}

// errorType is the Anthropic error type of a status.
func errorType(status int, typ string) string {
	switch status {
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		return "api_error"
	}
	if typ == "invalid_request_error" {
		return typ
	}
	return "api_error"
}
