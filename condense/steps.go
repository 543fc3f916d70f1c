package condense

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// msg is one message of the request: its raw bytes and what the planner
// needs of it.
type msg struct {
	raw     string
	role    string
	tokens  int
	callID  string   // tool messages: the call answered
	calls   []string // assistant messages: the tool call ids
	content [2]int   // span of the content value in raw ({0,0}: none)
}

// step is the unit cuts respect: a user (or system) message alone, or an
// assistant message with the tool messages answering its calls.
type step struct {
	first, end int // message indexes [first, end)
	tokens     int
}

// conversation is a parsed request.
type conversation struct {
	msgs  []msg
	head  int    // messages [0, head) are the head: leading system/developer messages and the first user message
	steps []step // the messages after the head, in steps
}

var errInvalid = errors.New("conversation is not valid for the API")

func parseSpan(raw string, sp [2]int) gjson.Result {
	if sp[1] == 0 {
		return gjson.Result{}
	}
	return gjson.Parse(raw[sp[0]:sp[1]])
}

// parseConversation splits messages (raw JSON each) into head and steps,
// and checks the pairing rules the API enforces. tokens holds each
// message's count; fields, each message's field spans (from the request
// scan; nil: found here). The content is skipped over, never decoded.
func parseConversation(raws []string, tokens []int, fields []tokenizer.MessageFields) (*conversation, error) {
	c := &conversation{msgs: make([]msg, 0, len(raws))}
	keys := []string{"role", "content", "tool_call_id", "tool_calls"}
	spans := make([][2]int, len(keys))
	for i, raw := range raws {
		var f tokenizer.MessageFields
		if i < len(fields) {
			f = fields[i]
		} else {
			tokenizer.FieldSpans(raw, keys, spans)
			f = tokenizer.MessageFields{Role: spans[0], Content: spans[1], ToolCallID: spans[2], ToolCalls: spans[3]}
		}
		mm := msg{raw: raw, role: parseSpan(raw, f.Role).Str, content: f.Content}
		if i < len(tokens) {
			mm.tokens = tokens[i]
		}
		if mm.role == "tool" {
			mm.callID = parseSpan(raw, f.ToolCallID).Str
		}
		if mm.role == "assistant" {
			parseSpan(raw, f.ToolCalls).ForEach(func(_, tc gjson.Result) bool {
				mm.calls = append(mm.calls, tc.Get("id").Str)
				return true
			})
		}
		c.msgs = append(c.msgs, mm)
	}
	// Head: leading system/developer messages, then the first user message.
	h := 0
	for h < len(c.msgs) && (c.msgs[h].role == "system" || c.msgs[h].role == "developer") {
		h++
	}
	if h < len(c.msgs) && c.msgs[h].role == "user" {
		h++
	}
	c.head = h
	for j := h; j < len(c.msgs); {
		m := c.msgs[j]
		s := step{first: j, end: j + 1, tokens: m.tokens}
		switch m.role {
		case "assistant":
			pending := map[string]bool{}
			for _, id := range m.calls {
				if id == "" {
					return nil, fmt.Errorf("%w: message %d has a tool call without id", errInvalid, j)
				}
				pending[id] = true
			}
			for s.end < len(c.msgs) && c.msgs[s.end].role == "tool" {
				t := c.msgs[s.end]
				if !pending[t.callID] {
					return nil, fmt.Errorf("%w: tool message %d answers no pending call", errInvalid, s.end)
				}
				delete(pending, t.callID)
				s.tokens += t.tokens
				s.end++
			}
			if len(pending) > 0 {
				return nil, fmt.Errorf("%w: message %d has %d unanswered tool calls", errInvalid, j, len(pending))
			}
		case "tool":
			return nil, fmt.Errorf("%w: tool message %d follows no tool call", errInvalid, j)
		case "user", "system", "developer", "function":
		default:
			return nil, fmt.Errorf("%w: message %d has role %q", errInvalid, j, m.role)
		}
		c.steps = append(c.steps, s)
		j = s.end
	}
	return c, nil
}

func (c *conversation) tokens(from, to int) int {
	n := 0
	for _, m := range c.msgs[from:to] {
		n += m.tokens
	}
	return n
}

// hashMessages returns a content hash of messages [from, to).
func (c *conversation) hashMessages(from, to int) string {
	h := sha256.New()
	for _, m := range c.msgs[from:to] {
		h.Write([]byte(m.raw))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// rawArray renders messages [from, to) as a JSON array body (no brackets).
func (c *conversation) appendRaw(dst []byte, from, to int) []byte {
	for _, m := range c.msgs[from:to] {
		if len(dst) > 1 {
			dst = append(dst, ',')
		}
		dst = append(dst, m.raw...)
	}
	return dst
}
