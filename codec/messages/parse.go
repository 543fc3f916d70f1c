package messages

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

// block is one content block of a message, as Parse reads it: its span
// relative to the message and the fields the rules need (the last
// occurrence of a repeated key, as the API's decoder takes it).
type block struct {
	start, end int    // span in the message's raw JSON
	typ        string // the block's type
	fields     [len(blockKeys)][2]int
}

var blockKeys = [...]string{"type", "id", "name", "input", "tool_use_id", "content", "cache_control"}

const (
	bType = iota
	bID
	bName
	bInput
	bToolUseID
	bContent
	bCacheControl
)

// blocks returns the blocks of a message's content array, given the
// spans of its elements in raw, in buf's memory; ok is false when an
// element is not an object.
func blocks(raw string, elems [][2]int, buf []block) ([]block, bool) {
	out := buf[:0]
	for _, e := range elems {
		if raw[e[0]] != '{' {
			return nil, false
		}
		b := block{start: e[0], end: e[1]}
		if !jsonscan.FieldSpansValid(raw[e[0]:e[1]], blockKeys[:], b.fields[:]) {
			return nil, false
		}
		for k := range b.fields {
			if b.fields[k][1] > 0 {
				b.fields[k][0] += b.start
				b.fields[k][1] += b.start
			}
		}
		b.typ = strValue(raw, b.fields[bType])
		out = append(out, b)
	}
	return out, true
}

// has reports whether the block has field k.
func (b *block) has(k int) bool { return b.fields[k][1] > 0 }

// value returns field k of the block as parsed JSON.
func (b *block) value(raw string, k int) gjson.Result {
	if !b.has(k) {
		return gjson.Result{}
	}
	return gjson.Parse(raw[b.fields[k][0]:b.fields[k][1]])
}

// Block types by what the engine may do with them.
var (
	// frozenAssistant blocks make their message never edited: thinking is
	// signed over its content (and, for some models, over everything
	// before it); server tool calls come with their results in the same
	// message.
	frozenAssistant = map[string]bool{
		"thinking": true, "redacted_thinking": true,
		"server_tool_use": true, "web_search_tool_result": true, "web_fetch_tool_result": true,
		"code_execution_tool_result": true, "bash_code_execution_tool_result": true,
		"text_editor_code_execution_tool_result": true, "mcp_tool_use": true, "mcp_tool_result": true,
		"container_upload": true, "tool_search_tool_result": true,
		// Server compaction (compact_20260112): the summary of everything
		// before it, possibly signed; sent back as received.
		"compaction": true,
	}
)

// topKeys are the message fields Parse reads (and the scan finds,
// items.Fields).
var topKeys = [2]string{"role", "content"}

const (
	tRole = iota
	tContent
)

// Parse implements view.Codec.
//
// Roles: user, assistant and system; any other is view.ErrInvalid (the
// API would refuse the request). Claude Code 2.1.197 with its default
// model (claude-opus-4-8, beta mid-conversation-system-2026-04-07) sends
// system messages among the messages: the list of agent types right after
// the first user message, and every few steps a reminder ("The task tools
// haven't been used recently…") after the newest tool results, which stays
// in the history. A system message is text only and frozen (never
// edited). The leading ones — right after the head, as the agent types —
// join the head: never cut, never moved, no summary before them. A later
// one is glued to the step before it (the moment it speaks of): kept or
// cut with that step, never split from it; a summary of a cut range gets
// its text. (The head cannot run through the latest one: a reminder every
// few steps would pin the whole conversation and nothing would be
// condensed.) An assistant message's tool_use blocks are its calls; a
// user message whose content opens with tool_result blocks
// answers them and is glued to the assistant message before it. A
// tool_result after another kind of block is view.ErrInvalid (the API
// wants them first). The engine's step split checks the pairing itself.
//
// Outputs: each tool_result's content (a string or text blocks; one with a
// cache_control marker, inside or on the block, or holding images,
// documents or search results is frozen); the text of a user message that
// answers nothing (Own). Assistant messages with thinking or server tool
// blocks are frozen.
func (c *Codec) Parse(r *view.Request) error {
	var top [2][2]int
	var elems [][2]int
	var p parser
	lastCompaction := -1
	scanned, _ := r.Private.(*items.Fields)
	for i := range r.Items {
		it := &r.Items[i]
		*it = view.Item{Start: it.Start, End: it.End, Tokens: it.Tokens, Hash: it.Hash}
		raw := r.Raw(i)
		if e := scanned.Element(i); e.Spans != nil {
			// The scan's spans (the last occurrences, as here), and the
			// content's blocks read from them.
			if !e.Object {
				return fmt.Errorf("%w: message %d is not an object", view.ErrInvalid, i)
			}
			copy(top[:], e.Spans)
			elems = elems[:0]
			if sp := top[tContent]; sp[1] > 0 {
				elems = jsonscan.ArrayElemsValid(raw[sp[0]:sp[1]], elems)
				for k := range elems {
					elems[k][0] += sp[0]
					elems[k][1] += sp[0]
				}
			}
		} else if !jsonscan.FieldSpansElemsValid(raw, topKeys[:], top[:], "content", &elems) {
			return fmt.Errorf("%w: message %d is not an object", view.ErrInvalid, i)
		}
		role := strValue(raw, top[0])
		content := top[1]
		if content[1] == 0 {
			return fmt.Errorf("%w: message %d has no content", view.ErrInvalid, i)
		}
		isArray := raw[content[0]] == '['
		var bs []block
		if isArray {
			var ok bool
			if bs, ok = blocks(raw, elems, p.blocks); !ok {
				return fmt.Errorf("%w: message %d has a content block that is not an object", view.ErrInvalid, i)
			}
		} else if raw[content[0]] != '"' {
			return fmt.Errorf("%w: message %d content is neither a string nor blocks", view.ErrInvalid, i)
		}
		switch role {
		case view.RoleAssistant:
			it.Role = role
			p.calls = p.calls[:0]
			for _, b := range bs {
				switch {
				case b.typ == "tool_use":
					id := b.value(raw, bID).Str
					if id == "" {
						return fmt.Errorf("%w: message %d has a tool_use without id", view.ErrInvalid, i)
					}
					p.calls = append(p.calls, view.Call{ID: id, Name: b.value(raw, bName).Str, Args: b.value(raw, bInput).Raw})
				case frozenAssistant[b.typ]:
					it.Frozen = true
					if b.typ == "compaction" {
						lastCompaction = i
					}
				}
			}
			it.Calls = p.callS.Copy(p.calls)
		case view.RoleUser:
			it.Role = role
			if err := p.user(it, raw, content, bs, isArray, i); err != nil {
				return err
			}
		case view.RoleSystem:
			// Instructions amid the turns: never edited; in the head or
			// glued to the step before (see above). Text only, as the
			// top-level system.
			for _, b := range bs {
				if b.typ != "text" {
					return fmt.Errorf("%w: system message %d has a %q block", view.ErrInvalid, i, b.typ)
				}
			}
			it.Role, it.Frozen, it.Glue = role, true, i > 0
		default:
			return fmt.Errorf("%w: message %d has role %q", view.ErrInvalid, i, role)
		}
		if cap(bs) > cap(p.blocks) {
			p.blocks = bs // the larger buffer, for the next message
		}
	}
	if r.Head > 0 && len(r.Items[0].Answers) > 0 {
		r.Head = 0
	}
	// System messages right after the head join it (see above).
	for r.Head < len(r.Items) && r.Items[r.Head].Role == view.RoleSystem {
		r.Head++
	}
	// The API ignores what precedes the latest compaction block: the head
	// runs through its message (and the tool results answering it), so
	// the block is never moved and no summary goes before it.
	if lastCompaction >= 0 {
		r.Head = max(r.Head, lastCompaction+1)
		for r.Head < len(r.Items) && r.Items[r.Head].Glue {
			r.Head++
		}
	}
	r.Parsed = true
	return nil
}

// parser is what Parse reuses from message to message: its buffers, and
// the shared blocks the items' calls, answers and outputs are copied to.
type parser struct {
	blocks  []block
	calls   []view.Call
	answers []string
	outputs []view.Output
	callS   slab.Slab[view.Call]
	answerS slab.Slab[string]
	outS    slab.Slab[view.Output]
}

// user fills in a user message: the tool results it opens with, or its
// own text.
func (p *parser) user(it *view.Item, raw string, content [2]int, bs []block, isArray bool, i int) error {
	p.answers, p.outputs = p.answers[:0], p.outputs[:0]
	front := true
	for _, b := range bs {
		if b.typ != "tool_result" {
			front = false
			continue
		}
		if !front {
			return fmt.Errorf("%w: message %d has a tool_result after other blocks", view.ErrInvalid, i)
		}
		id := b.value(raw, bToolUseID).Str
		if id == "" {
			return fmt.Errorf("%w: message %d has a tool_result without tool_use_id", view.ErrInvalid, i)
		}
		out := view.Output{CallID: id, Start: it.Start + b.start, End: it.Start + b.end}
		out.Tokens = outputTokens(it, b, raw)
		if b.has(bContent) && !b.has(bCacheControl) && digestible(raw[b.fields[bContent][0]:b.fields[bContent][1]]) {
			out.Value = [2]int{b.fields[bContent][0] - b.start, b.fields[bContent][1] - b.start}
		} else {
			out.Frozen = true
		}
		p.answers = append(p.answers, id)
		p.outputs = append(p.outputs, out)
	}
	if len(p.answers) > 0 {
		it.Answers, it.Outputs = p.answerS.Copy(p.answers), p.outS.Copy(p.outputs)
		it.Glue = true
		return nil
	}
	// Its own text, which only the shrinking of the newest steps may
	// digest (a tool result pasted into a user message).
	own := view.Output{Start: it.Start, End: it.End, Value: content, Tokens: it.Tokens, Own: true}
	if isArray && !digestible(raw[content[0]:content[1]]) {
		own.Frozen = true
	}
	it.Outputs = p.outS.One(own)
	return nil
}

// outputTokens estimates a tool_result's share of its message: the
// message's count in proportion to the block's length.
func outputTokens(it *view.Item, b block, raw string) int {
	if len(raw) == 0 {
		return 0
	}
	return int(int64(it.Tokens) * int64(b.end-b.start) / int64(len(raw)))
}

// digestible reports whether a content value (raw JSON) is text a digest
// may replace: a string, or text blocks without cache_control markers (an
// image, document or search result would be lost, a marker moved).
func digestible(raw string) bool {
	switch raw[0] {
	case '"':
		return true
	case '[':
		ok := true
		gjson.Parse(raw).ForEach(func(_, p gjson.Result) bool {
			ok = field.Of(p, "type").Str == "text" && !field.Of(p, "cache_control").Exists()
			return ok
		})
		return ok
	}
	return false
}

// Text implements view.Codec.
func (c *Codec) Text(r *view.Request, i int) view.Text {
	it := &r.Items[i]
	raw := r.Raw(i)
	t := view.Text{Role: it.Role, Calls: it.Calls}
	var content gjson.Result
	scanned, _ := r.Private.(*items.Fields)
	if e := scanned.Element(i); e.Exact {
		content = spanValue(raw, e.Spans[tContent]) // the first content
	} else {
		content = field.Get(raw, "content")
	}
	if content.Type == gjson.String {
		t.Text = content.Str
		return t
	}
	var parts []string
	content.ForEach(func(_, b gjson.Result) bool {
		switch typ := field.Of(b, "type").Str; typ {
		case "text":
			parts = append(parts, field.Of(b, "text").String())
		case "tool_result":
			t.Results = append(t.Results, view.Result{CallID: field.Of(b, "tool_use_id").Str, Text: resultText(field.Of(b, "content"))})
		case "tool_use", "thinking", "redacted_thinking":
			// Calls are in t.Calls; thinking is the model's own scratch.
		case "server_tool_use", "mcp_tool_use":
			parts = append(parts, "["+typ+" "+field.Of(b, "name").String()+" "+field.Of(b, "input").Raw+"]")
		default:
			parts = append(parts, "["+typ+"]")
		}
		return true
	})
	t.Text = strings.Join(parts, "\n")
	return t
}

// resultText is the text of a tool_result's content (text blocks joined;
// other blocks named by their type).
func resultText(v gjson.Result) string {
	if !v.IsArray() {
		return v.String()
	}
	var parts []string
	v.ForEach(func(_, p gjson.Result) bool {
		if field.Of(p, "type").Str == "text" {
			parts = append(parts, field.Of(p, "text").String())
		} else {
			parts = append(parts, "["+field.Of(p, "type").Str+"]")
		}
		return true
	})
	return strings.Join(parts, "\n")
}
