package fakeupstream

import (
	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// ImageTokens is what CountMessages and CountResponses charge for one
// image, whatever its size (Anthropic charges about width×height/750,
// ~1,600 for a 1092×1092 picture).
const ImageTokens = 1600

// Per-item overheads of the approximate counts.
const (
	requestOverhead = 7 // framing of the whole prompt
	messageOverhead = 4 // role and separators of one message or item
	blockOverhead   = 2 // one content block
)

// CountMessages approximates the input tokens of an Anthropic Messages
// request body (as /v1/messages/count_tokens and the answers' usage
// report it). It counts, with the o200k_base encoding: the system text;
// each tool's name, description and raw JSON input schema; per message
// a small overhead and, per block, the text of text and thinking blocks
// (never signatures), the hidden text of redacted_thinking blocks issued
// by signer (their length / 4 otherwise), tool_use names and raw JSON
// inputs, tool_result contents (text, and ImageTokens per image), the
// text of documents. Claude's own tokenizer gives other numbers (usually
// 10–20% more on code); tests compare these counts with each other and
// with windows, not with Anthropic's.
func CountMessages(c *tokenizer.Counter, signer Signer, body []byte) int {
	root := gjson.ParseBytes(body)
	n := requestOverhead
	text := func(s string) int { return c.Text(tokenizer.O200kBase, s) }
	sys := root.Get("system")
	if sys.Type == gjson.String {
		n += text(sys.String())
	} else {
		sys.ForEach(func(_, b gjson.Result) bool {
			n += blockOverhead + text(b.Get("text").String())
			return true
		})
	}
	root.Get("tools").ForEach(func(_, t gjson.Result) bool {
		n += messageOverhead + text(t.Get("name").String()) + text(t.Get("description").String()) + text(t.Get("input_schema").Raw)
		return true
	})
	var blocks func(v gjson.Result) int
	blocks = func(v gjson.Result) int {
		if v.Type == gjson.String {
			return text(v.String())
		}
		sum := 0
		v.ForEach(func(_, b gjson.Result) bool {
			sum += blockOverhead
			switch b.Get("type").String() {
			case "text":
				sum += text(b.Get("text").String())
			case "thinking":
				sum += text(b.Get("thinking").String())
			case "redacted_thinking":
				d := b.Get("data").String()
				if signer.VerifyRedacted(d) {
					sum += text(redactedText(d))
				} else {
					sum += len(d) / 4
				}
			case "tool_use", "server_tool_use":
				sum += text(b.Get("name").String()) + text(b.Get("input").Raw)
			case "tool_result":
				sum += blocks(b.Get("content"))
			case "image":
				sum += ImageTokens
			case "document":
				sum += text(b.Get("source.data").String()) + blocks(b.Get("source.content"))
			default:
				sum += text(b.Raw)
			}
			return true
		})
		return sum
	}
	root.Get("messages").ForEach(func(_, m gjson.Result) bool {
		n += messageOverhead + blocks(m.Get("content"))
		return true
	})
	return n
}

// CountResponses approximates the input tokens of an OpenAI Responses
// request body, as the Responses fake's usage reports it: with
// o200k_base, the instructions; each tool's raw JSON; per input item a
// small overhead and the text of message parts (ImageTokens per image),
// function and custom tool calls' names and arguments or input, their
// outputs, reasoning summaries and the reasoning text inside
// encrypted_content issued by signer (len/4 of other opaque values).
func CountResponses(c *tokenizer.Counter, signer Signer, body []byte) int {
	root := gjson.ParseBytes(body)
	text := func(s string) int { return c.Text(tokenizer.O200kBase, s) }
	n := requestOverhead + text(root.Get("instructions").String())
	root.Get("tools").ForEach(func(_, t gjson.Result) bool {
		n += messageOverhead + text(t.Raw)
		return true
	})
	parts := func(v gjson.Result) int {
		if v.Type == gjson.String {
			return text(v.String())
		}
		sum := 0
		v.ForEach(func(_, p gjson.Result) bool {
			sum += blockOverhead
			switch p.Get("type").String() {
			case "input_image":
				sum += ImageTokens
			case "input_file":
				sum += text(p.Get("file_data").String())
			default:
				sum += text(p.Get("text").String()) + text(p.Get("refusal").String())
			}
			return true
		})
		return sum
	}
	opaque := func(v string) int {
		if v == "" {
			return 0
		}
		if p, ok := signer.Decrypt(v); ok {
			return text(p)
		}
		return len(v) / 4
	}
	in := root.Get("input")
	if in.Type == gjson.String {
		return n + messageOverhead + text(in.String())
	}
	in.ForEach(func(_, it gjson.Result) bool {
		n += messageOverhead
		switch it.Get("type").String() {
		case "", "message":
			n += parts(it.Get("content"))
		case "function_call":
			n += text(it.Get("name").String()) + text(it.Get("arguments").String())
		case "custom_tool_call":
			n += text(it.Get("name").String()) + text(it.Get("input").String())
		case "function_call_output", "custom_tool_call_output":
			n += parts(it.Get("output"))
		case "reasoning":
			it.Get("summary").ForEach(func(_, s gjson.Result) bool {
				n += text(s.Get("text").String())
				return true
			})
			n += opaque(it.Get("encrypted_content").String())
		case "compaction":
			n += opaque(it.Get("encrypted_content").String())
		default:
			n += text(it.Raw)
		}
		return true
	})
	return n
}
