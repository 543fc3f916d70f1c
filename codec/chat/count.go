package chat

import (
	"sync/atomic"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/field"
	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

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

// messageKeys are the fields of a message the scan records, in the order
// of the field indexes below.
var messageKeys = []string{"role", "content", "tool_call_id", "tool_calls"}

// Indexes of a message's fields in scan.fields.
const (
	fieldRole = iota
	fieldContent
	fieldToolCallID
	fieldToolCalls
)

// scan is what Parse and Splice need of the scan.
type scan struct {
	// fields are the spans of each message's messageKeys fields, relative
	// to the message's start ({0, 0}: absent), len(messageKeys) a message.
	fields [][2]int
	// once: the spans are also the first occurrence of their keys
	// (jsonscan.Object.ElementKeysOnce), what Text reads; false for a
	// derived request.
	once bool
}

// message returns the spans of message i's fields.
func (sc *scan) message(i int) [][2]int {
	return sc.fields[i*len(messageKeys) : (i+1)*len(messageKeys)]
}

// count scans a chat-completions request body in one validating pass
// and counts it: each message (from the count cache when it was counted
// before), the tools and the reply priming. encodingFor gets the model
// name (found in the same scan) and returns the encoding to count with.
// It returns view.ErrNotRequest when body is not a JSON object with a
// messages array.
func (c *Codec) count(body []byte, encodingFor func(model string) string) (*view.Request, *scan, error) {
	// The body is only read while count runs, so it is viewed as a
	// string without a copy. One validating pass finds every part.
	js := unsafe.String(unsafe.SliceData(body), len(body))
	obj, ok := jsonscan.ScanObject(body, "messages")
	if !ok || obj.Array[1] == 0 || obj.EscapedKey {
		return nil, nil, view.ErrNotRequest
	}
	if err := c.counter.CheckItems(len(obj.Elements)); err != nil {
		return nil, nil, tooMany{err}
	}
	model := ""
	if sp, ok := obj.Get("model"); ok {
		model = gjson.Parse(js[sp[0]:sp[1]]).String()
	}
	encoding := encodingFor(model)
	r := &view.Request{Body: body, Model: model, Encoding: encoding, Items: make([]view.Item, len(obj.Elements)), Array: obj.Array}
	// Each message is read once here: the spans of its fields found, and
	// it is hashed; then looked up with the others under one lock, and
	// only those not found are counted.
	k := len(messageKeys)
	sc := &scan{fields: make([][2]int, len(obj.Elements)*k), once: true}
	// known: the message's fields are all of messageKeys, each written
	// once, so it is counted from their spans (countKnown).
	known := make([]bool, len(obj.Elements))
	for i, sp := range obj.Elements {
		raw := js[sp[0]:sp[1]]
		f := sc.message(i)
		n, twice, isObject := jsonscan.ObjectFieldsValid(raw, messageKeys, f)
		sc.once = sc.once && !twice
		known[i] = isObject && !twice && n == present(f)
		r.Items[i] = view.Item{Start: sp[0], End: sp[1], Tokens: -1, Hash: tokenizer.ItemHash(raw)}
	}
	c.counter.Lookup(encoding, "msg", len(r.Items), func(i int) uint64 { return r.Items[i].Hash }, func(i, n int) {
		r.Items[i].Tokens = n
		r.CacheHits++
	})
	batch := c.counter.Batch(encoding, "msg", len(r.Items)-r.CacheHits)
	for i := range r.Items {
		it := &r.Items[i]
		if it.Tokens < 0 {
			raw := js[it.Start:it.End]
			n, hit := batch.Count(it.Hash, func() int {
				if known[i] {
					return countKnown(c.counter, encoding, raw, sc.message(i))
				}
				return countMessage(c.counter, encoding, gjson.Parse(raw))
			})
			it.Tokens = n
			if hit {
				r.CacheHits++
			}
		}
		r.Total += it.Tokens
	}
	// The tools, and the legacy functions, each counted once per
	// definitions list (an agent sends the same list every time).
	tools := 0
	for _, key := range [...]string{"tools", "functions"} {
		if sp, ok := obj.Get(key); ok {
			defs := js[sp[0]:sp[1]]
			n, _ := c.counter.Cached(encoding, key, defs, func() int {
				return countTools(c.counter, encoding, gjson.Parse(defs), key == "functions")
			})
			tools += n
		}
	}
	if tools > 0 {
		tools += toolsOverhead
	}
	r.Total += tools + replyPriming
	return r, sc, nil
}

// present is how many of a message's fields spans holds.
func present(spans [][2]int) int {
	n := 0
	for _, sp := range spans {
		if sp[1] > 0 {
			n++
		}
	}
	return n
}

// countKnown is countMessage for a message whose fields are all of
// messageKeys, each written once (f: their spans in raw): the same sum,
// the fields read from their spans rather than found again.
func countKnown(c *tokenizer.Counter, encoding, raw string, f [][2]int) int {
	n := tokensPerMessage
	val := func(j int) gjson.Result { return field.Value(raw[f[j][0]:f[j][1]]) }
	if f[fieldRole][1] > 0 {
		n += countRole(c, encoding, val(fieldRole))
	}
	if f[fieldContent][1] > 0 {
		n += countContent(c, encoding, val(fieldContent))
	}
	if f[fieldToolCallID][1] > 0 {
		n += countValue(c, encoding, val(fieldToolCallID))
	}
	if f[fieldToolCalls][1] > 0 {
		val(fieldToolCalls).ForEach(func(_, call gjson.Result) bool {
			n += tokensPerCall + countFunction(c, encoding, field.Of(call, "function"))
			return true
		})
	}
	return n
}

func countMessage(c *tokenizer.Counter, encoding string, m gjson.Result) int {
	if !m.IsObject() {
		return tokensPerMessage + c.Text(encoding, m.Raw)
	}
	n := tokensPerMessage
	field.Each(m, func(k, v gjson.Result) bool {
		switch k.Str {
		case "content":
			n += countContent(c, encoding, v)
		case "name":
			n += c.Text(encoding, v.String()) + tokensPerName
		case "tool_calls":
			v.ForEach(func(_, call gjson.Result) bool {
				n += tokensPerCall + countFunction(c, encoding, field.Of(call, "function"))
				return true
			})
		case "function_call":
			n += tokensPerCall + countFunction(c, encoding, v)
		case "role":
			n += countRole(c, encoding, v)
		default:
			n += countValue(c, encoding, v)
		}
		return true
	})
	return n
}

// knownRoles are the roles whose counts are kept per encoding: every
// message has one.
var knownRoles = [...]string{view.RoleUser, view.RoleAssistant, view.RoleSystem, view.RoleTool, view.RoleDeveloper}

// roleCounts are the counts of knownRoles under encoding enc.
type roleCounts struct {
	enc string
	n   [len(knownRoles)]int
}

// lastRoles holds the role counts of the encoding counted last.
var lastRoles atomic.Pointer[roleCounts]

// countRole is countValue for a message's role: a known role's count is
// read from lastRoles (a count depends on the text and the encoding
// only), not counted again.
func countRole(c *tokenizer.Counter, encoding string, v gjson.Result) int {
	if v.Type != gjson.String {
		return countValue(c, encoding, v)
	}
	rc := lastRoles.Load()
	if rc == nil || rc.enc != encoding {
		rc = &roleCounts{enc: encoding}
		for i, r := range knownRoles {
			rc.n[i] = c.Text(encoding, r)
		}
		lastRoles.Store(rc)
	}
	for i, r := range knownRoles {
		if v.Str == r {
			return rc.n[i]
		}
	}
	return countValue(c, encoding, v)
}

func countFunction(c *tokenizer.Counter, encoding string, f gjson.Result) int {
	return c.Text(encoding, field.Of(f, "name").String()) + c.Text(encoding, field.Of(f, "arguments").String())
}

// countValue counts a field the chat format does not name: strings by
// their text, null and booleans as nothing, anything else by its JSON.
func countValue(c *tokenizer.Counter, encoding string, v gjson.Result) int {
	switch v.Type {
	case gjson.String:
		return c.Text(encoding, v.Str)
	case gjson.Null, gjson.True, gjson.False:
		return 0
	default:
		return c.Text(encoding, v.Raw)
	}
}

func countContent(c *tokenizer.Counter, encoding string, v gjson.Result) int {
	if !v.IsArray() {
		return countValue(c, encoding, v)
	}
	n := 0
	v.ForEach(func(_, part gjson.Result) bool {
		switch field.Of(part, "type").Str {
		case "text", "input_text", "output_text":
			n += c.Text(encoding, field.Of(part, "text").String())
		case "image_url", "input_image", "image":
			if part.Get("image_url.detail").Str == "low" || field.Of(part, "detail").Str == "low" {
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

// countTools counts the definitions of a tools array, or of a legacy
// functions array (functions), without the namespace around them
// (toolsOverhead).
func countTools(c *tokenizer.Counter, encoding string, defs gjson.Result, functions bool) int {
	n := 0
	count := func(f gjson.Result) {
		n += tokensPerTool + c.Text(encoding, f.Get("name").String()) +
			c.Text(encoding, f.Get("description").String()) +
			c.Text(encoding, f.Get("parameters").Raw)
	}
	defs.ForEach(func(_, t gjson.Result) bool {
		if functions {
			count(t)
		} else if f := t.Get("function"); f.Exists() {
			count(f)
		} else {
			n += tokensPerTool + c.Text(encoding, t.Raw)
		}
		return true
	})
	return n
}
