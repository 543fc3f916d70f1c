package responses

import (
	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/field"
	"github.com/condense-proxy/condense-proxy/codec/internal/items"
	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/view"
)

// Token estimates of the Responses format. OpenAI does not document how
// items are rendered; these follow the chat format's published overheads
// and stay on the safe side (a request counted a little high is condensed
// a little early, never rejected for being over the window).
const (
	// itemOverhead wraps every input item (its type, role or call
	// markers), as a chat message's 3 tokens plus one for the item kind.
	itemOverhead = 4
	// instructionsOverhead wraps the instructions, rendered as a system
	// message.
	instructionsOverhead = 3
	// replyPriming starts the model's answer.
	replyPriming = 3
	// toolOverhead wraps one tool definition; toolsOverhead the tools
	// namespace around them (as chat's function definitions).
	toolOverhead  = 8
	toolsOverhead = 12
	// imageHigh and imageLow are fixed image estimates: a 1024×1024 image
	// at high detail (the default, auto, may pick it), and any image at
	// low detail. The image bytes are never decoded.
	imageHigh = 765
	imageLow  = 85
)

// encryptedTokens estimates what an encrypted_content blob (a reasoning
// item's hidden reasoning, a compaction item's state) costs when sent
// back. The blob is base64 of ciphertext at least as long as the
// plaintext: ¾ of its length is at most the plaintext in bytes, about 4
// bytes a token, so the reasoning is at most about 3/16 of the length in
// tokens. It is counted as a quarter of the length: conservative, and
// cheap (the blob is never decoded or tokenized — base64 is the slowest
// text there is for BPE).
func encryptedTokens(blob string) int { return (len(blob) + 3) / 4 }

// countItem counts one input item: its text-bearing fields by their text
// (message parts, call names and arguments, outputs, reasoning summaries),
// encrypted content and images by fixed rules, identifiers and status
// fields as nothing, and any other field by its JSON text.
func (c *Codec) countItem(enc, raw string) int {
	g := gjson.Parse(raw)
	if !g.IsObject() {
		return itemOverhead + c.counter.Text(enc, raw)
	}
	n := itemOverhead
	field.Each(g, func(k, v gjson.Result) bool {
		switch k.Str {
		case "type", "id", "call_id", "status", "role", "approval_request_id", "created_by":
			// Identifiers and markers: within the item overhead.
		case "content", "summary", "output":
			n += c.parts(enc, v)
		case "encrypted_content":
			n += encryptedTokens(v.Str)
		default:
			n += c.value(enc, v)
		}
		return true
	})
	return n
}

// scanKeys are the item fields the scan finds (items.Fields): all the
// fields of a message or of a call's output, whose count, parse and text
// then read them from their spans.
var scanKeys = [...]string{"type", "role", "content", "call_id", "output"}

const (
	sType = iota
	sRole
	sContent
	sCallID
	sOutput
)

// countScanned is countItem for an item the scan read the fields of
// (items.Element, of scanKeys): an item that has no other field is
// counted from their spans.
func (c *Codec) countScanned(enc, raw string, e items.Element) int {
	if !e.Only {
		return c.countItem(enc, raw)
	}
	// As countItem: the type, role and call id within the overhead.
	n := itemOverhead
	for _, k := range [...]int{sContent, sOutput} {
		if sp := e.Spans[k]; sp[1] > 0 {
			n += c.parts(enc, field.Value(raw[sp[0]:sp[1]]))
		}
	}
	return n
}

// value counts a field by its text: strings by their content, null and
// booleans as nothing, anything else by its JSON.
func (c *Codec) value(enc string, v gjson.Result) int {
	switch v.Type {
	case gjson.String:
		return c.counter.Text(enc, v.Str)
	case gjson.Null, gjson.True, gjson.False:
		return 0
	default:
		return c.counter.Text(enc, v.Raw)
	}
}

// parts counts a string, one content part (a computer_call_output's
// screenshot) or an array of parts: text parts by their text, images at a
// fixed estimate, files by their size, anything else by its JSON.
func (c *Codec) parts(enc string, v gjson.Result) int {
	if v.IsObject() {
		return c.part(enc, v)
	}
	if !v.IsArray() {
		return c.value(enc, v)
	}
	n := 0
	v.ForEach(func(_, p gjson.Result) bool {
		n += c.part(enc, p)
		return true
	})
	return n
}

// part counts one content part.
func (c *Codec) part(enc string, p gjson.Result) int {
	switch field.Of(p, "type").Str {
	case "input_text", "output_text", "text", "summary_text", "reasoning_text":
		return c.counter.Text(enc, field.Of(p, "text").String())
	case "refusal":
		return c.counter.Text(enc, field.Of(p, "refusal").String())
	case "input_image", "image", "computer_screenshot":
		if field.Of(p, "detail").Str == "low" {
			return imageLow
		}
		return imageHigh
	case "input_file":
		// Inline files are billed as their extracted text (and page
		// images); 4 bytes of base64 a token keeps it conservative
		// without decoding. A file referenced by id or URL is not in the
		// body and cannot be counted here.
		return len(field.Of(p, "file_data").Str)/4 + c.counter.Text(enc, field.Of(p, "filename").Str)
	}
	return c.counter.Text(enc, p.Raw)
}

// countRest counts what is outside the items: instructions, tools, the
// structured-output schema and a prompt template's variables. Other fields
// (reasoning, include, store, prompt_cache_key, metadata…) are settings,
// not input.
func (c *Codec) countRest(enc string, r *view.Request, obj *jsonscan.Object) int {
	n := 0
	if sp, ok := obj.Get("instructions"); ok {
		raw := r.Span(sp[0], sp[1])
		if v := gjson.Parse(raw); v.Type != gjson.Null {
			k, _ := c.counter.Cached(enc, "responses-instructions", raw, func() int {
				return instructionsOverhead + c.parts(enc, v)
			})
			n += k
		}
	}
	if sp, ok := obj.Get("tools"); ok {
		raw := r.Span(sp[0], sp[1])
		k, _ := c.counter.Cached(enc, "responses-tools", raw, func() int { return c.tools(enc, gjson.Parse(raw)) })
		n += k
	}
	if sp, ok := obj.Get("text"); ok {
		// A json_schema format is sent to the model as text.
		if f := gjson.Parse(r.Span(sp[0], sp[1])).Get("format"); f.IsObject() && f.Get("type").Str != "text" {
			n += c.counter.Text(enc, f.Raw)
		}
	}
	if sp, ok := obj.Get("prompt"); ok {
		if v := gjson.Parse(r.Span(sp[0], sp[1])); v.IsObject() {
			n += c.counter.Text(enc, v.Get("variables").Raw)
		}
	}
	return n
}

// tools counts tool definitions: a function by its name, description and
// parameters schema; a custom tool by its name, description and format
// (grammar); built-in tools (web_search, local_shell…) by their JSON.
func (c *Codec) tools(enc string, tools gjson.Result) int {
	if !tools.IsArray() {
		return c.value(enc, tools)
	}
	n := 0
	tools.ForEach(func(_, t gjson.Result) bool {
		n += toolOverhead
		switch t.Get("type").Str {
		case "function", "custom":
			n += c.counter.Text(enc, t.Get("name").String()) + c.counter.Text(enc, t.Get("description").String()) +
				c.counter.Text(enc, t.Get("parameters").Raw) + c.counter.Text(enc, t.Get("format").Raw)
		default:
			n += c.counter.Text(enc, t.Raw)
		}
		return true
	})
	if n > 0 {
		n += toolsOverhead
	}
	return n
}
