package proxy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/memory"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// fact is held only by the first step of the test conversations, which
// condensing takes away.
const fact = "the deploy token rotates at 17:42 UTC (ticket ZEBRA-9931)"

// conversation is an agent's request of the given format: a task, then
// steps of one tool call each whose outputs are large; the first output
// holds fact.
func conversation(format string, steps int, stream bool) []byte {
	output := func(i int) string {
		var b strings.Builder
		if i == 0 {
			b.WriteString("notes.md:\n" + fact + "\n")
		}
		for l := 0; l < 40; l++ {
			fmt.Fprintf(&b, "pkg/file%d.go:%d: value := compute(%d, %d)\n", i, l, i*31+l, l*7919%1000)
		}
		return b.String()
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	thinking := func(i int) string {
		t := fmt.Sprintf("Step %d needs a file.", i)
		return `{"type":"thinking","thinking":` + q(t) + `,"signature":"` + fakeupstream.DefaultSigner.SignThinking(t) + `"},`
	}
	var items []string
	switch format {
	case "chat":
		items = append(items, `{"role":"system","content":"You are a coding agent."}`, `{"role":"user","content":"Fix the deploy script."}`)
		for i := 0; i < steps; i++ {
			id := fmt.Sprintf("call_%d", i)
			items = append(items,
				fmt.Sprintf(`{"role":"assistant","content":"Reading %d.","tool_calls":[{"id":%q,"type":"function","function":{"name":"Read","arguments":%s}}]}`, i, id, q(fmt.Sprintf(`{"path":"pkg/file%d.go"}`, i))),
				fmt.Sprintf(`{"role":"tool","tool_call_id":%q,"content":%s}`, id, q(output(i))))
		}
		return []byte(fmt.Sprintf(`{"model":"gpt-4o","stream":%v,"tools":[{"type":"function","function":{"name":"Read","parameters":{"type":"object"}}}],"messages":[%s]}`, stream, strings.Join(items, ",")))
	case "messages":
		items = append(items, `{"role":"user","content":[{"type":"text","text":"Fix the deploy script."}]}`)
		for i := 0; i < steps; i++ {
			id := fmt.Sprintf("toolu_%d", i)
			items = append(items,
				fmt.Sprintf(`{"role":"assistant","content":[%s{"type":"text","text":"Reading %d."},{"type":"tool_use","id":%q,"name":"Read","input":{"path":"pkg/file%d.go"}}]}`, thinking(i), i, id, i),
				fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":%s}]}`, id, q(output(i))))
		}
		return []byte(fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":8000,"thinking":{"type":"enabled","budget_tokens":2000},"stream":%v,"system":"You are Claude Code.","tools":[{"name":"Read","input_schema":{"type":"object"}}],"messages":[%s]}`, stream, strings.Join(items, ",")))
	default:
		items = append(items, `{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]}`,
			`{"type":"message","role":"user","content":[{"type":"input_text","text":"Fix the deploy script."}]}`)
		for i := 0; i < steps; i++ {
			id := fmt.Sprintf("call_%d", i)
			items = append(items,
				fmt.Sprintf(`{"type":"function_call","call_id":%q,"name":"Read","arguments":%s}`, id, q(fmt.Sprintf(`{"path":"pkg/file%d.go"}`, i))),
				fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":%s}`, id, q(output(i))))
		}
		return []byte(fmt.Sprintf(`{"model":"gpt-5","stream":%v,"store":false,"include":["reasoning.encrypted_content"],"tools":[{"type":"function","name":"Read","parameters":{"type":"object"}}],"input":[%s]}`, stream, strings.Join(items, ",")))
	}
}

// lastResult is the text of the request's last item when it is a tool
// result ("" otherwise).
func lastResult(format string, body []byte) string {
	switch format {
	case "chat":
		m := gjson.GetBytes(body, "messages.@reverse.0")
		if m.Get("role").String() == "tool" {
			return m.Get("content").String()
		}
	case "messages":
		m := gjson.GetBytes(body, "messages.@reverse.0")
		if b := m.Get("content.0"); b.Get("type").String() == "tool_result" {
			return b.Get("content").String()
		}
	default:
		it := gjson.GetBytes(body, "input.@reverse.0")
		if it.Get("type").String() == "function_call_output" {
			return it.Get("output").String()
		}
	}
	return ""
}

var markerID = regexp.MustCompile(`originals/([0-9a-f]{8,})`)

// model is the scripted model: what it answers to a request.
type model func(format string, body []byte) fakeupstream.Reply

// recallModel asks condense_recall with args (made from the request) when
// the request carries the tool and its last item is not a recall result,
// with the agent's own Read call too when withRead; then it answers
// whether the recalled text held the fact.
func recallModel(args func(body []byte) string, withRead bool) model {
	return func(format string, body []byte) fakeupstream.Reply {
		last := lastResult(format, body)
		if strings.HasPrefix(last, memory.ToolName+":") {
			rep := fakeupstream.Reply{Thinking: "Recalled.", Text: "FINAL lost the fact"}
			if strings.Contains(last, "ZEBRA-9931") {
				rep.Text = "FINAL knows ZEBRA-9931"
			}
			if withRead {
				rep.Calls = []fakeupstream.Call{{ID: "call_read_final", Name: "Read", Input: `{"path":"deploy.sh"}`}}
			}
			return rep
		}
		if !strings.Contains(string(body), `"`+memory.ToolName+`"`) {
			return fakeupstream.Reply{Text: "FINAL no tool"}
		}
		rep := fakeupstream.Reply{Thinking: "I need an earlier fact.", Text: "Let me look that up."}
		if withRead {
			rep.Calls = append(rep.Calls, fakeupstream.Call{ID: "call_read_1", Name: "Read", Input: `{"path":"x.go"}`})
		}
		rep.Calls = append(rep.Calls, fakeupstream.Call{ID: "call_recall_1", Name: memory.ToolName, Input: args(body)})
		return rep
	}
}

// chatUpstream is a strict chat-completions fake that answers with a
// model's Reply, tool calls included, as JSON or as a stream.
//
// With legacy, calls are answered as the legacy function_call (the first
// one). A request of n > 1 gets n choices: the first says "FINAL choice
// 0", the others are the model's reply.
type chatUpstream struct {
	answer model
	legacy bool
	mu     sync.Mutex
	got    []fakeupstream.Received
}

func (c *chatUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	status := 200
	if err := json.Unmarshal(body, &req); err != nil || fakeupstream.Validate(req.Messages) != nil {
		status = 400
	}
	c.mu.Lock()
	c.got = append(c.got, fakeupstream.Received{Path: r.URL.Path, Body: body, Status: status})
	c.mu.Unlock()
	if status != 200 {
		http.Error(w, `{"error":{"message":"invalid messages"}}`, status)
		return
	}
	rep := c.answer("chat", body)
	var calls []map[string]any
	for i, cl := range rep.Calls {
		if cl.ID == "" {
			cl.ID = fmt.Sprintf("call_gen_%d_%d", len(c.got), i)
		}
		calls = append(calls, map[string]any{"index": i, "id": cl.ID, "type": "function", "function": map[string]any{"name": cl.Name, "arguments": cl.Input}})
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	if c.legacy && len(calls) > 0 {
		calls, finish = calls[:1], "function_call"
	}
	if !gjson.GetBytes(body, "stream").Bool() {
		msg := map[string]any{"role": "assistant", "content": rep.Text}
		switch {
		case len(calls) > 0 && c.legacy:
			msg["function_call"] = calls[0]["function"]
		case len(calls) > 0:
			for _, c := range calls {
				delete(c, "index")
			}
			msg["tool_calls"] = calls
		}
		choices := []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}
		if n := int(gjson.GetBytes(body, "n").Int()); n > 1 {
			choices[0] = map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "FINAL choice 0"}, "finish_reason": "stop"}
			for i := 1; i < n; i++ {
				choices = append(choices, map[string]any{"index": i, "message": msg, "finish_reason": finish})
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "choices": choices, "usage": chatUsage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, fin any) {
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": fin}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, p := range strings.SplitAfter(rep.Text, " ") {
		chunk(map[string]any{"content": p}, nil)
	}
	for _, cl := range calls {
		fn := cl["function"].(map[string]any)
		args := fn["arguments"].(string)
		if c.legacy {
			chunk(map[string]any{"function_call": map[string]any{"name": fn["name"], "arguments": ""}}, nil)
			for i := 0; i < len(args); i += 7 {
				chunk(map[string]any{"function_call": map[string]any{"arguments": args[i:min(i+7, len(args))]}}, nil)
			}
			continue
		}
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": cl["index"], "id": cl["id"], "type": "function", "function": map[string]any{"name": fn["name"], "arguments": ""}}}}, nil)
		for i := 0; i < len(args); i += 7 {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": cl["index"], "function": map[string]any{"arguments": args[i:min(i+7, len(args))]}}}}, nil)
		}
	}
	chunk(map[string]any{}, finish)
	// The usage, in a last chunk without choices (include_usage).
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": []any{}, "usage": chatUsage})
	fmt.Fprintf(w, "data: %s\n\n", b)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// chatUsage is the usage chatUpstream's answers report: 1000 tokens
// read from the prompt cache, as the other fakes of recallStack report.
var chatUsage = map[string]any{"prompt_tokens": 3000, "completion_tokens": 5, "total_tokens": 3005,
	"prompt_tokens_details": map[string]any{"cached_tokens": 1000}}

func (c *chatUpstream) received() []fakeupstream.Received {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]fakeupstream.Received(nil), c.got...)
}

// recallStack is a whole proxy (internal/app, as serve builds it) with the
// recall tool on, in front of scripted fakes of the three formats.
type recallStack struct {
	*harness.Stack
	chat *chatUpstream
	msgs *fakeupstream.Messages
	resp *fakeupstream.Responses
}

func newRecallStack(t *testing.T, m model) *recallStack {
	st := &recallStack{
		Stack: harness.New(harness.Options{Window: 16000, Summarizer: "extractive", Configure: func(c *config.Config) {
			c.Memory.RecallTool = true
		}}),
		chat: &chatUpstream{answer: m},
	}
	counter := tokenizer.New(tokenizer.Options{})
	cached := func([]byte) fakeupstream.Usage { return fakeupstream.Usage{CacheRead: 1000} }
	st.msgs = &fakeupstream.Messages{Counter: counter, Delay: -1, Answer: func(b []byte) fakeupstream.Reply { return m("messages", b) }, Usage: cached}
	st.resp = &fakeupstream.Responses{Counter: counter, Delay: -1, Answer: func(b []byte) fakeupstream.Reply { return m("responses", b) }, Usage: cached}
	st.SetUpstream(http.HandlerFunc(st.route))
	t.Cleanup(st.Close)
	return st
}

// route hands a request to the fake of its format.
func (st *recallStack) route(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.Contains(r.URL.Path, "/messages"):
		st.msgs.ServeHTTP(w, r)
	case strings.HasSuffix(r.URL.Path, "/responses"):
		st.resp.ServeHTTP(w, r)
	default:
		st.chat.ServeHTTP(w, r)
	}
}

// upstream returns what the format's fake received.
func (st *recallStack) upstream(format string) []fakeupstream.Received {
	switch format {
	case "chat":
		return st.chat.received()
	case "messages":
		return st.msgs.Received()
	}
	return st.resp.Received()
}

var paths = map[string]string{"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}

// send posts body as the agent does (truncate mode, so the condensed-away
// step is behind a window marker) and returns the answer.
func (st *recallStack) send(t *testing.T, format string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", st.Proxy.URL+paths[format], bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-agent")
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("X-Condense-Mode", "truncate")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// answerText is the text an answer says (streamed: its deltas joined).
func answerText(format string, stream bool, answer string) string {
	if !stream {
		return answer
	}
	var b strings.Builder
	for _, m := range regexp.MustCompile(`(?m)^data: (\{.*)$`).FindAllStringSubmatch(answer, -1) {
		d := gjson.Parse(m[1])
		switch format {
		case "chat":
			b.WriteString(d.Get("choices.0.delta.content").String())
		case "messages":
			b.WriteString(d.Get("delta.text").String())
		default:
			if d.Get("type").String() == "response.output_text.delta" {
				b.WriteString(d.Get("delta").String())
			}
		}
	}
	return b.String()
}

// checkStream checks that a streamed answer is one answer of its format:
// one opening and one ending event, content blocks (Messages) numbered
// from 0 without gaps.
func checkStream(t *testing.T, format, answer string) {
	t.Helper()
	count := func(s string) int { return strings.Count(answer, s) }
	switch format {
	case "chat":
		if n := count("data: [DONE]"); n != 1 {
			t.Errorf("%d [DONE] events, want 1", n)
		}
	case "messages":
		if count("event: message_start") != 1 || count("event: message_stop") != 1 {
			t.Errorf("message_start %d, message_stop %d, want one each", count("event: message_start"), count("event: message_stop"))
		}
		next := int64(0)
		for _, m := range regexp.MustCompile(`data: (\{"type":"content_block_start".*)`).FindAllStringSubmatch(answer, -1) {
			if idx := gjson.Get(m[1], "index").Int(); idx != next {
				t.Errorf("content block %d started where %d was expected", idx, next)
			}
			next++
		}
	default:
		if count("event: response.created") != 1 || count("event: response.completed") != 1 {
			t.Errorf("response.created %d, response.completed %d, want one each", count("event: response.created"), count("event: response.completed"))
		}
		next := int64(0)
		for _, m := range regexp.MustCompile(`event: response.output_item.added\ndata: (.*)`).FindAllStringSubmatch(answer, -1) {
			if idx := gjson.Get(m[1], "output_index").Int(); idx != next {
				t.Errorf("output item %d added where %d was expected", idx, next)
			}
			next++
		}
	}
}

func TestRecallAnsweredByTheProxy(t *testing.T) {
	byQuery := func([]byte) string { return `{"query":"deploy token ticket ZEBRA"}` }
	byID := func(body []byte) string {
		m := markerID.FindSubmatch(body)
		if m == nil {
			return `{"id":"no-marker-found"}`
		}
		return `{"id":"` + string(m[1]) + `"}`
	}
	cases := []struct {
		name     string
		args     func([]byte) string
		withRead bool
	}{
		{"by query", byQuery, false},
		{"by id", byID, false},
		{"with the agent's own call", byQuery, true},
	}
	for _, tc := range cases {
		for _, format := range []string{"chat", "messages", "responses"} {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", tc.name, format, stream), func(t *testing.T) {
					st := newRecallStack(t, recallModel(tc.args, tc.withRead))
					status, answer := st.send(t, format, conversation(format, 40, stream))
					if status != 200 {
						t.Fatalf("status %d: %s", status, answer)
					}
					if strings.Contains(answer, memory.ToolName) {
						t.Fatalf("the agent received a %s call:\n%s", memory.ToolName, answer)
					}
					if text := answerText(format, stream, answer); !strings.Contains(text, "FINAL knows ZEBRA-9931") {
						t.Fatalf("the final answer does not hold the fact:\n%s", answer)
					}
					if stream {
						checkStream(t, format, answer)
					}
					if tc.withRead && !strings.Contains(answer, "call_read_final") {
						t.Errorf("the agent did not get the model's final Read call:\n%s", answer)
					}
					if tc.withRead && strings.Contains(answer, "call_read_1") {
						t.Errorf("the agent got the Read call of the recall round:\n%s", answer)
					}
					got := st.upstream(format)
					if len(got) != 2 {
						t.Fatalf("upstream got %d requests, want 2 (the request, the recall round)", len(got))
					}
					for i, g := range got {
						if g.Status != 200 {
							t.Errorf("upstream request %d refused (%d): %s", i, g.Status, g.Error)
						}
					}
					first, second := string(got[0].Body), string(got[1].Body)
					if strings.Contains(first, "ZEBRA-9931") {
						t.Fatal("the fact was not condensed away: the test proves nothing")
					}
					if !strings.Contains(second, "ZEBRA-9931") {
						t.Error("the recall round's request does not hold the fact")
					}
					if strings.Contains(second, "call_read_1") {
						t.Error("the recall round's request carries the agent's unanswered Read call")
					}
					if !strings.HasPrefix(second, first[:len(first)/2]) {
						t.Error("the recall round's request does not extend the request")
					}
					res, err := http.Get(st.Proxy.URL + "/metrics")
					if err != nil {
						t.Fatal(err)
					}
					metrics, _ := io.ReadAll(res.Body)
					res.Body.Close()
					if !strings.Contains(string(metrics), `condense_recalls_total{outcome="found"} 1`) {
						t.Error("/metrics does not count the recall")
					}
					// Measured usage sums both answers the upstream billed:
					// each read 1000 tokens from the prompt cache.
					read := regexp.MustCompile(`(?m)^condense_input_tokens_measured_total\{[^}]*kind="cache_read"[^}]*\} (\S+)$`).FindStringSubmatch(string(metrics))
					if read == nil || read[1] != "2000" || !strings.Contains(string(metrics), `usage="reported"} 1`) {
						t.Errorf("measured cache reads %v, want 2000 (both answers) of 1 request reported", read)
					}
				})
			}
		}
	}
}

// TestRecallBadInput: what the model asks wrongly gets a tool result
// saying so, and the agent an ordinary answer.
func TestRecallBadInput(t *testing.T) {
	var mu sync.Mutex
	args := ""
	st := newRecallStack(t, func(format string, body []byte) fakeupstream.Reply {
		if last := lastResult(format, body); strings.HasPrefix(last, memory.ToolName+":") {
			return fakeupstream.Reply{Text: "FINAL answered"}
		}
		if !strings.Contains(string(body), `"`+memory.ToolName+`"`) {
			return fakeupstream.Reply{Text: "FINAL no tool"}
		}
		mu.Lock()
		defer mu.Unlock()
		return fakeupstream.Reply{Thinking: "Recall it.", Calls: []fakeupstream.Call{{ID: "call_recall_1", Name: memory.ToolName, Input: args}}}
	})
	// Another caller's conversation (another task, so other ids),
	// condensed: its marker's id.
	other := bytes.ReplaceAll(conversation("messages", 40, false), []byte("pkg/file"), []byte("lib/file"))
	req, _ := http.NewRequest("POST", st.Proxy.URL+"/v1/messages", bytes.NewReader(other))
	req.Header.Set("Authorization", "Bearer sk-other-caller")
	req.Header.Set("X-Condense-Mode", "truncate")
	mu.Lock()
	args = `{"query":"nothing"}`
	mu.Unlock()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	m := markerID.FindSubmatch(st.msgs.Received()[0].Body)
	if m == nil {
		t.Fatal("the other caller's request was not windowed")
	}
	otherID := string(m[1])

	cases := []struct {
		name, format, args, want string
	}{
		{"unknown id", "messages", `{"id":"0123456789abcdef0123456789abcdef"}`, "nothing under id 0123456789abcdef0123456789abcdef"},
		{"another caller's id", "messages", `{"id":"` + otherID + `"}`, "nothing under id " + otherID},
		{"a path for an id", "messages", `{"id":"../../etc/passwd"}`, "is not an id"},
		{"huge query", "messages", `{"query":"deploy token ` + strings.Repeat("x", 20_000) + `"}`, "cut to its first 1000 bytes"},
		{"arguments not JSON", "responses", `deploy token`, "must be a JSON object"},
		{"no arguments", "chat", `{}`, "give `query`"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			args = tc.args
			mu.Unlock()
			before := len(st.upstream(tc.format))
			status, answer := st.send(t, tc.format, conversation(tc.format, 40, false))
			if status != 200 || !strings.Contains(answer, "FINAL answered") || strings.Contains(answer, memory.ToolName) {
				t.Fatalf("the agent got %d: %s", status, answer)
			}
			got := st.upstream(tc.format)[before:]
			if len(got) != 2 {
				t.Fatalf("upstream got %d requests, want 2", len(got))
			}
			if r := lastResult(tc.format, got[1].Body); !strings.Contains(r, tc.want) {
				t.Errorf("the tool result %q does not say %q", clip(r), tc.want)
			}
			if strings.Contains(string(got[1].Body), "ZEBRA-9931") && tc.name == "another caller's id" {
				t.Error("another caller's originals were returned")
			}
		})
	}
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// TestRecallLoopPastTheLimit: a model that keeps calling condense_recall
// is answered max_recall_rounds times, then told the limit is reached and
// asked once more; what it still calls is dropped, and the agent never
// sees a condense_recall call.
func TestRecallLoopPastTheLimit(t *testing.T) {
	loop := func(format string, body []byte) fakeupstream.Reply {
		if !strings.Contains(string(body), `"`+memory.ToolName+`"`) {
			return fakeupstream.Reply{Text: "FINAL no tool"}
		}
		return fakeupstream.Reply{Thinking: "Again.", Text: "Looking.", Calls: []fakeupstream.Call{{Name: memory.ToolName, Input: `{"query":"deploy token"}`}}}
	}
	for _, format := range []string{"chat", "messages", "responses"} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", format, stream), func(t *testing.T) {
				st := newRecallStack(t, loop)
				status, answer := st.send(t, format, conversation(format, 40, stream))
				if status != 200 || strings.Contains(answer, memory.ToolName) {
					t.Fatalf("the agent got %d: %s", status, answer)
				}
				if stream {
					checkStream(t, format, answer)
				}
				got := st.upstream(format)
				if want := 1 + 3 + 1; len(got) != want {
					t.Fatalf("upstream got %d requests, want %d (the request, 3 rounds, the limit round)", len(got), want)
				}
				for i, g := range got[1:4] {
					if r := lastResult(format, g.Body); !strings.Contains(r, "ZEBRA-9931") {
						t.Errorf("round %d: the result does not hold the fact: %q", i+1, clip(r))
					}
				}
				if r := lastResult(format, got[4].Body); !strings.Contains(r, "limit of 3 recall rounds") {
					t.Errorf("the last round's result %q does not say the limit is reached", clip(r))
				}
			})
		}
	}
}

// TestRecallToolStable: the tool appears from the conversation's first
// condensation on, the same bytes in every request, and not at all with
// memory.recall_tool off.
func TestRecallToolStable(t *testing.T) {
	st := newRecallStack(t, func(string, []byte) fakeupstream.Reply { return fakeupstream.Reply{Text: "ok"} })
	tool := func(b []byte) string {
		var out string
		gjson.GetBytes(b, "tools").ForEach(func(_, v gjson.Result) bool {
			if v.Get("name").String() == memory.ToolName {
				out = v.Raw
			}
			return true
		})
		return out
	}
	small := conversation("messages", 3, false)
	st.send(t, "messages", small)
	if got := st.msgs.Received(); tool(got[0].Body) != "" {
		t.Fatal("the tool was added before the conversation was condensed")
	}
	var seen []string
	for _, n := range []int{40, 41, 42} {
		st.send(t, "messages", conversation("messages", n, false))
		got := st.msgs.Received()
		seen = append(seen, tool(got[len(got)-1].Body))
	}
	// Under the threshold again (the same conversation, by its head):
	// condensed once, so the tool stays.
	st.send(t, "messages", small)
	got := st.msgs.Received()
	seen = append(seen, tool(got[len(got)-1].Body))
	// count_tokens counts what the next request will carry: the tool too.
	res, err := http.Post(st.Proxy.URL+"/v1/messages/count_tokens", "application/json", bytes.NewReader(conversation("messages", 42, false)))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	got = st.msgs.Received()
	if last := got[len(got)-1]; last.Path != "/v1/messages/count_tokens" {
		t.Fatalf("count_tokens not forwarded: %s", last.Path)
	} else {
		seen = append(seen, tool(last.Body))
	}
	for i, s := range seen {
		if s == "" || s != seen[0] {
			t.Fatalf("request %d: tool %q, want the same bytes as %q", i, s, seen[0])
		}
	}

	off := harness.New(harness.Options{Window: 16000, Summarizer: "extractive", Configure: func(c *config.Config) { c.Memory.RecallTool = false }})
	defer off.Close()
	res, err = http.Post(off.Proxy.URL+"/v1/chat/completions", "application/json", bytes.NewReader(conversation("chat", 40, false)))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	for _, r := range off.Fake.Received() {
		if strings.Contains(string(r.Body), memory.ToolName) {
			t.Fatal("the tool was added with memory.recall_tool off")
		}
	}
}
