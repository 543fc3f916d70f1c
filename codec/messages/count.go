package messages

import (
	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/field"
	"github.com/condense-proxy/condense-proxy/codec/internal/items"
	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/view"
)

// Token estimates of the Messages format. Claude's tokenizer is not
// public: text is counted with the registry's encoding for the model and
// the registry's safety factor (1.2 for Claude) covers the difference;
// the fixed parts below follow Anthropic's documentation and stay on the
// safe side (a request counted high is condensed a little early, never
// rejected for being over the window).
const (
	// messageOverhead wraps one message (role and turn markers).
	messageOverhead = 4
	// blockOverhead wraps one content block.
	blockOverhead = 2
	// toolUseSystemPrompt is the system prompt Anthropic adds when tools
	// are present (346 tokens for tool_choice auto on Claude 4 models,
	// per the tool-use pricing table).
	toolUseSystemPrompt = 346
	// toolOverhead wraps one tool definition.
	toolOverhead = 8
	// imageTokens is a fixed image estimate: Anthropic charges about
	// width×height/750, at most about 1,600 tokens once an image is
	// scaled to its limit. The image bytes are never decoded.
	imageTokens = 1600
)

// opaqueTokens counts an opaque blob (a redacted_thinking block's data, a
// base64 document) as a quarter of its length: conservative and cheap
// (never tokenized).
func opaqueTokens(s string) int { return (len(s) + 3) / 4 }

// countMessage counts one message: its blocks by their text (text,
// thinking, tool inputs and results), opaque data by its length, images
// at a fixed estimate; signatures, ids and cache markers as nothing.
func (c *Codec) countMessage(enc, raw string) int {
	g := gjson.Parse(raw)
	if !g.IsObject() {
		return messageOverhead + c.counter.Text(enc, raw)
	}
	return messageOverhead + c.content(enc, field.Of(g, "content"))
}

// countScanned is countMessage for a message the scan read the fields of
// (items.Element, of topKeys): its content is read from its span when that
// is its first occurrence.
func (c *Codec) countScanned(enc, raw string, e items.Element) int {
	if !e.Exact {
		return c.countMessage(enc, raw)
	}
	return messageOverhead + c.content(enc, spanValue(raw, e.Spans[tContent]))
}

// spanValue is the value at sp in raw (the empty Result when sp is {0, 0}).
func spanValue(raw string, sp [2]int) gjson.Result {
	if sp[1] == 0 {
		return gjson.Result{}
	}
	return field.Value(raw[sp[0]:sp[1]])
}

// content counts a string or an array of blocks.
func (c *Codec) content(enc string, v gjson.Result) int {
	switch {
	case v.Type == gjson.String:
		return c.counter.Text(enc, v.Str)
	case v.IsArray():
		n := 0
		v.ForEach(func(_, b gjson.Result) bool {
			n += blockOverhead + c.block(enc, b)
			return true
		})
		return n
	case v.Type == gjson.Null || !v.Exists():
		return 0
	}
	return c.counter.Text(enc, v.Raw)
}

// block counts one content block.
func (c *Codec) block(enc string, b gjson.Result) int {
	switch field.Of(b, "type").Str {
	case "text":
		return c.counter.Text(enc, field.Of(b, "text").String())
	case "thinking":
		return c.counter.Text(enc, field.Of(b, "thinking").String())
	case "redacted_thinking":
		return opaqueTokens(field.Of(b, "data").Str)
	case "compaction":
		// Its summary by its text; a signature as nothing.
		return c.counter.Text(enc, field.Of(b, "content").String())
	case "tool_use", "server_tool_use", "mcp_tool_use":
		return c.counter.Text(enc, field.Of(b, "name").String()) + c.counter.Text(enc, field.Of(b, "input").Raw)
	case "tool_result", "mcp_tool_result":
		return c.content(enc, field.Of(b, "content"))
	case "image":
		return imageTokens
	case "document":
		src := field.Of(b, "source")
		switch field.Of(src, "type").Str {
		case "text":
			return c.counter.Text(enc, field.Of(src, "data").String())
		case "content":
			return c.content(enc, field.Of(src, "content"))
		case "base64":
			return opaqueTokens(field.Of(src, "data").Str)
		}
		return c.counter.Text(enc, src.Raw)
	}
	return c.counter.Text(enc, b.Raw)
}

// countRest counts what is outside the messages: the system prompt, the
// tools (with the tool-use system prompt they bring) and a structured
// output schema. Other fields (thinking, metadata, max_tokens…) are
// settings, not input.
func (c *Codec) countRest(enc string, r *view.Request, obj *jsonscan.Object) int {
	n := 0
	if sp, ok := obj.Get("system"); ok {
		raw := r.Span(sp[0], sp[1])
		k, _ := c.counter.Cached(enc, "messages-system", raw, func() int { return c.content(enc, gjson.Parse(raw)) })
		n += k
	}
	if sp, ok := obj.Get("tools"); ok {
		raw := r.Span(sp[0], sp[1])
		k, _ := c.counter.Cached(enc, "messages-tools", raw, func() int { return c.tools(enc, gjson.Parse(raw)) })
		n += k
	}
	if sp, ok := obj.Get("output_config"); ok {
		if f := gjson.Parse(r.Span(sp[0], sp[1])).Get("format"); f.IsObject() {
			n += c.counter.Text(enc, f.Raw)
		}
	}
	return n
}

// tools counts tool definitions: a client tool by its name, description
// and input schema; server tools (web_search…) by their JSON.
func (c *Codec) tools(enc string, tools gjson.Result) int {
	if !tools.IsArray() {
		return 0
	}
	n := 0
	tools.ForEach(func(_, t gjson.Result) bool {
		n += toolOverhead
		if s := t.Get("input_schema"); s.Exists() {
			n += c.counter.Text(enc, t.Get("name").String()) + c.counter.Text(enc, t.Get("description").String()) + c.counter.Text(enc, s.Raw)
		} else {
			n += c.counter.Text(enc, t.Raw)
		}
		return true
	})
	if n > 0 {
		n += toolUseSystemPrompt
	}
	return n
}
