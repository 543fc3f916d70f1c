package corpus

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/internal/fakeupstream/fakesign"
)

// MessagesSession is a Claude Code session rebuilt in its native Anthropic
// Messages form: request k is what Claude Code sent before the k-th
// assistant answer of the log, the way Claude Code 2.x builds it —
// Claude-Code-like system blocks (the last two cache-marked), the tools
// the session used, the messages as recorded (string or block content,
// thinking, tool_use and tool_result blocks with is_error and images), and
// the moving cache_control marker on the last block of the last message.
// Thinking blocks are re-signed with fakesign.Default so the
// strict fake accepts them; thinking is enabled in the requests whose
// recorded answer starts with a thinking block (when the rules allow it).
//
// Safe for concurrent use once built.
type MessagesSession struct {
	Name  string
	Model string // the model of the session's answers

	system, tools string // raw JSON
	msgs          []nativeMessage
	turns         []messagesTurn
}

// nativeMessage is one message: its raw JSON and, for the cache marker on
// the last message of a request, its content.
type nativeMessage struct {
	role    string
	raw     string
	str     *string  // string content
	blocks  []string // raw blocks
	thinks  bool     // the first block is thinking or redacted_thinking
	results bool     // a user message that starts with tool_result blocks
}

type messagesTurn struct {
	end      int  // messages in the request
	thinking bool // thinking enabled
}

// claudeSystem imitates Claude Code 2.x's system blocks.
var claudeSystem = func() string {
	b, _ := json.Marshal([]map[string]any{
		{"type": "text", "text": "x-anthropic-billing-header: cc_version=1.0.53; cc_entrypoint=cli;"},
		{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.", "cache_control": map[string]string{"type": "ephemeral"}},
		{"type": "text", "text": "\nYou are an interactive agent that helps users with software engineering tasks. Use the instructions below and the tools available to you to assist the user.\n\n" +
			"# Doing tasks\nRead files before changing them, run the tests after a change, keep answers short.\n\n" +
			"# Tool usage\nUse Read for files, Grep and Glob to search, Bash for commands, Edit and Write to change files.\n",
			"cache_control": map[string]string{"type": "ephemeral"}},
	})
	return string(b)
}()

// LoadMessages reads a Claude Code session log (*.jsonl) into its native
// Messages form.
func LoadMessages(path string) (*MessagesSession, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading session: %w", err)
	}
	s, err := ClaudeMessages(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	s.Name = filepath.Base(path)
	return s, nil
}

// ClaudeMessages rebuilds the requests of a Claude Code session log
// (format F3): the main thread (sidechains left out), assistant lines
// merged by message.id, consecutive user lines merged into one message
// with the tool_result blocks first. Repairs keep every request valid for
// the Messages API: a tool_use left without a result gets an is_error
// "[no result recorded]" result, a tool_result answering no tool_use of the
// previous assistant message is dropped, empty text blocks are dropped, and
// assistant messages before the first user message are skipped.
func ClaudeMessages(data []byte) (*MessagesSession, error) {
	type line struct {
		Type        string `json:"type"`
		IsSidechain bool   `json:"isSidechain"`
		Message     struct {
			ID      string          `json:"id"`
			Model   string          `json:"model"`
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	type rec struct {
		role   string
		id     string
		model  string
		str    *string
		blocks []string
	}
	var recs []rec
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	n := 0
	for sc.Scan() {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		n++
		var l line
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if l.IsSidechain || (l.Type != "user" && l.Type != "assistant") {
			continue
		}
		r := rec{role: l.Type, id: l.Message.ID, model: l.Message.Model}
		c := gjson.ParseBytes(l.Message.Content)
		switch {
		case c.Type == gjson.String:
			if strings.TrimSpace(c.String()) == "" {
				continue
			}
			s := c.String()
			r.str = &s
		case c.IsArray():
			for _, b := range c.Array() {
				if nb, ok := nativeBlock(b); ok {
					r.blocks = append(r.blocks, nb)
				}
			}
			if len(r.blocks) == 0 {
				continue
			}
		default:
			return nil, fmt.Errorf("line %d: content is neither text nor blocks", n)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading session log: %w", err)
	}
	// Merge: assistant lines of one answer (and consecutive answers), and
	// consecutive user lines.
	type merged struct {
		role   string
		model  string
		str    *string
		blocks []string
		lines  int
	}
	var ms []merged
	for _, r := range recs {
		if len(ms) > 0 && ms[len(ms)-1].role == r.role {
			m := &ms[len(ms)-1]
			if m.str != nil {
				m.blocks = []string{textBlock(*m.str)}
				m.str = nil
			}
			if r.str != nil {
				m.blocks = append(m.blocks, textBlock(*r.str))
			} else {
				m.blocks = append(m.blocks, r.blocks...)
			}
			m.lines++
			continue
		}
		ms = append(ms, merged{role: r.role, model: r.model, str: r.str, blocks: r.blocks, lines: 1})
	}
	// Repair pairing, assemble.
	s := &MessagesSession{system: claudeSystem}
	var out []nativeMessage
	var pending []string // tool_use ids of the last assistant message
	for _, m := range ms {
		if m.role == "assistant" {
			if len(out) == 0 {
				continue
			}
			if len(pending) > 0 { // two answers in a row: answer the first one's calls
				out = append(out, userMessage(nil, syntheticResults(pending, nil)))
			}
			pending = nil
			for _, b := range m.blocks {
				if gjson.Get(b, "type").String() == "tool_use" {
					pending = append(pending, gjson.Get(b, "id").String())
				}
			}
			if s.Model == "" && m.model != "" && m.model != "<synthetic>" {
				s.Model = m.model
			}
			out = append(out, assistantMessage(m.blocks))
			continue
		}
		var results, rest []string
		answered := map[string]bool{}
		want := map[string]bool{}
		for _, id := range pending {
			want[id] = true
		}
		for _, b := range m.blocks {
			if gjson.Get(b, "type").String() != "tool_result" {
				rest = append(rest, b)
				continue
			}
			id := gjson.Get(b, "tool_use_id").String()
			if want[id] && !answered[id] {
				answered[id] = true
				results = append(results, b)
			}
		}
		results = append(syntheticResults(pending, answered), results...)
		pending = nil
		if m.str != nil && len(results) == 0 {
			if len(out) > 0 && out[len(out)-1].role == "user" {
				out[len(out)-1] = userMessage(nil, append(out[len(out)-1].content(), textBlock(*m.str)))
			} else {
				out = append(out, userMessage(m.str, nil))
			}
			continue
		}
		if m.str != nil {
			rest = []string{textBlock(*m.str)}
		}
		blocks := append(results, rest...)
		if len(blocks) == 0 {
			continue
		}
		if len(out) > 0 && out[len(out)-1].role == "user" {
			blocks = append(out[len(out)-1].content(), blocks...)
			out[len(out)-1] = userMessage(nil, blocks)
			continue
		}
		out = append(out, userMessage(nil, blocks))
	}
	if len(pending) > 0 {
		out = append(out, userMessage(nil, syntheticResults(pending, nil)))
	}
	if len(out) < 2 {
		return nil, errors.New("no conversation left after conversion")
	}
	s.msgs = out
	if s.Model == "" {
		s.Model = "claude-sonnet-4-20250514"
	}
	// Requests: before every answer, and the whole log when it ends with
	// the user.
	for j, m := range out {
		if m.role != "assistant" || j == 0 {
			continue
		}
		thinking := m.thinks
		if out[j-1].results && (j < 2 || !out[j-2].thinks) {
			thinking = false // the loop's assistant message has no thinking block
		}
		s.turns = append(s.turns, messagesTurn{end: j, thinking: thinking})
	}
	if out[len(out)-1].role == "user" {
		s.turns = append(s.turns, messagesTurn{end: len(out)})
	}
	s.tools = toolsOf(out)
	return s, nil
}

// nativeBlock returns a recorded block as it is sent, thinking blocks
// re-signed; false for blocks to drop (empty text).
func nativeBlock(b gjson.Result) (string, bool) {
	switch b.Get("type").String() {
	case "text":
		if strings.TrimSpace(b.Get("text").String()) == "" {
			return "", false
		}
	case "thinking":
		t := b.Get("thinking").String()
		out, _ := json.Marshal(map[string]string{"type": "thinking", "thinking": t, "signature": fakesign.Default.SignThinking(t)})
		return string(out), true
	case "redacted_thinking":
		out, _ := json.Marshal(map[string]string{"type": "redacted_thinking", "data": fakesign.Default.RedactedData(b.Get("data").String())})
		return string(out), true
	case "tool_result":
		// Empty text parts inside a result are dropped too.
		if c := b.Get("content"); c.IsArray() {
			raw := b.Raw
			for i := len(c.Array()) - 1; i >= 0; i-- {
				p := c.Array()[i]
				if p.Get("type").String() == "text" && strings.TrimSpace(p.Get("text").String()) == "" {
					raw, _ = sjson.Delete(raw, fmt.Sprintf("content.%d", i))
				}
			}
			return raw, true
		}
	}
	return b.Raw, true
}

func textBlock(s string) string {
	b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
	return string(b)
}

func syntheticResults(ids []string, answered map[string]bool) []string {
	var out []string
	for _, id := range ids {
		if !answered[id] {
			b, _ := json.Marshal(map[string]any{"type": "tool_result", "tool_use_id": id, "content": "[no result recorded]", "is_error": true})
			out = append(out, string(b))
		}
	}
	return out
}

func assistantMessage(blocks []string) nativeMessage {
	m := nativeMessage{role: "assistant", blocks: blocks}
	if len(blocks) > 0 {
		t := gjson.Get(blocks[0], "type").String()
		m.thinks = t == "thinking" || t == "redacted_thinking"
	}
	m.raw = `{"role":"assistant","content":[` + strings.Join(blocks, ",") + `]}`
	return m
}

func userMessage(str *string, blocks []string) nativeMessage {
	m := nativeMessage{role: "user", str: str, blocks: blocks}
	if str != nil {
		b, _ := json.Marshal(*str)
		m.raw = `{"role":"user","content":` + string(b) + `}`
		return m
	}
	// tool_result blocks first, as the API wants them.
	var res, rest []string
	for _, b := range blocks {
		if gjson.Get(b, "type").String() == "tool_result" {
			res = append(res, b)
		} else {
			rest = append(rest, b)
		}
	}
	m.blocks = append(res, rest...)
	m.results = len(res) > 0
	m.raw = `{"role":"user","content":[` + strings.Join(m.blocks, ",") + `]}`
	return m
}

// content returns the message's content as blocks.
func (m nativeMessage) content() []string {
	if m.str != nil {
		return []string{textBlock(*m.str)}
	}
	return append([]string(nil), m.blocks...)
}

// marked returns the message with Claude Code's moving cache marker on
// its last block.
func (m nativeMessage) marked() string {
	blocks := m.content()
	last, _ := sjson.SetRaw(blocks[len(blocks)-1], "cache_control", `{"type":"ephemeral"}`)
	blocks[len(blocks)-1] = last
	return `{"role":"` + m.role + `","content":[` + strings.Join(blocks, ",") + `]}`
}

// toolsOf makes a tools list from the tool_use blocks: each tool once, in
// order of first use, with an input schema naming the keys it was given.
func toolsOf(msgs []nativeMessage) string {
	type tool struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"input_schema"`
	}
	var tools []*tool
	byName := map[string]*tool{}
	for _, m := range msgs {
		if m.role != "assistant" {
			continue
		}
		for _, b := range m.blocks {
			r := gjson.Parse(b)
			if r.Get("type").String() != "tool_use" {
				continue
			}
			name := r.Get("name").String()
			t := byName[name]
			if t == nil {
				t = &tool{Name: name, Description: "Claude Code's " + name + " tool (schema rebuilt from the recorded calls).",
					InputSchema: map[string]any{"type": "object", "properties": map[string]any{}}}
				byName[name] = t
				tools = append(tools, t)
			}
			props := t.InputSchema["properties"].(map[string]any)
			r.Get("input").ForEach(func(k, _ gjson.Result) bool {
				props[k.String()] = map[string]any{}
				return true
			})
		}
	}
	b, _ := json.Marshal(tools)
	return string(b)
}

// Turns returns how many requests the session holds.
func (s *MessagesSession) Turns() int { return len(s.turns) }

// Len returns the number of messages of the whole session.
func (s *MessagesSession) Len() int { return len(s.msgs) }

// TurnEnd returns the number of messages of request k.
func (s *MessagesSession) TurnEnd(k int) int { return s.turns[k].end }

// Request returns the body of request k (0 ≤ k < Turns()), as Claude Code
// sends it: streamed, with the moving cache marker on the last message.
func (s *MessagesSession) Request(k int) ([]byte, error) {
	if k < 0 || k >= len(s.turns) {
		return nil, fmt.Errorf("request %d of %d", k, len(s.turns))
	}
	t := s.turns[k]
	var b strings.Builder
	b.WriteString(`{"model":`)
	model, _ := json.Marshal(s.Model)
	b.Write(model)
	b.WriteString(`,"messages":[`)
	for i, m := range s.msgs[:t.end] {
		if i > 0 {
			b.WriteByte(',')
		}
		if i == t.end-1 {
			b.WriteString(m.marked())
		} else {
			b.WriteString(m.raw)
		}
	}
	b.WriteString(`],"system":`)
	b.WriteString(s.system)
	b.WriteString(`,"tools":`)
	b.WriteString(s.tools)
	b.WriteString(`,"metadata":{"user_id":"user_corpus_replay"},"max_tokens":32000`)
	if t.thinking {
		b.WriteString(`,"thinking":{"type":"enabled","budget_tokens":31999}`)
	}
	b.WriteString(`,"stream":true}`)
	return []byte(b.String()), nil
}
