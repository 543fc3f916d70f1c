package corpus

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/condense-proxy/condense-proxy/internal/fakeupstream/fakesign"
)

// ResponsesSession is a session in OpenAI Responses form, as Codex sends
// it over HTTP: store false, the full history every turn, the system
// prompt as leading developer message items, user and assistant message
// items with input_text / output_text parts, function_call and
// function_call_output items paired by call_id, and, where the source
// recorded reasoning, a reasoning item before the assistant's output with
// encrypted_content issued by fakesign.Default (so the strict
// fake accepts it). Request k is the history before the k-th assistant
// message, like the chat Session's TurnEnds.
//
// Safe for concurrent use once built.
type ResponsesSession struct {
	Name   string
	Format string // the source's
	// Model is sent in every request; default "gpt-5.5".
	Model string

	items     []string // raw items of the whole session
	itemsUpTo []int    // items made from the first n chat messages, per n
	ends      []int    // chat message counts of the requests
	tools     string
	cacheKey  string
}

// Responses converts a chat-form session into Responses form.
func Responses(s *Session) *ResponsesSession {
	r := &ResponsesSession{Name: s.Name, Format: s.Format, Model: "gpt-5.5", ends: s.TurnEnds()}
	h := sha256.Sum256([]byte(s.Name))
	r.cacheKey = fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
	r.itemsUpTo = make([]int, len(s.Messages)+1)
	add := func(v any) {
		b, _ := json.Marshal(v)
		r.items = append(r.items, string(b))
	}
	parts := func(typ, text string) []map[string]string {
		return []map[string]string{{"type": typ, "text": text}}
	}
	reasoning := 0
	for i, m := range s.Messages {
		r.itemsUpTo[i] = len(r.items)
		text := ""
		if m.Content != nil {
			text = *m.Content
		}
		switch m.Role {
		case "system", "developer":
			add(map[string]any{"type": "message", "role": "developer", "content": parts("input_text", text)})
		case "user":
			add(map[string]any{"type": "message", "role": "user", "content": parts("input_text", text)})
		case "tool":
			add(map[string]any{"type": "function_call_output", "call_id": m.ToolCallID, "output": text})
		case "assistant":
			said := strings.TrimSpace(text) != ""
			if !said && len(m.ToolCalls) == 0 {
				continue
			}
			if m.Reasoning != "" {
				reasoning++
				add(map[string]any{"type": "reasoning", "id": fmt.Sprintf("rs_corpus%05d", reasoning), "summary": []any{},
					"content": nil, "encrypted_content": fakesign.Default.Encrypt(m.Reasoning)})
			}
			if said {
				add(map[string]any{"type": "message", "role": "assistant", "content": []map[string]any{{"type": "output_text", "text": text, "annotations": []any{}}}})
			}
			for _, c := range m.ToolCalls {
				add(map[string]any{"type": "function_call", "name": c.Function.Name, "arguments": c.Function.Arguments, "call_id": c.ID})
			}
		}
	}
	r.itemsUpTo[len(s.Messages)] = len(r.items)
	type tool struct {
		Type        string         `json:"type"`
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Strict      bool           `json:"strict"`
		Parameters  map[string]any `json:"parameters"`
	}
	tools := []tool{}
	for _, name := range s.Tools {
		tools = append(tools, tool{Type: "function", Name: name, Description: toolDescription(name),
			Parameters: map[string]any{"type": "object", "properties": map[string]any{}}})
	}
	b, _ := json.Marshal(tools)
	r.tools = string(b)
	return r
}

// toolDescription describes a tool of a converted session, whose
// recording names it only.
func toolDescription(name string) string { return "The session's " + name + " tool." }

// Turns returns how many requests the session holds.
func (r *ResponsesSession) Turns() int { return len(r.ends) }

// Items returns the number of input items of request k.
func (r *ResponsesSession) Items(k int) int { return r.itemsUpTo[r.ends[k]] }

// Request returns the body of request k (0 ≤ k < Turns()), shaped like
// Codex's: streamed, store false, reasoning.encrypted_content included,
// a prompt_cache_key per session.
func (r *ResponsesSession) Request(k int) ([]byte, error) {
	if k < 0 || k >= len(r.ends) {
		return nil, fmt.Errorf("request %d of %d", k, len(r.ends))
	}
	var b strings.Builder
	model, _ := json.Marshal(r.Model)
	b.WriteString(`{"model":`)
	b.Write(model)
	b.WriteString(`,"stream":true,"input":[`)
	b.WriteString(strings.Join(r.items[:r.itemsUpTo[r.ends[k]]], ","))
	b.WriteString(`],"tools":`)
	b.WriteString(r.tools)
	fmt.Fprintf(&b, `,"tool_choice":"auto","parallel_tool_calls":true,"reasoning":{"effort":"medium"},"store":false,"include":["reasoning.encrypted_content"],"prompt_cache_key":%q}`, r.cacheKey)
	return []byte(b.String()), nil
}
