package agents_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// chatFake is a strict chat-completions upstream driven like the
// Messages and Responses fakes (fakeupstream): it rejects with 400 what
// OpenAI rejects (fakeupstream.CheckParams and Validate, plus malformed
// tool calls, calls of tools the request does not declare, and
// stream_options without stream), records every request with its token
// count, and answers with Answer's Reply — text and tool calls, streamed
// as chat.completion.chunk events when asked, with the usage chunk
// stream_options.include_usage asks for. Safe for concurrent use.
type chatFake struct {
	Answer  func(body []byte) fakeupstream.Reply
	Counter *tokenizer.Counter

	mu       sync.Mutex
	received []fakeupstream.Received
	n        int
}

// handler routes the proxy's summarizer calls to summaries (the stack's
// own fake, which answers them) and everything else to f.
func (f *chatFake) handler(summaries http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		if fakeupstream.IsSummaryRequest(body) {
			summaries.ServeHTTP(w, r)
			return
		}
		f.serve(w, r, body)
	})
}

// Received returns what the fake received, oldest first.
func (f *chatFake) Received() []fakeupstream.Received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeupstream.Received(nil), f.received...)
}

func (f *chatFake) record(r *http.Request, body []byte, status, tokens int, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.received = append(f.received, fakeupstream.Received{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Header: r.Header.Clone(), Body: body, Status: status, Tokens: tokens, Error: msg})
}

// countChat is the chat request's input tokens (o200k), as the fake
// reports them in usage.prompt_tokens.
func countChat(c *tokenizer.Counter, body []byte) int {
	rc, err := chat.New(c).Scan(body, func(string) string { return tokenizer.O200kBase })
	if err != nil {
		return 0
	}
	return rc.Total
}

func (f *chatFake) serve(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		f.record(r, body, http.StatusNotFound, 0, "not found")
		chatError(w, http.StatusNotFound, "Unknown request URL: "+r.Method+" "+r.URL.Path)
		return
	}
	if err := validateChat(body); err != nil {
		f.record(r, body, http.StatusBadRequest, 0, err.Error())
		chatError(w, http.StatusBadRequest, err.Error())
		return
	}
	tokens := countChat(f.Counter, body)
	rep := f.Answer(body)
	if rep.Status != 0 && rep.Status != http.StatusOK {
		f.record(r, body, rep.Status, tokens, rep.Error)
		chatError(w, rep.Status, rep.Error)
		return
	}
	f.record(r, body, http.StatusOK, tokens, "")
	// Real providers never answer within microseconds (see
	// fakeupstream.DefaultDelay).
	select {
	case <-time.After(fakeupstream.DefaultDelay):
	case <-r.Context().Done():
		return
	}
	f.mu.Lock()
	f.n++
	id := fmt.Sprintf("chatcmpl-fake-%d", f.n)
	f.mu.Unlock()
	model := gjson.GetBytes(body, "model").String()
	finish := "stop"
	if len(rep.Calls) > 0 {
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": tokens, "completion_tokens": 20, "total_tokens": tokens + 20}
	if !gjson.GetBytes(body, "stream").Bool() {
		msg := map[string]any{"role": "assistant", "content": rep.Text}
		if len(rep.Calls) > 0 {
			var calls []any
			for i, c := range rep.Calls {
				calls = append(calls, map[string]any{"id": callID(c, id, i), "type": "function",
					"function": map[string]any{"name": c.Name, "arguments": c.Input}})
			}
			msg["tool_calls"] = calls
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "created": 1, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	send := func(choices []any, extra map[string]any) {
		ev := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1, "model": model, "choices": choices}
		for k, v := range extra {
			ev[k] = v
		}
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	delta := func(d map[string]any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "finish_reason": nil}}
	}
	send(delta(map[string]any{"role": "assistant", "content": ""}), nil)
	for _, p := range chunks(rep.Text, 3) {
		send(delta(map[string]any{"content": p}), nil)
	}
	for i, c := range rep.Calls {
		send(delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": callID(c, id, i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}), nil)
		for _, p := range chunks(c.Input, 3) {
			send(delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}), nil)
		}
	}
	send([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, nil)
	if gjson.GetBytes(body, "stream_options.include_usage").Bool() {
		send([]any{}, map[string]any{"usage": usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

func callID(c fakeupstream.Call, answer string, i int) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("call_%s_%d", strings.TrimPrefix(answer, "chatcmpl-"), i)
}

// chunks cuts s into up to n pieces on rune boundaries.
func chunks(s string, n int) []string {
	if s == "" {
		return nil
	}
	r := []rune(s)
	size := max((len(r)+n-1)/n, 1)
	var out []string
	for len(r) > 0 {
		k := min(size, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}

func chatError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
}

// validateChat applies OpenAI's rules to a chat-completions body: the
// fakeupstream checks, then every tool call well formed (an id, type
// "function", a declared tool's name, arguments a string of JSON) and
// every content a string or an array of parts.
func validateChat(body []byte) error {
	if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() {
		return errors.New("We could not parse the JSON body of your request.")
	}
	if err := fakeupstream.CheckParams(body); err != nil {
		return err
	}
	root := gjson.ParseBytes(body)
	if root.Get("model").String() == "" {
		return errors.New("you must provide a model parameter")
	}
	if root.Get("stream_options").Exists() && !root.Get("stream").Bool() {
		return errors.New("The 'stream_options' parameter is only allowed when 'stream' is enabled.")
	}
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(root.Get("messages").Raw), &raw); err != nil {
		return errors.New("'messages' must be an array")
	}
	if err := fakeupstream.Validate(raw); err != nil {
		return err
	}
	declared := map[string]bool{}
	for i, t := range root.Get("tools").Array() {
		name := t.Get("function.name").String()
		if t.Get("type").String() != "function" || name == "" {
			return fmt.Errorf("tools[%d]: a function tool with a name is required", i)
		}
		declared[name] = true
	}
	for i, m := range root.Get("messages").Array() {
		if c := m.Get("content"); c.Exists() && c.Type != gjson.String && c.Type != gjson.Null && !c.IsArray() {
			return fmt.Errorf("messages[%d].content: expected a string or an array of content parts", i)
		}
		for j, c := range m.Get("tool_calls").Array() {
			args := c.Get("function.arguments")
			switch {
			case c.Get("type").String() != "function":
				return fmt.Errorf("messages[%d].tool_calls[%d].type: expected 'function'", i, j)
			case !declared[c.Get("function.name").String()]:
				return fmt.Errorf("messages[%d].tool_calls[%d]: function %q is not among the request's tools", i, j, c.Get("function.name").String())
			case args.Type != gjson.String || !gjson.Valid(args.String()):
				return fmt.Errorf("messages[%d].tool_calls[%d].function.arguments: expected a string of JSON", i, j)
			}
		}
	}
	return nil
}

// chatAsResponses restates a chat body's messages as Responses input
// items — tool messages as function_call_output items with their
// tool_call_id as call_id, assistant tool calls as function_call items,
// the rest as message items with their content — so that a
// fakeupstream.Script reads the step a chat request is at as it reads a
// Responses request's (Script.Responses, with the script's call_ ids).
func chatAsResponses(body []byte) []byte {
	var items []map[string]any
	gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
		role := m.Get("role").String()
		if role == "tool" {
			items = append(items, map[string]any{"type": "function_call_output", "call_id": m.Get("tool_call_id").String(),
				"output": json.RawMessage(rawOr(m.Get("content"), `""`))})
			return true
		}
		items = append(items, map[string]any{"type": "message", "role": role, "content": json.RawMessage(rawOr(m.Get("content"), `""`))})
		m.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
			items = append(items, map[string]any{"type": "function_call", "call_id": c.Get("id").String(),
				"name": c.Get("function.name").String(), "arguments": c.Get("function.arguments").String()})
			return true
		})
		return true
	})
	out, _ := json.Marshal(map[string]any{"model": gjson.GetBytes(body, "model").String(), "input": items})
	return out
}

func rawOr(v gjson.Result, def string) string {
	if !v.Exists() || v.Raw == "" {
		return def
	}
	return v.Raw
}
