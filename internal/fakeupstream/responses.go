package fakeupstream

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// Responses is a strict stand-in for OpenAI's Responses API:
// POST /v1/responses.
//
// It rejects with 400 and an OpenAI-shaped error body what the real API
// rejects (see ValidateResponses), answers valid requests with the
// response object or, with "stream": true, the server-sent events Codex
// accepts (response.created, response.output_item.added,
// response.content_part.added, response.output_text.delta/done,
// response.function_call_arguments.delta/done,
// response.output_item.done, response.completed with id and usage). Its
// usage.input_tokens is CountResponses of what it received.
//
// Reasoning items it answers with carry encrypted_content issued by
// Signer (when the request includes "reasoning.encrypted_content"), and a
// request is rejected when an encrypted_content was not issued by it.
// Requests with previous_response_id are accepted as they are (the fake
// keeps no server-side state to check them against). WebSocket upgrades
// (GET /v1/responses with Upgrade: websocket) are refused at once with
// 405.
//
// Compaction: a request whose last input item is
// {"type":"compaction_trigger"} (Codex's remote compaction) is answered
// with exactly one compaction output item (streamed as
// response.output_item.added and .done, no deltas), its encrypted_content
// issued by Signer; POST /v1/responses/compact ({model, input,
// instructions…}) is answered with {"object":"response.compaction",
// "output":[one compaction item], "usage":…}. A compaction_trigger
// anywhere but last is rejected.
//
// Every request is recorded. The zero value is ready to use; fields must
// be set before the first request. Safe for concurrent use.
type Responses struct {
	recorder

	// Signer issues and checks encrypted_content. Zero: DefaultSigner.
	Signer Signer
	// Counter counts input tokens. Nil: one made on first use.
	Counter *tokenizer.Counter
	// Answer, if set, decides the reply to each valid request (a Script's
	// Responses method, for instance). Nil: a reasoning item and a short
	// text.
	Answer func(body []byte) Reply
	// Summarize, if set, answers condense-proxy's summarizer calls (see
	// IsSummaryRequest), which never reach Answer: it returns the status
	// and the summary text. Nil: a short fixed summary.
	Summarize func(body []byte) (status int, text string)
	// Delay is the pause before each answer. Zero: DefaultDelay; negative:
	// none.
	Delay time.Duration
	// Usage, if set, says what each answer reports of its prompt (its
	// cache reads and writes). Nil: the count, nothing cached.
	Usage func(body []byte) Usage

	once sync.Once
	seq  atomic.Int64
}

var _ http.Handler = (*Responses)(nil)

func isResponsesPath(p string) bool {
	return p == "/v1/responses" || strings.HasPrefix(p, "/v1/responses/")
}

func (s *Responses) counter() *tokenizer.Counter {
	s.once.Do(func() {
		if s.Counter == nil {
			s.Counter = tokenizer.New(tokenizer.Options{})
		}
	})
	return s.Counter
}

func writeOpenAIError(w http.ResponseWriter, e *APIError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	var param, code any
	if e.Param != "" {
		param = e.Param
	}
	if e.Code != "" {
		code = e.Code
	}
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": e.Message, "type": e.Type, "param": param, "code": code}})
}

// ServeHTTP implements http.Handler.
func (s *Responses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, fail, err := s.receive(w, r, s.Delay, writeOpenAIError)
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		w.Header().Set("Allow", http.MethodPost)
		fail(&APIError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
			Message: "WebSocket connections are not supported by this upstream; use POST /v1/responses"}, 0)
		return
	}
	if err != nil {
		fail(invalid("reading body: %v", err), 0)
		return
	}
	compact := r.URL.Path == "/v1/responses/compact"
	switch {
	case r.URL.Path != "/v1/responses" && !compact:
		fail(&APIError{Status: http.StatusNotFound, Type: "invalid_request_error", Message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path)}, 0)
		return
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", http.MethodPost)
		fail(&APIError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error", Message: fmt.Sprintf("Invalid method for URL (%s %s)", r.Method, r.URL.Path)}, 0)
		return
	}
	if e := ValidateResponses(body, s.Signer); e != nil {
		fail(e, 0)
		return
	}
	tokens := CountResponses(s.counter(), s.Signer, body)
	if compact {
		s.addAnswered(r, body, http.StatusOK, tokens, "", "")
		n := s.seq.Add(1)
		it := item{typ: "compaction", id: fmt.Sprintf("cmp_fake%06d", n), encrypted: s.Signer.Encrypt(fmt.Sprintf("compacted %d input tokens", tokens))}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("resp_fake%06d", n), "object": "response.compaction",
			"created_at": time.Now().Unix(), "output": []any{it.final()},
			"usage": map[string]any{"input_tokens": tokens, "output_tokens": 0, "total_tokens": tokens}})
		return
	}
	trigger := lastIsTrigger(body)
	var rep Reply
	switch {
	case trigger:
		rep = Reply{Compaction: fmt.Sprintf("compacted %d input tokens", tokens)}
	case IsSummaryRequest(body):
		rep = Reply{Text: DefaultSummary}
		if s.Summarize != nil {
			rep.Status, rep.Text = s.Summarize(body)
			if rep.Status != http.StatusOK {
				rep.Error = "summarizer failure"
			}
		}
	case s.Answer != nil:
		rep = s.Answer(body)
	default:
		rep = Reply{Thinking: "The request is clear.", Text: "Done."}
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		typ := "server_error"
		if rep.Status < 500 {
			typ = "invalid_request_error"
		}
		fail(&APIError{Status: rep.Status, Type: typ, Message: rep.Error}, tokens)
		return
	}
	s.addAnswered(r, body, http.StatusOK, tokens, "", summaryAnswer(body, rep.Text))
	n := s.seq.Add(1)
	root := gjson.ParseBytes(body)
	encrypted := false
	root.Get("include").ForEach(func(_, v gjson.Result) bool {
		encrypted = encrypted || v.String() == "reasoning.encrypted_content"
		return true
	})
	items := s.items(rep, n, encrypted)
	out, reasoning := 0, 0
	for _, it := range items {
		k := s.counter().Text(tokenizer.O200kBase, it.text)
		out += k
		if it.typ == "reasoning" {
			reasoning += k
		}
	}
	resp := map[string]any{
		"id": fmt.Sprintf("resp_fake%06d", n), "object": "response", "created_at": time.Now().Unix(),
		"status": "in_progress", "model": root.Get("model").String(), "output": []any{},
		"store": root.Get("store").Bool(), "usage": nil, "error": nil, "incomplete_details": nil,
	}
	final := func() map[string]any {
		done := make([]any, len(items))
		for i, it := range items {
			done[i] = it.final()
		}
		c := make(map[string]any, len(resp))
		for k, v := range resp {
			c[k] = v
		}
		c["status"] = "completed"
		c["output"] = done
		u, _ := usageOf(s.Usage, body, tokens)
		c["usage"] = map[string]any{"input_tokens": u.Prompt, "input_tokens_details": u.details(),
			"output_tokens": out, "output_tokens_details": map[string]any{"reasoning_tokens": reasoning}, "total_tokens": u.Prompt + out}
		return c
	}
	if !root.Get("stream").Bool() {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(final())
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	seq := 0
	event := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(fields)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		if fl != nil {
			fl.Flush()
		}
	}
	event("response.created", map[string]any{"response": resp})
	event("response.in_progress", map[string]any{"response": resp})
	for i, it := range items {
		event("response.output_item.added", map[string]any{"output_index": i, "item": it.start()})
		switch it.typ {
		case "message":
			part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
			event("response.content_part.added", map[string]any{"item_id": it.id, "output_index": i, "content_index": 0, "part": part})
			for _, p := range pieces(it.text, 3) {
				event("response.output_text.delta", map[string]any{"item_id": it.id, "output_index": i, "content_index": 0, "delta": p, "logprobs": []any{}})
			}
			event("response.output_text.done", map[string]any{"item_id": it.id, "output_index": i, "content_index": 0, "text": it.text, "logprobs": []any{}})
			event("response.content_part.done", map[string]any{"item_id": it.id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": it.text, "annotations": []any{}}})
		case "function_call":
			for _, p := range pieces(it.input, 3) {
				event("response.function_call_arguments.delta", map[string]any{"item_id": it.id, "output_index": i, "delta": p})
			}
			event("response.function_call_arguments.done", map[string]any{"item_id": it.id, "output_index": i, "arguments": it.input})
		case "custom_tool_call":
			for _, p := range pieces(it.input, 3) {
				event("response.custom_tool_call_input.delta", map[string]any{"item_id": it.id, "output_index": i, "delta": p})
			}
			event("response.custom_tool_call_input.done", map[string]any{"item_id": it.id, "output_index": i, "input": it.input})
		}
		event("response.output_item.done", map[string]any{"output_index": i, "item": it.final()})
	}
	event("response.completed", map[string]any{"response": final()})
}

// item is one output item of an answer.
type item struct {
	typ       string // reasoning, message, function_call, custom_tool_call
	id        string
	text      string // message text or reasoning summary
	encrypted string
	callID    string
	name      string
	input     string // arguments or custom input
}

func (s *Responses) items(rep Reply, n int64, encrypted bool) []item {
	if rep.Compaction != "" {
		return []item{{typ: "compaction", id: fmt.Sprintf("cmp_fake%06d", n), encrypted: s.Signer.Encrypt(rep.Compaction)}}
	}
	var out []item
	if rep.Thinking != "" {
		it := item{typ: "reasoning", id: fmt.Sprintf("rs_fake%06d", n), text: rep.Thinking}
		if encrypted {
			it.encrypted = s.Signer.Encrypt(rep.Thinking)
		}
		out = append(out, it)
	}
	if rep.Text != "" || len(rep.Calls) == 0 {
		out = append(out, item{typ: "message", id: fmt.Sprintf("msg_fake%06d", n), text: rep.Text})
	}
	for i, c := range rep.Calls {
		callID := c.ID
		if callID == "" {
			callID = fmt.Sprintf("call_fake%06d_%d", n, i)
		}
		if c.Custom {
			out = append(out, item{typ: "custom_tool_call", id: fmt.Sprintf("ctc_fake%06d_%d", n, i), callID: callID, name: c.Name, input: c.Input})
			continue
		}
		args := c.Input
		if args == "" {
			args = "{}"
		}
		out = append(out, item{typ: "function_call", id: fmt.Sprintf("fc_fake%06d_%d", n, i), callID: callID, name: c.Name, input: args})
	}
	return out
}

func (it item) start() map[string]any {
	switch it.typ {
	case "compaction":
		return it.final()
	case "reasoning":
		return map[string]any{"id": it.id, "type": "reasoning", "summary": []any{}}
	case "message":
		return map[string]any{"id": it.id, "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}
	case "custom_tool_call":
		return map[string]any{"id": it.id, "type": "custom_tool_call", "status": "in_progress", "call_id": it.callID, "name": it.name, "input": ""}
	}
	return map[string]any{"id": it.id, "type": "function_call", "status": "in_progress", "call_id": it.callID, "name": it.name, "arguments": ""}
}

func (it item) final() map[string]any {
	switch it.typ {
	case "compaction":
		return map[string]any{"id": it.id, "type": "compaction", "encrypted_content": it.encrypted}
	case "reasoning":
		m := map[string]any{"id": it.id, "type": "reasoning", "summary": []any{map[string]any{"type": "summary_text", "text": it.text}}}
		if it.encrypted != "" {
			m["encrypted_content"] = it.encrypted
		}
		return m
	case "message":
		return map[string]any{"id": it.id, "type": "message", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": it.text, "annotations": []any{}}}}
	case "custom_tool_call":
		return map[string]any{"id": it.id, "type": "custom_tool_call", "status": "completed", "call_id": it.callID, "name": it.name, "input": it.input}
	}
	return map[string]any{"id": it.id, "type": "function_call", "status": "completed", "call_id": it.callID, "name": it.name, "arguments": it.input}
}

// Input item types the Responses API knows.
var responseItems = map[string]bool{
	"message": true, "function_call": true, "function_call_output": true, "custom_tool_call": true,
	"custom_tool_call_output": true, "reasoning": true, "local_shell_call": true, "local_shell_call_output": true,
	"web_search_call": true, "file_search_call": true, "computer_call": true, "computer_call_output": true,
	"image_generation_call": true, "code_interpreter_call": true, "mcp_call": true, "mcp_list_tools": true,
	"mcp_approval_request": true, "mcp_approval_response": true, "item_reference": true, "compaction": true,
	"tool_search_call": true, "tool_search_output": true, "shell_call": true, "shell_call_output": true,
	"apply_patch_call": true, "apply_patch_call_output": true, "compaction_trigger": true,
	// Tool declarations as an input item: Codex 0.169 with its default
	// model (gpt-6.1-sol) sends no top-level tools and this item first,
	// {"type":"additional_tools","role":"developer","tools":[namespaces]}.
	"additional_tools": true,
}

// lastIsTrigger reports whether a request's last input item is a
// compaction_trigger.
func lastIsTrigger(body []byte) bool {
	in := gjson.GetBytes(body, "input")
	if !in.IsArray() {
		return false
	}
	items := in.Array()
	return len(items) > 0 && itemType(items[len(items)-1]) == "compaction_trigger"
}

// Items a reasoning item may be followed by (what the model produced).
var producedItems = map[string]bool{
	"message": true, "function_call": true, "custom_tool_call": true, "local_shell_call": true,
	"web_search_call": true, "file_search_call": true, "computer_call": true, "image_generation_call": true,
	"code_interpreter_call": true, "mcp_call": true, "mcp_list_tools": true, "mcp_approval_request": true,
	"tool_search_call": true, "shell_call": true, "apply_patch_call": true,
}

func itemType(it gjson.Result) string {
	t := it.Get("type").String()
	if t == "" && it.Get("role").Exists() {
		return "message"
	}
	return t
}

// ValidateResponses applies the Responses API's rules to a request body
// and returns the error the real API answers, or nil. A request with
// previous_response_id is accepted as it is. Otherwise:
//
//   - a JSON object with a model; input a string or a list of items of
//     known types; message roles user, assistant, system, developer, with
//     input_* parts (output_text or refusal for the assistant);
//   - every function_call_output (custom_tool_call_output) answering an
//     earlier function_call (custom_tool_call) with its call_id, and every
//     call answered: "No tool call found for function call output with
//     call_id …", "No tool output found for function call …";
//   - a reasoning item followed by the item it produced (a message of the
//     assistant or a call), with a summary, and, when store is false,
//     carrying encrypted_content;
//   - every encrypted_content (reasoning, compaction) issued by signer;
//   - an additional_tools item (tool declarations amid the input) holding
//     a tools array.
func ValidateResponses(body []byte, signer Signer) *APIError {
	if !gjson.ValidBytes(body) {
		return invalid("We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return invalid("Invalid type for request body: expected an object")
	}
	if root.Get("model").String() == "" {
		e := invalid("Missing required parameter: 'model'.")
		e.Param = "model"
		return e
	}
	if root.Get("previous_response_id").String() != "" {
		return nil
	}
	in := root.Get("input")
	if !in.Exists() || in.Type == gjson.String {
		return nil
	}
	if !in.IsArray() {
		e := invalid("Invalid type for 'input': expected one of a string or an array of input items.")
		e.Param = "input"
		return e
	}
	store := !root.Get("store").Exists() || root.Get("store").Bool()
	items := in.Array()
	at := func(e *APIError, param string) *APIError { e.Param = param; return e }
	calls := map[string]string{}  // call_id -> kind ("function", "custom") of calls seen
	answered := map[string]bool{} // call_ids answered
	var order []string            // call_ids in order
	for i, it := range items {
		typ := itemType(it)
		param := fmt.Sprintf("input[%d]", i)
		if typ == "" {
			return at(invalid("Missing required parameter: '%s.type'.", param), param+".type")
		}
		if !responseItems[typ] {
			return at(invalid("Invalid value: '%s'. Supported values are: 'message', 'function_call', 'function_call_output', 'custom_tool_call', 'custom_tool_call_output', 'reasoning', 'compaction', 'item_reference' and other output item types.", typ), param+".type")
		}
		switch typ {
		case "message":
			role := it.Get("role").String()
			switch role {
			case "user", "system", "developer", "assistant":
			default:
				return at(invalid("Invalid value: '%s'. Supported values are: 'assistant', 'system', 'developer', and 'user'.", role), param+".role")
			}
			c := it.Get("content")
			if c.Type == gjson.String {
				break
			}
			if !c.IsArray() {
				return at(invalid("Invalid type for '%s.content': expected one of a string or an array of content parts.", param), param+".content")
			}
			var err *APIError
			c.ForEach(func(k, p gjson.Result) bool {
				pt := p.Get("type").String()
				ok := pt == "input_text" || pt == "input_image" || pt == "input_file"
				want := "'input_text', 'input_image', and 'input_file'"
				if role == "assistant" {
					ok, want = pt == "output_text" || pt == "refusal", "'output_text' and 'refusal'"
				}
				if !ok {
					pp := fmt.Sprintf("%s.content[%d].type", param, k.Int())
					err = at(invalid("Invalid value: '%s'. Supported values are: %s.", pt, want), pp)
					return false
				}
				return true
			})
			if err != nil {
				return err
			}
		case "function_call", "custom_tool_call":
			id := it.Get("call_id").String()
			if id == "" {
				return at(invalid("Missing required parameter: '%s.call_id'.", param), param+".call_id")
			}
			if it.Get("name").String() == "" {
				return at(invalid("Missing required parameter: '%s.name'.", param), param+".name")
			}
			if _, dup := calls[id]; dup {
				return at(invalid("Duplicate value for 'call_id' of %s in '%s'.", id, param), param+".call_id")
			}
			kind := "function"
			if typ == "custom_tool_call" {
				kind = "custom"
			}
			calls[id] = kind
			order = append(order, id)
		case "function_call_output", "custom_tool_call_output":
			id := it.Get("call_id").String()
			kind, what := "function", "function call output"
			if typ == "custom_tool_call_output" {
				kind, what = "custom", "custom tool call output"
			}
			if calls[id] != kind || answered[id] {
				return at(invalid("No tool call found for %s with call_id %s.", what, id), "input")
			}
			answered[id] = true
		case "reasoning":
			id := it.Get("id").String()
			if !it.Get("summary").IsArray() {
				return at(invalid("Missing required parameter: '%s.summary'.", param), param+".summary")
			}
			if i+1 >= len(items) || !producedItems[itemType(items[i+1])] ||
				(itemType(items[i+1]) == "message" && items[i+1].Get("role").String() != "assistant") {
				return at(invalid("Item '%s' of type 'reasoning' was provided without its required following item.", id), "input")
			}
			ec := it.Get("encrypted_content")
			if !ec.Exists() || ec.Type == gjson.Null {
				if !store {
					e := at(invalid("Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", id), "input")
					return e
				}
				break
			}
			if _, ok := signer.Decrypt(ec.String()); !ok {
				e := invalid("The encrypted content %s could not be verified.", abbrev(ec.String()))
				e.Code = "invalid_encrypted_content"
				return e
			}
		case "additional_tools":
			// Seen from Codex 0.169 (gpt-6.1-sol): a list of tools
			// (namespaces of function and custom tools).
			if !it.Get("tools").IsArray() {
				return at(invalid("Invalid type for '%s.tools': expected an array of tools.", param), param+".tools")
			}
		case "compaction_trigger":
			if i != len(items)-1 {
				return at(invalid("Item of type 'compaction_trigger' must be the last input item."), param+".type")
			}
		case "compaction":
			ec := it.Get("encrypted_content").String()
			if _, ok := signer.Decrypt(ec); !ok {
				e := invalid("The encrypted content %s could not be verified.", abbrev(ec))
				e.Code = "invalid_encrypted_content"
				return e
			}
		}
	}
	for _, id := range order {
		if !answered[id] {
			what := "function call"
			if calls[id] == "custom" {
				what = "custom tool call"
			}
			return at(invalid("No tool output found for %s %s.", what, id), "input")
		}
	}
	return nil
}
