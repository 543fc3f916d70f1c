package keepalive

import (
	"bytes"
	"strings"

	"github.com/tidwall/gjson"
)

// Wire formats, as the engine's Report names them.
const (
	FormatChat      = "chat"
	FormatMessages  = "messages"
	FormatResponses = "responses"
)

// Bounds of what an answer's parser holds: a JSON answer is read whole up
// to maxJSON (past it the answer is not understood, so nothing is
// pinged); a server-sent event's line up to maxLine (past it that event
// is skipped).
const (
	maxJSON = 4 << 20
	maxLine = 1 << 20
)

// Usage is what an answer says of its prompt, in tokens.
type Usage struct {
	// Known: the answer reported usage at all.
	Known bool
	// CacheRead and CacheWrite are the prompt tokens read from and
	// written to the provider's prompt cache; Uncached the rest of the
	// prompt. OpenAI-style usage reports no writes: what was not read is
	// Uncached (its cache is written at the input price).
	CacheRead, CacheWrite, Uncached int
	// Output is the answer's tokens.
	Output int
}

// Prompt is the prompt's size.
func (u Usage) Prompt() int { return u.CacheRead + u.CacheWrite + u.Uncached }

// readMostly reports whether the prompt was mostly read from the cache:
// what a successful ping shows. A ping that shows mostly a write (or no
// usage at all) found the cache gone.
func (u Usage) readMostly() bool {
	return u.Known && u.CacheRead > 0 && u.CacheRead >= u.CacheWrite+u.Uncached
}

// Answer is what an upstream answer said, as far as keep-alive cares.
type Answer struct {
	// EndTurn: the model ended the agent's turn — Messages stop_reason
	// end_turn, chat finish_reason stop without tool calls, a Responses
	// response completed without calls for the client to run. The agent
	// now waits for its user: an idle gap may follow.
	EndTurn bool
	Usage   Usage
}

// parser reads one answer, JSON or server-sent events, as its bytes
// arrive, holding at most maxJSON (JSON) or maxLine (one SSE line). Not
// safe for concurrent use.
type parser struct {
	format string
	sse    bool
	buf    []byte
	over   bool // JSON past maxJSON, or the current SSE line past maxLine

	stop      string // finish or stop reason
	completed bool   // Responses: response.completed seen
	failed    bool   // an error event, an incomplete or failed response
	toolCall  bool   // the answer asks the client to run a tool
	usage     Usage
}

func newParser(format string, sse bool) *parser { return &parser{format: format, sse: sse} }

// Write takes the answer's next bytes.
func (p *parser) Write(b []byte) {
	if !p.sse {
		if p.over || len(p.buf)+len(b) > maxJSON {
			p.over, p.buf = true, nil
			return
		}
		p.buf = append(p.buf, b...)
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if !p.over {
			if len(p.buf)+len(chunk) > maxLine {
				p.over, p.buf = true, p.buf[:0]
			} else {
				p.buf = append(p.buf, chunk...)
			}
		}
		if i < 0 {
			return
		}
		if !p.over {
			p.line(p.buf)
		}
		p.over, p.buf = false, p.buf[:0]
		b = b[i+1:]
	}
}

// line handles one SSE line (without its newline).
func (p *parser) line(l []byte) {
	l = bytes.TrimSuffix(l, []byte{'\r'})
	data, ok := bytes.CutPrefix(l, []byte("data:"))
	if !ok {
		return // event names, comments, ids: the data says it all
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "[DONE]" || !gjson.ValidBytes(data) {
		return
	}
	v := gjson.ParseBytes(data)
	switch p.format {
	case FormatChat:
		p.chat(v, true)
	case FormatMessages:
		switch v.Get("type").String() {
		case "message_start":
			p.messagesUsage(v.Get("message.usage"))
		case "message_delta":
			if s := v.Get("delta.stop_reason"); s.Type == gjson.String {
				p.stop = s.String()
			}
			p.messagesUsage(v.Get("usage"))
		case "content_block_start":
			if v.Get("content_block.type").String() == "tool_use" {
				p.toolCall = true
			}
		case "error":
			p.failed = true
		}
	case FormatResponses:
		switch v.Get("type").String() {
		case "response.output_item.done", "response.output_item.added":
			if clientCall(v.Get("item.type").String()) {
				p.toolCall = true
			}
		case "response.completed":
			p.responses(v.Get("response"))
		case "response.incomplete", "response.failed", "error":
			p.failed = true
		}
	}
}

// chat reads a chat completion or one of its chunks.
func (p *parser) chat(v gjson.Result, chunk bool) {
	v.Get("choices").ForEach(func(_, c gjson.Result) bool {
		if fr := c.Get("finish_reason"); fr.Type == gjson.String && fr.String() != "" {
			p.stop = fr.String()
		}
		calls := c.Get("message.tool_calls")
		if chunk {
			calls = c.Get("delta.tool_calls")
		}
		if calls.IsArray() && len(calls.Array()) > 0 || c.Get("message.function_call").IsObject() || c.Get("delta.function_call").IsObject() {
			p.toolCall = true
		}
		return true
	})
	if u := v.Get("usage"); u.IsObject() {
		p.openAIUsage(u)
	}
}

// responses reads a Responses response object.
func (p *parser) responses(r gjson.Result) {
	p.completed = r.Get("status").String() == "completed"
	r.Get("output").ForEach(func(_, it gjson.Result) bool {
		if clientCall(it.Get("type").String()) {
			p.toolCall = true
		}
		return true
	})
	if u := r.Get("usage"); u.IsObject() {
		p.openAIUsage(u)
	}
}

// clientCall reports whether a Responses output item asks the client to
// act (run a tool, approve a call): the turn goes on.
func clientCall(typ string) bool {
	switch typ {
	case "function_call", "custom_tool_call", "local_shell_call", "shell_call", "apply_patch_call",
		"computer_call", "mcp_approval_request":
		return true
	}
	return false
}

// messagesUsage merges an Anthropic usage object: message_start carries
// the prompt's, message_delta the output's (and, from newer APIs, the
// prompt's again).
func (p *parser) messagesUsage(u gjson.Result) {
	if !u.IsObject() {
		return
	}
	p.usage.Known = true
	if v := u.Get("input_tokens"); v.Exists() {
		p.usage.Uncached = int(v.Int())
	}
	if v := u.Get("cache_read_input_tokens"); v.Exists() {
		p.usage.CacheRead = int(v.Int())
	}
	if v := u.Get("cache_creation_input_tokens"); v.Exists() {
		p.usage.CacheWrite = int(v.Int())
	}
	if v := u.Get("output_tokens"); v.Exists() {
		p.usage.Output = int(v.Int())
	}
}

// openAIUsage reads chat's or Responses' usage: the prompt's total with
// the cached part in its details (and, through LiteLLM from Anthropic,
// the cache read and write at the top level).
func (p *parser) openAIUsage(u gjson.Result) {
	prompt := u.Get("prompt_tokens")
	if !prompt.Exists() {
		prompt = u.Get("input_tokens")
	}
	if !prompt.Exists() {
		return
	}
	read := max(u.Get("prompt_tokens_details.cached_tokens").Int(), u.Get("input_tokens_details.cached_tokens").Int(),
		u.Get("cache_read_input_tokens").Int())
	write := u.Get("cache_creation_input_tokens").Int()
	out := u.Get("completion_tokens")
	if !out.Exists() {
		out = u.Get("output_tokens")
	}
	p.usage = Usage{Known: true, CacheRead: int(read), CacheWrite: int(write),
		Uncached: int(max(0, prompt.Int()-read-write)), Output: int(out.Int())}
}

// result is what the answer said. A JSON answer is parsed here, whole.
func (p *parser) result() Answer {
	if !p.sse && !p.over && gjson.ValidBytes(p.buf) {
		v := gjson.ParseBytes(p.buf)
		switch p.format {
		case FormatChat:
			p.chat(v, false)
		case FormatMessages:
			p.stop = v.Get("stop_reason").String()
			p.messagesUsage(v.Get("usage"))
		case FormatResponses:
			p.responses(v)
		}
	}
	a := Answer{Usage: p.usage}
	if p.failed {
		return a
	}
	switch p.format {
	case FormatChat:
		a.EndTurn = p.stop == "stop" && !p.toolCall
	case FormatMessages:
		a.EndTurn = p.stop == "end_turn" && !p.toolCall
	case FormatResponses:
		a.EndTurn = p.completed && !p.toolCall
	}
	return a
}

// isSSE reports whether a Content-Type is server-sent events.
func isSSE(contentType string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(contentType)), "text/event-stream")
}
