package fakeupstream

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// Messages is a strict stand-in for Anthropic's Messages API:
// POST /v1/messages (with or without ?beta=true) and
// POST /v1/messages/count_tokens.
//
// It rejects with 400 and an Anthropic-shaped error body what the real API
// rejects (see ValidateMessages), answers valid requests with JSON or, when
// the body asks for "stream": true, the server-sent events Claude Code
// reads (message_start, content_block_start/delta/stop, message_delta with
// usage, message_stop), and counts_tokens with {"input_tokens": N}, N from
// CountMessages — the same count its answers report as usage.input_tokens,
// so a test sees what the upstream really received.
//
// Thinking blocks it answers with are signed by Signer, and a request is
// rejected when a thinking or redacted_thinking block was not issued by it
// for exactly that content.
//
// Every request is recorded (Received, Rejected, Take, Reset). The zero
// value is ready to use; fields must be set before the first request. Safe
// for concurrent use.
type Messages struct {
	recorder

	// Signer signs and checks thinking blocks. Zero: DefaultSigner.
	Signer Signer
	// Counter counts input tokens. Nil: one made on first use.
	Counter *tokenizer.Counter
	// Answer, if set, decides the reply to each valid /v1/messages request
	// (a Script's Messages method, for instance). Nil: a short text, after
	// a short thinking block when the request enables thinking.
	Answer func(body []byte) Reply
	// Summarize, if set, answers condense-proxy's summarizer calls (see
	// IsSummaryRequest), which never reach Answer: it returns the status
	// and the summary text. Nil: a short fixed summary.
	Summarize func(body []byte) (status int, text string)
	// Delay is the pause before each answer. Zero: DefaultDelay; negative:
	// none.
	Delay time.Duration
	// Usage, if set, says what each answer reports of its prompt (its
	// cache reads and writes). Nil: the count, nothing cached.
	Usage func(body []byte) Usage

	once sync.Once
	seq  atomic.Int64
}

var _ http.Handler = (*Messages)(nil)

// APIError is a request the fakes reject: the status and the message the
// real API gives (Type is the error type, "invalid_request_error" for
// most; Param and Code are OpenAI's fields).
type APIError struct {
	Status  int
	Type    string
	Message string
	Param   string
	Code    string
}

func (e *APIError) Error() string { return e.Message }

func invalid(format string, args ...any) *APIError {
	return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: fmt.Sprintf(format, args...)}
}

func isMessagesPath(p string) bool {
	return p == "/v1/messages" || strings.HasPrefix(p, "/v1/messages/")
}

func (m *Messages) counter() *tokenizer.Counter {
	m.once.Do(func() {
		if m.Counter == nil {
			m.Counter = tokenizer.New(tokenizer.Options{})
		}
	})
	return m.Counter
}

// ServeHTTP implements http.Handler.
func (m *Messages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, fail, err := m.receive(w, r, m.Delay, writeAnthropicError)
	if err != nil {
		fail(invalid("reading body: %v", err), 0)
		return
	}
	countOnly := r.URL.Path == "/v1/messages/count_tokens"
	switch {
	case r.URL.Path != "/v1/messages" && !countOnly:
		fail(&APIError{Status: http.StatusNotFound, Type: "not_found_error", Message: "Not Found"}, 0)
		return
	case r.Method != http.MethodPost:
		fail(&APIError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error", Message: "Method Not Allowed: use POST"}, 0)
		return
	}
	if e := ValidateMessages(body, m.Signer, countOnly); e != nil {
		fail(e, 0)
		return
	}
	tokens := CountMessages(m.counter(), m.Signer, body)
	if countOnly {
		m.add(r, body, http.StatusOK, tokens, "")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"input_tokens\":%d}\n", tokens)
		return
	}
	thinkingOn := thinkingEnabled(gjson.GetBytes(body, "thinking"))
	var rep Reply
	switch {
	case IsSummaryRequest(body):
		rep = Reply{Text: DefaultSummary}
		if m.Summarize != nil {
			rep.Status, rep.Text = m.Summarize(body)
			if rep.Status != http.StatusOK {
				rep.Error = "summarizer failure"
			}
		}
	case m.Answer != nil:
		rep = m.Answer(body)
	default:
		rep = Reply{Thinking: "The request is clear.", Text: "Done."}
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		typ := "api_error"
		if rep.Status < 500 {
			typ = "invalid_request_error"
		}
		fail(&APIError{Status: rep.Status, Type: typ, Message: rep.Error}, tokens)
		return
	}
	m.addAnswered(r, body, http.StatusOK, tokens, "", summaryAnswer(body, rep.Text))
	id := fmt.Sprintf("msg_fake%06d", m.seq.Add(1))
	model := gjson.GetBytes(body, "model").String()
	blocks := m.blocks(rep, thinkingOn, id)
	out := 0
	for _, b := range blocks {
		out += m.counter().Text(tokenizer.O200kBase, b.text+b.input)
	}
	stop := "end_turn"
	if len(rep.Calls) > 0 {
		stop = "tool_use"
	}
	usage := map[string]any{"input_tokens": tokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": out}
	startUsage := map[string]any{"input_tokens": tokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}
	if u, ok := usageOf(m.Usage, body, tokens); ok {
		usage, startUsage = u.anthropic(out), u.anthropic(1)
	}
	if !gjson.GetBytes(body, "stream").Bool() {
		content := make([]any, len(blocks))
		for i, b := range blocks {
			content[i] = b.final()
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if fl != nil {
			fl.Flush()
		}
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": startUsage}})
	event("ping", map[string]any{"type": "ping"})
	for i, b := range blocks {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": b.start()})
		for _, d := range b.deltas() {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": usage})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// block is one content block of an answer.
type block struct {
	typ   string // text, thinking, tool_use
	text  string // text or thinking
	sig   string
	id    string
	name  string
	input string // raw JSON
}

func (m *Messages) blocks(rep Reply, thinkingOn bool, msgID string) []block {
	var out []block
	if thinkingOn && rep.Thinking != "" {
		out = append(out, block{typ: "thinking", text: rep.Thinking, sig: m.Signer.SignThinking(rep.Thinking)})
	}
	if rep.Text != "" || len(rep.Calls) == 0 {
		out = append(out, block{typ: "text", text: rep.Text})
	}
	for i, c := range rep.Calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("toolu_%s_%d", strings.TrimPrefix(msgID, "msg_"), i)
		}
		in := c.Input
		if in == "" || !gjson.Valid(in) {
			in = "{}"
		}
		out = append(out, block{typ: "tool_use", id: id, name: c.Name, input: in})
	}
	return out
}

func (b block) final() map[string]any {
	switch b.typ {
	case "thinking":
		return map[string]any{"type": "thinking", "thinking": b.text, "signature": b.sig}
	case "tool_use":
		return map[string]any{"type": "tool_use", "id": b.id, "name": b.name, "input": json.RawMessage(b.input)}
	}
	return map[string]any{"type": "text", "text": b.text}
}

func (b block) start() map[string]any {
	switch b.typ {
	case "thinking":
		return map[string]any{"type": "thinking", "thinking": "", "signature": ""}
	case "tool_use":
		return map[string]any{"type": "tool_use", "id": b.id, "name": b.name, "input": map[string]any{}}
	}
	return map[string]any{"type": "text", "text": ""}
}

func (b block) deltas() []map[string]any {
	var out []map[string]any
	switch b.typ {
	case "thinking":
		for _, p := range pieces(b.text, 3) {
			out = append(out, map[string]any{"type": "thinking_delta", "thinking": p})
		}
		out = append(out, map[string]any{"type": "signature_delta", "signature": b.sig})
	case "tool_use":
		for _, p := range pieces(b.input, 3) {
			out = append(out, map[string]any{"type": "input_json_delta", "partial_json": p})
		}
	default:
		for _, p := range pieces(b.text, 3) {
			out = append(out, map[string]any{"type": "text_delta", "text": p})
		}
	}
	return out
}

// pieces cuts s into at most n non-empty parts at rune boundaries (one
// empty part for an empty s).
func pieces(s string, n int) []string {
	if s == "" {
		return []string{""}
	}
	size := (len(s) + n - 1) / n
	var out []string
	for len(s) > 0 {
		k := min(size, len(s))
		for k < len(s) && !utf8Start(s[k]) {
			k++
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func writeAnthropicError(w http.ResponseWriter, e *APIError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": e.Type, "message": e.Message}, "request_id": "req_fake"})
}

func thinkingEnabled(t gjson.Result) bool {
	typ := t.Get("type").String()
	return typ == "enabled" || typ == "adaptive"
}

// Block types the Messages API knows, by the role that may send them.
var (
	userBlocks = map[string]bool{"text": true, "image": true, "document": true, "tool_result": true, "search_result": true, "container_upload": true}
	// compaction: server compaction's block (compact_20260112), which the
	// client sends back in later requests.
	assistantBlocks = map[string]bool{"text": true, "thinking": true, "redacted_thinking": true, "tool_use": true, "server_tool_use": true, "mcp_tool_use": true, "container_upload": true, "compaction": true}
)

func assistantBlock(typ string) bool {
	return assistantBlocks[typ] || strings.HasSuffix(typ, "_tool_result")
}

// systemMessage checks the content of a system message among the
// messages: a non-empty string or non-empty text blocks (markers counted).
func systemMessage(c gjson.Result, i int, mark func(string, gjson.Result) *APIError) *APIError {
	switch {
	case c.Type == gjson.String:
		if strings.TrimSpace(c.Str) == "" {
			return invalid("messages.%d: system messages must have non-empty content", i)
		}
		return nil
	case c.IsArray():
		var err *APIError
		n := 0
		c.ForEach(func(k, b gjson.Result) bool {
			n++
			if b.Get("type").String() != "text" {
				err = invalid("messages.%d.content.%d.type: Input should be 'text'", i, k.Int())
				return false
			}
			if strings.TrimSpace(b.Get("text").String()) == "" {
				err = invalid("messages: text content blocks must contain non-whitespace text")
				return false
			}
			err = mark(fmt.Sprintf("messages.%d.content.%d", i, k.Int()), b.Get("cache_control"))
			return err == nil
		})
		if err == nil && n == 0 {
			err = invalid("messages.%d: system messages must have non-empty content", i)
		}
		return err
	}
	return invalid("messages.%d.content: Input should be a valid string or a list of content blocks", i)
}

// cacheMark is one cache_control marker, in processing order.
type cacheMark struct {
	path string
	ttl  string
}

// ValidateMessages applies the Messages API's rules to a request body and
// returns the error the real API answers, or nil. countTokens relaxes what
// /v1/messages/count_tokens does not need (max_tokens). The rules:
//
//   - a JSON object with a model, max_tokens (not for count_tokens) and a
//     non-empty messages array; system a string or text blocks;
//   - roles user and assistant, and system after the first message (a
//     system message among the turns: non-empty text, not between a
//     tool_use and its tool_result);
//     content a non-empty string or blocks of types the role may send; no
//     empty text block;
//   - every tool_use of an assistant message answered by a tool_result in
//     the next message, tool_results first in their user message and each
//     answering a tool_use of the previous assistant message; tool_use ids
//     unique;
//   - thinking and redacted_thinking blocks carrying a signature (data)
//     that signer issued for exactly their content;
//   - with thinking enabled, the assistant message before the last user
//     message of an unfinished tool loop (one that starts with
//     tool_results) starts with a thinking or redacted_thinking block, and
//     a final (prefill) assistant message does not end with one; with
//     thinking disabled, a final assistant message holds none;
//   - at most 4 cache_control markers in tools, system and messages, of
//     type ephemeral, and no ttl "1h" marker after a "5m" one (the default)
//     in that order.
func ValidateMessages(body []byte, signer Signer, countTokens bool) *APIError {
	if !gjson.ValidBytes(body) {
		return invalid("There was an error parsing the body of your request: not valid JSON")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return invalid("Input should be a valid dictionary")
	}
	if root.Get("model").String() == "" {
		return invalid("model: Field required")
	}
	if !countTokens {
		if mt := root.Get("max_tokens"); mt.Type != gjson.Number || mt.Int() < 1 {
			return invalid("max_tokens: Field required")
		}
	}
	msgs := root.Get("messages")
	if !msgs.Exists() {
		return invalid("messages: Field required")
	}
	if !msgs.IsArray() {
		return invalid("messages: Input should be a valid list")
	}
	list := msgs.Array()
	if len(list) == 0 {
		return invalid("messages: at least one message is required")
	}
	var marks []cacheMark
	mark := func(path string, cc gjson.Result) *APIError {
		if !cc.Exists() || cc.Type == gjson.Null {
			return nil
		}
		if cc.Get("type").String() != "ephemeral" {
			return invalid("%s.cache_control.type: Input should be 'ephemeral'", path)
		}
		ttl := cc.Get("ttl").String()
		switch ttl {
		case "":
			ttl = "5m"
		case "5m", "1h":
		default:
			return invalid("%s.cache_control.ttl: Input should be '5m' or '1h'", path)
		}
		marks = append(marks, cacheMark{path, ttl})
		return nil
	}
	var err *APIError
	root.Get("tools").ForEach(func(k, t gjson.Result) bool {
		if t.Get("name").String() == "" && t.Get("type").String() == "" {
			err = invalid("tools.%d.name: Field required", k.Int())
			return false
		}
		err = mark(fmt.Sprintf("tools.%d", k.Int()), t.Get("cache_control"))
		return err == nil
	})
	if err != nil {
		return err
	}
	switch sys := root.Get("system"); {
	case !sys.Exists(), sys.Type == gjson.String, sys.Type == gjson.Null:
	case sys.IsArray():
		sys.ForEach(func(k, b gjson.Result) bool {
			if b.Get("type").String() != "text" {
				err = invalid("system.%d.type: Input should be 'text'", k.Int())
				return false
			}
			if strings.TrimSpace(b.Get("text").String()) == "" {
				err = invalid("system: text content blocks must be non-empty")
				return false
			}
			err = mark(fmt.Sprintf("system.%d", k.Int()), b.Get("cache_control"))
			return err == nil
		})
		if err != nil {
			return err
		}
	default:
		return invalid("system: Input should be a valid string or a list of text blocks")
	}
	thinkingOn := thinkingEnabled(root.Get("thinking"))
	seenToolUse := map[string]bool{}
	var prevUses []string // tool_use ids of the previous message when it is an assistant message
	prevIndex := -1
	parsed := make([][]blk, len(list))
	for i, m := range list {
		role := m.Get("role").String()
		if role == "system" && i > 0 {
			// A system message among the turns: Claude Code 2.1.197 sends
			// one after the first user message with its default model
			// (claude-opus-4-8, beta mid-conversation-system-2026-04-07),
			// and the API accepts it. Text only, like the top-level
			// system; it does not stand between a tool_use and its
			// tool_result. First of all it was never seen: still refused.
			if e := systemMessage(m.Get("content"), i, mark); e != nil {
				return e
			}
			if len(prevUses) > 0 {
				return invalid("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", prevIndex, strings.Join(prevUses, ", "))
			}
			parsed[i] = []blk{{typ: "text"}}
			continue
		}
		if role != "user" && role != "assistant" {
			return invalid("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		content := m.Get("content")
		var blocks []blk
		switch {
		case content.Type == gjson.String:
			if strings.TrimSpace(content.String()) == "" && !(role == "assistant" && i == len(list)-1) {
				return invalid("messages.%d: %s messages must have non-empty content", i, role)
			}
			blocks = []blk{{typ: "text", text: content.String()}}
		case content.IsArray():
			content.ForEach(func(_, b gjson.Result) bool {
				blocks = append(blocks, parseBlock(b))
				return true
			})
			if len(blocks) == 0 && !(role == "assistant" && i == len(list)-1) {
				return invalid("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
			}
		default:
			return invalid("messages.%d.content: Input should be a valid string or a list of content blocks", i)
		}
		parsed[i] = blocks
		// Block types, text, signatures, markers.
		for j, b := range blocks {
			path := fmt.Sprintf("messages.%d.content.%d", i, j)
			if (role == "user" && !userBlocks[b.typ]) || (role == "assistant" && !assistantBlock(b.typ)) {
				return invalid("%s.type: Input tag '%s' found using 'type' does not match any of the expected tags for a %s message", path, b.typ, role)
			}
			switch b.typ {
			case "text":
				if strings.TrimSpace(b.text) == "" {
					return invalid("messages: text content blocks must contain non-whitespace text")
				}
			case "thinking":
				if !b.sig.Exists() {
					return invalid("%s.thinking.signature: Field required", path)
				}
				if !signer.VerifyThinking(b.thinking, b.sig.String()) {
					return invalid("%s: Invalid `signature` in `thinking` block", path)
				}
			case "redacted_thinking":
				if !signer.VerifyRedacted(b.data) {
					return invalid("%s: Invalid `data` in `redacted_thinking` block", path)
				}
			case "tool_use":
				if b.id == "" || b.name == "" {
					return invalid("%s.tool_use: id and name are required", path)
				}
				if !b.input.IsObject() {
					return invalid("%s.tool_use.input: Input should be a valid dictionary", path)
				}
				if seenToolUse[b.id] {
					return invalid("messages.%d: `tool_use` ids must be unique (%s)", i, b.id)
				}
				seenToolUse[b.id] = true
			case "tool_result":
				if b.toolUseID == "" {
					return invalid("%s.tool_result.tool_use_id: Field required", path)
				}
				if b.content.IsArray() {
					b.content.ForEach(func(k, inner gjson.Result) bool {
						ib := parseBlock(inner)
						t := ib.typ
						if t != "text" && t != "image" && t != "document" && t != "search_result" && t != "tool_reference" {
							err = invalid("%s.content.%d.type: Input tag '%s' found using 'type' does not match any of the expected tags", path, k.Int(), t)
							return false
						}
						if t == "text" && strings.TrimSpace(ib.text) == "" {
							err = invalid("messages: text content blocks must contain non-whitespace text")
							return false
						}
						err = mark(fmt.Sprintf("%s.content.%d", path, k.Int()), ib.cc)
						return err == nil
					})
					if err != nil {
						return err
					}
				}
			}
			if e := mark(path, b.cc); e != nil {
				return e
			}
		}
		// Pairing of tool_use and tool_result.
		if role == "assistant" {
			if len(prevUses) > 0 {
				return invalid("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", prevIndex, strings.Join(prevUses, ", "))
			}
			prevUses, prevIndex = nil, i
			for _, b := range blocks {
				if b.typ == "tool_use" {
					prevUses = append(prevUses, b.id)
				}
			}
			continue
		}
		leading, total, front := 0, 0, true
		for _, b := range blocks {
			isResult := b.typ == "tool_result"
			front = front && isResult
			if isResult {
				total++
			}
			if front {
				leading++
			}
		}
		if len(prevUses) > 0 && leading < total {
			return invalid("messages.%d: Did not find %d `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.", i, len(prevUses))
		}
		want := map[string]bool{}
		for _, id := range prevUses {
			want[id] = true
		}
		answered := map[string]bool{}
		for j, b := range blocks {
			if b.typ != "tool_result" {
				continue
			}
			if !want[b.toolUseID] || answered[b.toolUseID] {
				return invalid("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.toolUseID)
			}
			answered[b.toolUseID] = true
		}
		var missing []string
		for _, id := range prevUses {
			if !answered[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return invalid("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", prevIndex, strings.Join(missing, ", "))
		}
		prevUses, prevIndex = nil, i
	}
	if len(prevUses) > 0 {
		return invalid("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", prevIndex, strings.Join(prevUses, ", "))
	}
	// Thinking in the final turn.
	last := len(list) - 1
	lastBlocks := parsed[last]
	if list[last].Get("role").String() == "assistant" {
		for j, b := range lastBlocks {
			if !thinkingOn && (b.typ == "thinking" || b.typ == "redacted_thinking") {
				return invalid("messages.%d.content.%d: When thinking is disabled, an `assistant` message in the final position cannot contain `thinking`. To use thinking blocks, enable `thinking` in your request.", last, j)
			}
		}
		if n := len(lastBlocks); thinkingOn && n > 0 {
			if t := lastBlocks[n-1].typ; t == "thinking" || t == "redacted_thinking" {
				return invalid("messages.%d: The final block in an assistant message cannot be `thinking`.", last)
			}
		}
	} else if thinkingOn && last >= 1 && len(lastBlocks) > 0 && lastBlocks[0].typ == "tool_result" {
		found := "text"
		if bs := parsed[last-1]; len(bs) > 0 {
			found = bs[0].typ
		}
		if found != "thinking" && found != "redacted_thinking" {
			return invalid("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking", last-1, found)
		}
	}
	// Prompt-caching markers.
	if len(marks) > 4 {
		return invalid("A maximum of 4 blocks with cache_control may be provided. Found %d.", len(marks))
	}
	seen5m := false
	for _, mk := range marks {
		if mk.ttl == "1h" && seen5m {
			return invalid("%s.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that blocks are processed in the following order: `tools`, `system`, `messages`.", mk.path)
		}
		if mk.ttl == "5m" {
			seen5m = true
		}
	}
	return nil
}

// blk is a content block's fields, read in one pass (blocks holding large
// tool results are scanned once, not once per field).
type blk struct {
	typ, text, thinking, data, id, name, toolUseID string
	sig, input, content, cc                        gjson.Result
}

func parseBlock(v gjson.Result) blk {
	var b blk
	v.ForEach(func(k, x gjson.Result) bool {
		switch k.Str {
		case "type":
			b.typ = x.String()
		case "text":
			b.text = x.String()
		case "thinking":
			b.thinking = x.String()
		case "signature":
			b.sig = x
		case "data":
			b.data = x.String()
		case "id":
			b.id = x.String()
		case "name":
			b.name = x.String()
		case "tool_use_id":
			b.toolUseID = x.String()
		case "input":
			b.input = x
		case "content":
			b.content = x
		case "cache_control":
			b.cc = x
		}
		return true
	})
	return b
}
