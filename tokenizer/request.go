package tokenizer

import (
	"fmt"
	"hash/maphash"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/jsonscan"
)

// MessageFields are the spans of a message's main fields, relative to the
// message's own start ({0, 0}: absent).
type MessageFields struct {
	Role, Content, ToolCallID, ToolCalls [2]int
}

// Overheads of the chat format, as OpenAI documents them for its models:
// every message is wrapped in 3 tokens, a name adds 1, and every reply is
// primed with 3.
const (
	tokensPerMessage = 3
	tokensPerName    = 1
	replyPriming     = 3
	tokensPerTool    = 8  // a function definition's wrapping
	toolsOverhead    = 12 // the tools namespace around them
	tokensPerCall    = 4  // a tool call's wrapping
	imageLowDetail   = 85
	imageHighDetail  = 765 // a 1024x1024 image at high detail
)

// RequestCount is the token count of one chat-completions request.
type RequestCount struct {
	// Model is the request's model field ("" when absent).
	Model string
	// Total is what the request costs as input: messages, tools and the
	// reply priming.
	Total int
	// Messages holds each message's count, in order.
	Messages []int
	// Spans holds each message's [start, end) byte offsets in the body.
	Spans [][2]int
	// Hashes holds each message's ItemHash, its count's cache key.
	Hashes []uint64
	// Fields holds the spans of each message's main fields, relative to
	// the message's start.
	Fields []MessageFields
	// Array is the span of the messages array, brackets included.
	Array [2]int
	// Tools is the count of the tools (and functions) definitions.
	Tools int
	// CacheHits is how many messages were counted from the cache.
	CacheHits int
}

// Request counts the tokens of a chat-completions request body. It returns
// ErrNotChat when body is not a JSON object with a messages array.
func (c *Counter) Request(encoding string, body []byte) (RequestCount, error) {
	return c.RequestFor(body, func(string) string { return encoding })
}

// RequestFor is Request with the encoding chosen from the body's model:
// encodingFor gets the model name (found in the same scan) and returns the
// encoding to count with.
func (c *Counter) RequestFor(body []byte, encodingFor func(model string) string) (RequestCount, error) {
	// The body is only read while Request runs, so it is viewed as a
	// string without a copy. One validating pass finds every part.
	js := unsafe.String(unsafe.SliceData(body), len(body))
	obj, ok := jsonscan.ScanObject(body, "messages", "role", "content", "tool_call_id", "tool_calls")
	if !ok || obj.Array[1] == 0 || obj.EscapedKey {
		return RequestCount{}, ErrNotChat
	}
	sc := struct{ messages [][2]int }{obj.Elements}
	if c.maxMessages > 0 && len(sc.messages) > c.maxMessages {
		return RequestCount{}, fmt.Errorf("%w: %d, limit %d", ErrTooManyMessages, len(sc.messages), c.maxMessages)
	}
	model := ""
	if sp, ok := obj.Get("model"); ok {
		model = gjson.Parse(js[sp[0]:sp[1]]).String()
	}
	encoding := encodingFor(model)
	fields := make([]MessageFields, len(sc.messages))
	for i := range fields {
		f := obj.ElementFields[4*i:]
		fields[i] = MessageFields{Role: f[0], Content: f[1], ToolCallID: f[2], ToolCalls: f[3]}
	}
	rc := RequestCount{Model: model, Messages: make([]int, len(sc.messages)), Hashes: make([]uint64, len(sc.messages)),
		Spans: sc.messages, Fields: fields, Array: obj.Array}
	// Each message is hashed once and looked up with the others under one
	// lock; only those not found are counted.
	for i, sp := range sc.messages {
		rc.Hashes[i] = ItemHash(js[sp[0]:sp[1]])
		rc.Messages[i] = -1
	}
	c.Lookup(encoding, "msg", len(rc.Hashes), func(i int) uint64 { return rc.Hashes[i] }, func(i, n int) {
		rc.Messages[i] = n
		rc.CacheHits++
	})
	for i, sp := range sc.messages {
		if rc.Messages[i] < 0 {
			n, hit := c.messageHash(encoding, js[sp[0]:sp[1]], rc.Hashes[i])
			rc.Messages[i] = n
			if hit {
				rc.CacheHits++
			}
		}
		rc.Total += rc.Messages[i]
	}
	toolsSp, _ := obj.Get("tools")
	functionsSp, _ := obj.Get("functions")
	tools, functions := js[toolsSp[0]:toolsSp[1]], js[functionsSp[0]:functionsSp[1]]
	if tools != "" || functions != "" {
		key := c.key(encoding, "tools", tools, functions)
		n, ok := c.messages.get(key)
		if !ok {
			n = c.tools(encoding, gjson.Parse(tools), gjson.Parse(functions))
			c.messages.put(key, n)
		}
		rc.Tools = n
	}
	rc.Total += rc.Tools + replyPriming
	return rc, nil
}

// MessageRaw counts one message given as raw JSON, using the per-message
// cache keyed by a hash of those bytes. hit reports a cache hit.
func (c *Counter) MessageRaw(encoding, raw string) (n int, hit bool) {
	return c.messageHash(encoding, raw, ItemHash(raw))
}

// messageHash is MessageRaw for a message whose ItemHash is h.
func (c *Counter) messageHash(encoding, raw string, h uint64) (n int, hit bool) {
	return c.CachedHash(encoding, "msg", h, func() int { return c.countMessage(encoding, gjson.Parse(raw)) })
}

func (c *Counter) key(encoding, kind, a, b string) uint64 {
	var h maphash.Hash
	c.keyOf(&h, encoding, kind)
	h.WriteString(a)
	h.WriteByte(0)
	h.WriteString(b)
	return h.Sum64()
}

func (c *Counter) countMessage(encoding string, m gjson.Result) int {
	if !m.IsObject() {
		return tokensPerMessage + c.Text(encoding, m.Raw)
	}
	n := tokensPerMessage
	m.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "content":
			n += c.content(encoding, v)
		case "name":
			n += c.Text(encoding, v.String()) + tokensPerName
		case "tool_calls":
			v.ForEach(func(_, call gjson.Result) bool {
				n += tokensPerCall + c.function(encoding, call.Get("function"))
				return true
			})
		case "function_call":
			n += tokensPerCall + c.function(encoding, v)
		default:
			n += c.value(encoding, v)
		}
		return true
	})
	return n
}

func (c *Counter) function(encoding string, f gjson.Result) int {
	return c.Text(encoding, f.Get("name").String()) + c.Text(encoding, f.Get("arguments").String())
}

// value counts a field the chat format does not name: strings by their
// text, null and booleans as nothing, anything else by its JSON.
func (c *Counter) value(encoding string, v gjson.Result) int {
	switch v.Type {
	case gjson.String:
		return c.Text(encoding, v.Str)
	case gjson.Null, gjson.True, gjson.False:
		return 0
	default:
		return c.Text(encoding, v.Raw)
	}
}

func (c *Counter) content(encoding string, v gjson.Result) int {
	if !v.IsArray() {
		return c.value(encoding, v)
	}
	n := 0
	v.ForEach(func(_, part gjson.Result) bool {
		switch part.Get("type").Str {
		case "text", "input_text", "output_text":
			n += c.Text(encoding, part.Get("text").String())
		case "image_url", "input_image", "image":
			if part.Get("image_url.detail").Str == "low" || part.Get("detail").Str == "low" {
				n += imageLowDetail
			} else {
				n += imageHighDetail
			}
		case "input_audio":
			// Audio is billed by duration; base64 data of 16 kHz audio runs
			// about 43 kB a second at about 10 tokens a second.
			n += len(part.Get("input_audio.data").Str)/4300 + 1
		case "file":
			// PDFs are billed as text plus page images; a byte-based
			// estimate keeps the count conservative without decoding.
			n += len(part.Get("file.file_data").Str)/4 + c.Text(encoding, part.Get("file.filename").Str)
		default:
			n += c.Text(encoding, part.Raw)
		}
		return true
	})
	return n
}

func (c *Counter) tools(encoding string, tools, functions gjson.Result) int {
	n := 0
	count := func(f gjson.Result) {
		n += tokensPerTool + c.Text(encoding, f.Get("name").String()) +
			c.Text(encoding, f.Get("description").String()) +
			c.Text(encoding, f.Get("parameters").Raw)
	}
	tools.ForEach(func(_, t gjson.Result) bool {
		if f := t.Get("function"); f.Exists() {
			count(f)
		} else {
			n += tokensPerTool + c.Text(encoding, t.Raw)
		}
		return true
	})
	functions.ForEach(func(_, f gjson.Result) bool {
		count(f)
		return true
	})
	if n > 0 {
		n += toolsOverhead
	}
	return n
}
