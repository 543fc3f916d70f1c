package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/codec/gemini"
	"github.com/condense-proxy/condense-proxy/codec/messages"
	codecresponses "github.com/condense-proxy/condense-proxy/codec/responses"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// api is one of the four APIs as a test drives it: its path, a first
// request offering a shell tool, the codec that reads answers and appends
// turns, and a strict reader of its streamed answers.
type api struct {
	name, path string
	// streamPath, when set, is where the API streams (Gemini's method
	// and alt=sse); otherwise the first request gets "stream": true.
	streamPath string
	first      string
	codec      interface {
		view.Codec
		view.Tools
	}
	// strict reads a streamed answer event by event, failing on any
	// event out of the API's order, and returns the answer's text.
	strict func(t *testing.T, sse []byte) string
	// text returns a JSON answer's text.
	text func(answer []byte) string
}

func apis() []api {
	counter := tokenizer.New(tokenizer.Options{})
	return []api{
		{name: "chat", path: "/v1/chat/completions", codec: chat.New(counter), strict: strictChat,
			first: `{"model":"gpt-4o","stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"run_shell_command","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}],` +
				`"messages":[{"role":"system","content":"You are an agent."},{"role":"user","content":"Look around, then report."}]}`,
			text: func(b []byte) string { return gjson.GetBytes(b, "choices.0.message.content").Str }},
		{name: "messages", path: "/v1/messages", codec: messages.New(counter), strict: strictMessages,
			first: `{"model":"claude-sonnet-4-5","max_tokens":32000,"system":[{"type":"text","text":"You are Claude Code."}],"thinking":{"type":"enabled","budget_tokens":4000},` +
				`"tools":[{"name":"Read","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}}}},{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"},"description":{"type":"string"}}}}],` +
				`"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"Look around, then report."}]}]}`,
			text: func(b []byte) string { return gjson.GetBytes(b, `content.#(type=="text").text`).Str }},
		{name: "responses", path: "/v1/responses", codec: codecresponses.New(counter), strict: strictResponses,
			first: `{"model":"gpt-5.5","store":false,"include":["reasoning.encrypted_content"],"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object","properties":{"cmd":{"type":"string"},"workdir":{"type":"string"}}}},{"type":"custom","name":"apply_patch"}],` +
				`"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"Look around, then report."}]}]}`,
			text: func(b []byte) string {
				return gjson.GetBytes(b, `output.#(type=="message").content.0.text`).Str
			}},
		{name: "gemini", path: "/v1beta/models/gemini-2.5-pro:generateContent", streamPath: "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
			codec: gemini.New(counter).WithModel("gemini-2.5-pro").(*gemini.Codec), strict: strictGemini,
			first: `{"contents":[{"role":"user","parts":[{"text":"This is the Gemini CLI. We are setting up the context for our chat."}]},{"role":"model","parts":[{"text":"Got it. Thanks for the context!"}]},` +
				`{"role":"user","parts":[{"text":"Look around, then report."}]}],"systemInstruction":{"role":"user","parts":[{"text":"You are an interactive CLI agent."}]},` +
				`"tools":[{"functionDeclarations":[{"name":"read_file","parametersJsonSchema":{"type":"object","properties":{"absolute_path":{"type":"string"}}}},{"name":"run_shell_command","parametersJsonSchema":{"type":"object","properties":{"command":{"type":"string"},"description":{"type":"string"}}}}]}],` +
				`"generationConfig":{"temperature":0,"thinkingConfig":{"includeThoughts":true}}}`,
			text: func(b []byte) string { return gjson.GetBytes(b, "candidates.0.content.parts.0.text").Str }},
	}
}

func post(t *testing.T, url string, body []byte, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// events splits a body of server-sent events into events.
func events(b []byte) [][]byte {
	var out [][]byte
	for _, ev := range bytes.Split(bytes.TrimSpace(b), []byte("\n\n")) {
		out = append(out, ev)
	}
	return out
}

// sseData returns an event's name and data.
func sseData(t *testing.T, ev []byte) (string, []byte) {
	t.Helper()
	var name string
	var data []byte
	for _, line := range strings.Split(string(ev), "\n") {
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = []byte(strings.TrimPrefix(line, "data: "))
		default:
			t.Fatalf("a line of no field: %q", line)
		}
	}
	return name, data
}

// TestAgentTurn drives each API as an agent would, in JSON and in SSE:
// the model lists the directory, reads the README it listed, then reports
// what it found and stops. The answers are read with the codecs (the
// calls, the turn appended to the next request) and, streamed, with a
// strict reader of the API's event order.
func TestAgentTurn(t *testing.T) {
	srv := httptest.NewServer(New(Options{Delay: -1}))
	defer srv.Close()
	outputs := []string{"README.md\nmain.go\ngo.mod\n", "# The demo\nA tiny project.\n"}
	for _, a := range apis() {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", a.name, stream), func(t *testing.T) {
				body, path := []byte(a.first), a.path
				switch {
				case stream && a.streamPath != "":
					path = a.streamPath
				case stream:
					body = bytes.Replace(body, []byte(`{"model"`), []byte(`{"stream":true,"model"`), 1)
				}
				var cmds []string
				for step := 0; ; step++ {
					if step > 3 {
						t.Fatalf("no end after %v", cmds)
					}
					resp, out := post(t, srv.URL+path, body)
					if resp.StatusCode != 200 {
						t.Fatalf("step %d: %d %s", step, resp.StatusCode, out)
					}
					var ans view.Answer
					var text string
					if stream {
						if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
							t.Fatalf("content type %q", ct)
						}
						text = a.strict(t, out)
						s := a.codec.Stream("")
						for _, ev := range events(out) {
							s.Event(ev)
						}
						ans = s.Answer()
					} else {
						var err error
						if ans, err = a.codec.ReadAnswer(out); err != nil {
							t.Fatalf("step %d: the codec reads %s: %v", step, out, err)
						}
						text = a.text(out)
					}
					if len(ans.Calls) == 0 {
						if step != 2 || !strings.Contains(text, "README.md") || !strings.Contains(text, "# The demo") {
							t.Fatalf("step %d: the final text %q after %v", step, text, cmds)
						}
						break
					}
					c := ans.Calls[0]
					var args map[string]any
					if err := json.Unmarshal([]byte(c.Args), &args); err != nil {
						t.Fatalf("step %d: arguments %q: %v", step, c.Args, err)
					}
					cmd, _ := args["command"].(string)
					if a.name == "responses" {
						cmd, _ = args["cmd"].(string)
					}
					cmds = append(cmds, cmd)
					if len(ans.Calls) != 1 || step > 1 {
						t.Fatalf("step %d: calls %+v", step, ans.Calls)
					}
					var err error
					body, err = a.codec.AppendTurn(body, ans, func(int, view.ToolCall) bool { return true },
						[]view.ToolResult{{CallID: c.ID, Text: outputs[step]}})
					if err != nil {
						t.Fatal(err)
					}
				}
				if want := []string{"ls", "head -n 20 README.md"}; fmt.Sprint(cmds) != fmt.Sprint(want) {
					t.Errorf("commands %q, want %q", cmds, want)
				}
			})
		}
	}
}

// strictGemini reads a Gemini alt=sse stream: data-only events, each a
// GenerateContentResponse of the model's parts; the last, and only it,
// with the finish reason and the usage.
func strictGemini(t *testing.T, b []byte) string {
	t.Helper()
	evs := events(b)
	var text strings.Builder
	for i, ev := range evs {
		name, data := sseData(t, ev)
		if name != "" {
			t.Fatalf("event %d is named %q: Gemini's are not", i, name)
		}
		d := gjson.ParseBytes(data)
		if d.Get("candidates.0.content.role").Str != "model" {
			t.Fatalf("event %d: no model content: %s", i, data)
		}
		last := i == len(evs)-1
		if d.Get("candidates.0.finishReason").Exists() != last || d.Get("usageMetadata.promptTokenCount").Int() > 0 != last {
			t.Fatalf("event %d of %d: the finish reason and the usage are the last event's: %s", i, len(evs), data)
		}
		d.Get("candidates.0.content.parts").ForEach(func(_, p gjson.Result) bool {
			text.WriteString(p.Get("text").Str)
			return true
		})
	}
	return text.String()
}

func strictChat(t *testing.T, b []byte) string {
	t.Helper()
	evs := events(b)
	var text strings.Builder
	id, finished := "", 0
	for i, ev := range evs {
		name, data := sseData(t, ev)
		if name != "" {
			t.Fatalf("chat events have no name: %q", name)
		}
		if i == len(evs)-1 {
			if string(data) != "[DONE]" {
				t.Fatalf("the last event %q", data)
			}
			break
		}
		c := gjson.ParseBytes(data)
		if c.Get("object").Str != "chat.completion.chunk" || (id != "" && c.Get("id").Str != id) {
			t.Fatalf("chunk %d: %s", i, data)
		}
		id = c.Get("id").Str
		if c.Get("choices.0.finish_reason").Str != "" {
			finished++
		}
		text.WriteString(c.Get("choices.0.delta.content").Str)
	}
	if finished != 1 {
		t.Fatalf("%d chunks with a finish_reason", finished)
	}
	return text.String()
}

func strictMessages(t *testing.T, b []byte) string {
	t.Helper()
	evs := events(b)
	var text strings.Builder
	open, next := -1, 0
	blockType := ""
	for i, ev := range evs {
		name, data := sseData(t, ev)
		d := gjson.ParseBytes(data)
		if d.Get("type").Str != name {
			t.Fatalf("event %q carries type %q", name, d.Get("type").Str)
		}
		switch {
		case i == 0:
			if name != "message_start" || d.Get("message.id").Str == "" || !d.Get("message.usage.input_tokens").Exists() {
				t.Fatalf("the first event: %s", ev)
			}
		case name == "ping":
		case name == "content_block_start":
			if open >= 0 || d.Get("index").Int() != int64(next) {
				t.Fatalf("a block started at %s with %d open", data, open)
			}
			open, blockType = next, d.Get("content_block.type").Str
			next++
		case name == "content_block_delta":
			want := map[string]string{"text": "text_delta", "tool_use": "input_json_delta"}[blockType]
			if d.Get("index").Int() != int64(open) || d.Get("delta.type").Str != want {
				t.Fatalf("a delta %s in a %s block %d", data, blockType, open)
			}
			text.WriteString(d.Get("delta.text").Str)
		case name == "content_block_stop":
			if d.Get("index").Int() != int64(open) {
				t.Fatalf("stop %s with %d open", data, open)
			}
			open = -1
		case name == "message_delta":
			if open >= 0 || d.Get("delta.stop_reason").Str == "" || !d.Get("usage.output_tokens").Exists() {
				t.Fatalf("message_delta %s", data)
			}
		case name == "message_stop":
			if prev, _ := sseData(t, evs[i-1]); prev != "message_delta" || i != len(evs)-1 {
				t.Fatalf("message_stop at %d of %d, after %q", i, len(evs), prev)
			}
		default:
			t.Fatalf("event %q", name)
		}
	}
	if name, _ := sseData(t, evs[len(evs)-1]); name != "message_stop" {
		t.Fatalf("the last event is %q", name)
	}
	return text.String()
}

func strictResponses(t *testing.T, b []byte) string {
	t.Helper()
	evs := events(b)
	var text strings.Builder
	open := map[int64]string{} // output_index → item id
	for i, ev := range evs {
		name, data := sseData(t, ev)
		d := gjson.ParseBytes(data)
		if d.Get("type").Str != name || d.Get("sequence_number").Int() != int64(i) {
			t.Fatalf("event %d %q: %s", i, name, data)
		}
		switch {
		case i == 0:
			if name != "response.created" || d.Get("response.id").Str == "" {
				t.Fatalf("the first event: %s", data)
			}
		case name == "response.in_progress":
		case name == "response.output_item.added":
			open[d.Get("output_index").Int()] = d.Get("item.id").Str
		case name == "response.output_item.done":
			if open[d.Get("output_index").Int()] != d.Get("item.id").Str {
				t.Fatalf("done %s, open %v", data, open)
			}
			delete(open, d.Get("output_index").Int())
		case strings.HasPrefix(name, "response.content_part."), strings.HasPrefix(name, "response.output_text."),
			strings.HasPrefix(name, "response.function_call_arguments."):
			if open[d.Get("output_index").Int()] != d.Get("item_id").Str {
				t.Fatalf("%s outside its item: %v", data, open)
			}
			if name == "response.output_text.delta" {
				text.WriteString(d.Get("delta").Str)
			}
		case name == "response.completed":
			r := d.Get("response")
			if i != len(evs)-1 || len(open) > 0 || r.Get("id").Str == "" || r.Get("status").Str != "completed" ||
				r.Get("usage.total_tokens").Int() <= 0 || !r.Get("usage.input_tokens_details.cached_tokens").Exists() {
				t.Fatalf("response.completed %s (event %d of %d, open %v)", data, i, len(evs), open)
			}
		default:
			t.Fatalf("event %q", name)
		}
	}
	return text.String()
}

// TestOpenAISDK: the official OpenAI SDK's types and stream readers take
// the chat and Responses answers, calls and text alike.
func TestOpenAISDK(t *testing.T) {
	srv := httptest.NewServer(New(Options{Delay: -1}))
	defer srv.Close()
	all := apis()
	chatFirst, respFirst := []byte(all[0].first), []byte(all[2].first)
	streamed := func(b []byte) []byte {
		return bytes.Replace(b, []byte(`{"model"`), []byte(`{"stream":true,"model"`), 1)
	}

	_, out := post(t, srv.URL+"/v1/chat/completions", chatFirst)
	var comp openai.ChatCompletion
	if err := json.Unmarshal(out, &comp); err != nil || len(comp.Choices) != 1 || comp.Choices[0].FinishReason != "tool_calls" ||
		comp.Choices[0].Message.ToolCalls[0].Function.Name != "run_shell_command" || comp.Usage.PromptTokens <= 0 {
		t.Errorf("chat JSON: %v %s", err, out)
	}

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", bytes.NewReader(streamed(chatFirst)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	cs := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(resp), nil)
	var acc openai.ChatCompletionAccumulator
	for cs.Next() {
		if !acc.AddChunk(cs.Current()) {
			t.Fatalf("the accumulator refuses %s", cs.Current().RawJSON())
		}
	}
	if err := cs.Err(); err != nil || len(acc.Choices) != 1 || acc.Choices[0].FinishReason != "tool_calls" ||
		acc.Choices[0].Message.ToolCalls[0].Function.Arguments != `{"command":"ls"}` || acc.Usage.TotalTokens <= 0 {
		t.Errorf("chat stream: %v %+v", err, acc.ChatCompletion)
	}

	_, out = post(t, srv.URL+"/v1/responses", respFirst)
	var r responses.Response
	if err := json.Unmarshal(out, &r); err != nil || r.Status != "completed" || len(r.Output) != 2 ||
		r.Output[1].AsFunctionCall().Name != "exec_command" || r.OutputText() == "" || r.Usage.InputTokens <= 0 {
		t.Errorf("Responses JSON: %v %s", err, out)
	}

	req, _ = http.NewRequest(http.MethodPost, srv.URL+"/v1/responses", bytes.NewReader(streamed(respFirst)))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rs := ssestream.NewStream[responses.ResponseStreamEventUnion](ssestream.NewDecoder(resp), nil)
	var done responses.Response
	var args string
	for rs.Next() {
		switch ev := rs.Current(); ev.Type {
		case "response.function_call_arguments.done":
			args = ev.Arguments
		case "response.completed":
			done = ev.AsResponseCompleted().Response
		}
	}
	if err := rs.Err(); err != nil || args != `{"cmd":"ls"}` || done.ID == "" || done.Usage.TotalTokens <= 0 ||
		done.Output[1].AsFunctionCall().Arguments != args {
		t.Errorf("Responses stream: %v %q %+v", err, args, done)
	}
}

// TestSummarizerCalls: the proxy's summarizer calls — the plain call of
// condense.UserPrompt (a transcript, or summaries to merge) in each API,
// and a summary asked in place — are answered with the summarizer
// prompt's sections, taken from the text, never a tool call.
func TestSummarizerCalls(t *testing.T) {
	srv := httptest.NewServer(New(Options{Delay: -1}))
	defer srv.Close()
	transcript := "[user]\nFix the failing test in pkg/auth/login_test.go\n\n[assistant]\nRunning it.\n[tool call call_1] bash({\"command\":\"go test ./pkg/auth\"})\n\n" +
		"[tool result call_1]\n--- FAIL: TestLogin (0.00s)\n    login_test.go:12: error: token expired\n\n"
	plain := condense.UserPrompt(condense.SummaryInput{Text: transcript, Level: 1})
	merged := condense.UserPrompt(condense.SummaryInput{Level: 2, Text: "## Task and intent\n- Fix the login test\n## Current state and progress\n- 4 messages summarized: 2 tool calls, 2 tool results\n## Files and code (every path, and what was read or changed in it)\n- pkg/auth/login.go\n\n" +
		"## Task and intent\n- continue the task the earlier messages set\n## Current state and progress\n- 3 messages summarized: 1 tool calls, 1 tool results\n## Files and code (every path, and what was read or changed in it)\n- pkg/auth/token.go\n## Pending work and next steps\n- rerun the tests"})
	inPlace := "You are the condense-proxy summarizer. The older part of this conversation is being folded into a summary, and you write it. Do not continue the task and do not call any tool: answer with the summary only, as text.\n\n" +
		"Summarize messages 2 to 4 of this conversation, counting its first message as 1: from the one that begins “Fix” to the one that ends “expired”.\n\n" + condense.DefaultPrompt
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	tools := `"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}]`
	cases := []struct {
		name, path, body string
		want             []string
	}{
		{"chat", "/v1/chat/completions", `{"model":"m","max_tokens":800,"messages":[{"role":"system","content":` + q(condense.DefaultPrompt) + `},{"role":"user","content":` + q(plain) + `}]}`,
			[]string{"- Fix the failing test in pkg/auth/login_test.go", "3 messages summarized: 1 tool calls, 1 tool results", "pkg/auth/login_test.go", "error: token expired"}},
		{"messages", "/v1/messages", `{"model":"m","max_tokens":800,"system":` + q(condense.DefaultPrompt) + `,"messages":[{"role":"user","content":` + q(plain) + `}]}`,
			[]string{"## Files and code", "pkg/auth/login_test.go"}},
		{"responses", "/v1/responses", `{"model":"m","max_output_tokens":800,"instructions":` + q(condense.DefaultPrompt) + `,"input":[{"role":"user","content":[{"type":"input_text","text":` + q(plain) + `}]}]}`,
			[]string{"## Pending work and next steps", "pkg/auth/login_test.go"}},
		{"merge", "/v1/chat/completions", `{"model":"m","max_tokens":800,"messages":[{"role":"user","content":` + q(merged) + `}]}`,
			[]string{"- Fix the login test", "7 messages summarized: 3 tool calls, 3 tool results", "pkg/auth/login.go, pkg/auth/token.go", "- rerun the tests"}},
		{"in place", "/v1/chat/completions", `{"model":"m","max_tokens":800,` + tools + `,"messages":[{"role":"system","content":"agent"},{"role":"user","content":"Fix the failing test in pkg/auth/login_test.go"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"go test\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"FAIL: token expired"},` +
			`{"role":"user","content":` + q(inPlace) + `}]}`,
			[]string{"- Fix the failing test in pkg/auth/login_test.go", "3 messages summarized: 1 tool calls, 1 tool results", "FAIL: token expired"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, out := post(t, srv.URL+c.path, []byte(c.body))
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, out)
			}
			text := gjson.GetBytes(out, "choices.0.message.content").Str + gjson.GetBytes(out, `content.#(type=="text").text`).Str +
				gjson.GetBytes(out, `output.#(type=="message").content.0.text`).Str
			if gjson.GetBytes(out, "choices.0.message.tool_calls").Exists() || gjson.GetBytes(out, `content.#(type=="tool_use")`).Exists() ||
				gjson.GetBytes(out, `output.#(type=="function_call")`).Exists() {
				t.Errorf("a tool call: %s", out)
			}
			for _, w := range append([]string{"## Task and intent", "## Decisions and reasons", "scripted model"}, c.want...) {
				if !strings.Contains(text, w) {
					t.Errorf("%q not in the summary:\n%s", w, text)
				}
			}
			if len(text) > 3*800 {
				t.Errorf("%d bytes for max_tokens 800", len(text))
			}
		})
	}
}

// TestAgentCompaction: an agent's own compaction request (Claude Code's
// summary instruction) gets a summary in <summary> tags; Codex's
// compaction_trigger gets exactly one compaction item.
func TestAgentCompaction(t *testing.T) {
	srv := httptest.NewServer(New(Options{Delay: -1}))
	defer srv.Close()
	_, out := post(t, srv.URL+"/v1/messages", []byte(`{"model":"m","max_tokens":2000,"tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}],"messages":[{"role":"user","content":"Fix main.go"},{"role":"assistant","content":"On it."},`+
		`{"role":"user","content":"Your task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests."}]}`))
	if text := gjson.GetBytes(out, "content.0.text").Str; gjson.GetBytes(out, "stop_reason").Str != "end_turn" ||
		!strings.HasPrefix(text, "<summary>\n## Task and intent\n- Fix main.go") || !strings.HasSuffix(text, "</summary>") {
		t.Errorf("Claude Code's compaction: %s", out)
	}
	_, out = post(t, srv.URL+"/v1/responses", []byte(`{"model":"m","stream":true,"input":[{"role":"user","content":"Fix main.go"},{"type":"compaction_trigger"}]}`))
	strictResponses(t, out)
	_, data := sseData(t, events(out)[len(events(out))-1])
	if o := gjson.GetBytes(data, "response.output"); len(o.Array()) != 1 || o.Get("0.type").Str != "compaction" || o.Get("0.encrypted_content").Str == "" {
		t.Errorf("Codex's compaction_trigger: %s", data)
	}
}

// TestRoutes: the other endpoints, and bad requests answered in the API's
// error shape.
func TestRoutes(t *testing.T) {
	srv := httptest.NewServer(New(Options{Delay: -1, MaxBody: 1 << 16}))
	defer srv.Close()
	do := func(method, path, body string, header ...string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	cases := []struct {
		name, method, path, body string
		header                   []string
		status                   int
		want                     string // a gjson path that must exist, or =value
	}{
		{"head", http.MethodHead, "/", "", nil, 200, ""},
		{"models", http.MethodGet, "/v1/models", "", nil, 200, "data.0.id"},
		{"anthropic models", http.MethodGet, "/v1/models", "", []string{"anthropic-version", "2023-06-01"}, 200, "data.0.display_name"},
		{"count tokens", http.MethodPost, "/v1/messages/count_tokens", `{"model":"m","messages":[{"role":"user","content":"hello there"}]}`, nil, 200, "input_tokens"},
		{"string input", http.MethodPost, "/v1/responses", `{"model":"m","input":"hi"}`, nil, 200, "output.0.content.0.text"},
		{"not JSON, chat", http.MethodPost, "/v1/chat/completions", `{`, nil, 400, "error.message"},
		{"no messages", http.MethodPost, "/v1/messages", `{"model":"m","messages":[]}`, nil, 400, "error.type"},
		{"an item the codec does not know", http.MethodPost, "/v1/responses", `{"model":"m","input":[{"type":"additional_tools","role":"developer","tools":[]},{"role":"user","content":"hi"}]}`, nil, 200, "output.0.content.0.text"},
		{"too large", http.MethodPost, "/v1/responses", `{"input":"` + strings.Repeat("x", 1<<16) + `"}`, nil, 413, "error.message"},
		{"unknown path", http.MethodPost, "/v1/embeddings", `{}`, nil, 404, "error.message"},
		{"wrong method", http.MethodGet, "/v1/chat/completions", ``, nil, 405, "error.message"},
		{"gemini", http.MethodPost, "/v1/models/gemini-2.5-pro:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, nil, 200, "candidates.0.content.parts.0.text"},
		{"gemini stream without alt=sse", http.MethodPost, "/v1beta/models/gemini-2.5-pro:streamGenerateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, nil, 200, "0.usageMetadata.totalTokenCount"},
		{"gemini count tokens", http.MethodPost, "/v1beta/models/gemini-2.5-pro:countTokens", `{"contents":[{"parts":[{"text":"hello there"}]}]}`, nil, 200, "totalTokens"},
		{"gemini, not a request", http.MethodPost, "/v1beta/models/gemini-2.5-pro:generateContent", `{"contents":[]}`, nil, 400, "error.status"},
		{"gemini, unknown method", http.MethodPost, "/v1beta/models/gemini-2.5-pro:embedContent", `{}`, nil, 404, "error.status"},
		{"gemini, wrong method", http.MethodGet, "/v1beta/models/gemini-2.5-pro:generateContent", ``, nil, 405, "error.status"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := do(c.method, c.path, c.body, c.header...)
			if code != c.status || (c.want != "" && !gjson.Get(body, c.want).Exists()) {
				t.Errorf("%d %s", code, body)
			}
		})
	}
}

// TestTurnProgress: the model finds where a turn stands through what
// agents send around it — a system message between the others (Claude
// Code with newer models; the Messages codec refuses it), user messages
// holding only system reminders — and never calls tools past maxCalls.
func TestTurnProgress(t *testing.T) {
	srv := httptest.NewServer(New(Options{Delay: -1}))
	defer srv.Close()
	bash := `"tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}]`
	call := func(i int) string {
		return fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_scripted0_%08d","name":"Bash","input":{"command":"ls"}}]},`+
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_scripted0_%08d","content":"README.md"}]}`, i, i)
	}
	cases := []struct {
		name, messages string
		want           string // the command called; "": a text answer
	}{
		{"system message", `{"role":"user","content":"Look around."},{"role":"system","content":"Agent types: …"},` + call(1), "head -n 20 README.md"},
		{"reminder only", call(1) + `,{"role":"user","content":[{"type":"text","text":"<system-reminder>\nfiles changed\n</system-reminder>"}]}`, "head -n 20 README.md"},
		{"new prompt", call(1) + `,{"role":"assistant","content":"Done."},{"role":"user","content":"Again, please."}`, "ls"},
	}
	many := `{"role":"user","content":"Look around."}`
	for i := range maxCalls {
		many += "," + call(i) + `,{"role":"assistant","content":"Done."},{"role":"user","content":"Again."}`
	}
	cases = append(cases, struct{ name, messages, want string }{"past maxCalls", many, ""})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.HasPrefix(c.messages, `{"role":"user","content":"`) {
				c.messages = `{"role":"user","content":"Look around."},` + c.messages
			}
			resp, out := post(t, srv.URL+"/v1/messages", []byte(`{"model":"m","max_tokens":100,`+bash+`,"messages":[`+c.messages+`]}`))
			got := gjson.GetBytes(out, `content.#(type=="tool_use").input.command`).Str
			if resp.StatusCode != 200 || got != c.want {
				t.Errorf("called %q, want %q: %d %s", got, c.want, resp.StatusCode, out)
			}
		})
	}
}

// TestListingOfShellTools: the model finds the files an ls listed in the
// output as each agent's shell tool wraps it.
func TestListingOfShellTools(t *testing.T) {
	for name, out := range map[string]string{
		"plain":      "main.go\nREADME.md\n",
		"Codex":      "Chunk ID: 3f\nWall time: 0.0 seconds\nProcess exited with code 0\nOutput:\nmain.go\nREADME.md\n",
		"Gemini CLI": "<untrusted_context>\nOutput: main.go\nREADME.md\nProcess Group PGID: 24349\n</untrusted_context>",
	} {
		if got := listing(out); fmt.Sprint(got) != "[main.go README.md]" {
			t.Errorf("%s: listing %q", name, got)
		}
		if f := pickFile(out); f != "README.md" {
			t.Errorf("%s: picked %q, want README.md", name, f)
		}
	}
}
