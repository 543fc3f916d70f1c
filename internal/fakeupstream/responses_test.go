package fakeupstream

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func respBody(items string, extra ...string) string {
	b := `{"model":"gpt-5.5","store":false,"include":["reasoning.encrypted_content"],"input":[` + items + `]`
	for _, e := range extra {
		b += "," + e
	}
	return b + "}"
}

func reasoningItem(text string) string {
	return `{"type":"reasoning","id":"rs_1","summary":[],"content":null,"encrypted_content":"` + DefaultSigner.Encrypt(text) + `"}`
}

const (
	dev     = `{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]}`
	user    = `{"type":"message","role":"user","content":[{"type":"input_text","text":"cat a"}]}`
	call1   = `{"type":"function_call","id":"fc_1","name":"exec_command","arguments":"{\"cmd\":\"cat a\"}","call_id":"call_1"}`
	out1    = `{"type":"function_call_output","call_id":"call_1","output":"contents of a"}`
	custom1 = `{"type":"custom_tool_call","id":"ctc_1","name":"apply_patch","input":"*** Begin Patch","call_id":"call_c"}`
	cout1   = `{"type":"custom_tool_call_output","call_id":"call_c","output":"Done"}`
	said    = `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}`
)

func TestValidateResponses(t *testing.T) {
	tests := []struct {
		name, body, wantErr, code string
	}{
		{"plain", respBody(dev + `,` + user), "", ""},
		// Codex 0.169 with gpt-6.1-sol.
		{"additional_tools", respBody(`{"type":"additional_tools","id":"at_1","role":"developer","tools":[{"type":"namespace","name":"functions","description":"","tools":[{"type":"custom","name":"exec","description":"Run JavaScript"}]}]},` + dev + `,` + user), "", ""},
		{"additional_tools without tools", respBody(`{"type":"additional_tools","role":"developer"},` + user), "Invalid type for 'input[0].tools'", ""},
		{"string input", `{"model":"m","input":"hi"}`, "", ""},
		{"easy message without type", respBody(`{"role":"user","content":"hi"}`), "", ""},
		{"call round trip", respBody(dev + `,` + user + `,` + reasoningItem("r") + `,` + call1 + `,` + out1), "", ""},
		{"custom round trip", respBody(user + `,` + custom1 + `,` + cout1), "", ""},
		{"no model", `{"input":"x"}`, "Missing required parameter: 'model'.", ""},
		{"not json", `{"model":`, "could not parse the JSON body", ""},
		{"output without call", respBody(user + `,` + out1), "No tool call found for function call output with call_id call_1.", ""},
		{"output before its call", respBody(user + `,` + out1 + `,` + call1), "No tool call found for function call output with call_id call_1.", ""},
		{"call without output", respBody(user + `,` + call1 + `,` + said), "No tool output found for function call call_1.", ""},
		{"custom output without call", respBody(user + `,` + cout1), "No tool call found for custom tool call output with call_id call_c.", ""},
		{"custom call without output", respBody(user + `,` + custom1), "No tool output found for custom tool call call_c.", ""},
		{"custom output for a function call", respBody(user + `,` + call1 + `,` + `{"type":"custom_tool_call_output","call_id":"call_1","output":"x"}`), "No tool call found for custom tool call output", ""},
		{"reasoning then message", respBody(user + `,` + reasoningItem("r") + `,` + said), "", ""},
		{"reasoning at the end", respBody(user + `,` + reasoningItem("r")), "Item 'rs_1' of type 'reasoning' was provided without its required following item.", ""},
		{"reasoning before an output", respBody(user + `,` + call1 + `,` + reasoningItem("r") + `,` + out1), "without its required following item", ""},
		{"reasoning before a user message", respBody(user + `,` + reasoningItem("r") + `,` + user), "without its required following item", ""},
		{"forged encrypted content", respBody(user + `,{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAAABforged=="},` + said), "The encrypted content gAAA...ed== could not be verified.", "invalid_encrypted_content"},
		{"edited encrypted content", respBody(user + `,` + strings.Replace(reasoningItem("reasoning text"), "gAAAAA", "gAAAAB", 1) + `,` + said), "could not be verified", "invalid_encrypted_content"},
		{"reasoning without content, store false", respBody(user + `,{"type":"reasoning","id":"rs_9","summary":[]},` + said), "Items are not persisted when `store` is set to false", ""},
		{"reasoning without summary", respBody(user + `,{"type":"reasoning","id":"rs_9","encrypted_content":"` + DefaultSigner.Encrypt("x") + `"},` + said), "Missing required parameter: 'input[1].summary'.", ""},
		{"compaction issued", respBody(`{"type":"compaction","encrypted_content":"` + DefaultSigner.Encrypt("summary") + `"},` + user), "", ""},
		{"compaction forged", respBody(`{"type":"compaction","encrypted_content":"xyz"},` + user), "could not be verified", "invalid_encrypted_content"},
		{"unknown item type", respBody(user + `,{"type":"telepathy","text":"x"}`), "Invalid value: 'telepathy'.", ""},
		{"unknown role", respBody(`{"type":"message","role":"tool","content":"x"}`), "Invalid value: 'tool'. Supported values are: 'assistant', 'system', 'developer', and 'user'.", ""},
		{"assistant with input_text", respBody(user + `,{"type":"message","role":"assistant","content":[{"type":"input_text","text":"x"}]}`), "Supported values are: 'output_text' and 'refusal'.", ""},
		{"previous_response_id accepted as is", `{"model":"m","previous_response_id":"resp_1","input":[` + out1 + `]}`, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateResponses([]byte(tc.body), Signer{})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("accepted, want %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Message, tc.wantErr):
				t.Fatalf("error %q, want %q", err.Message, tc.wantErr)
			case tc.code != "" && err.Code != tc.code:
				t.Fatalf("code %q, want %q", err.Code, tc.code)
			}
		})
	}
}

func TestResponsesStream(t *testing.T) {
	s := &Responses{Delay: -1, Answer: func([]byte) Reply {
		return Reply{Thinking: "cat it", Text: "reading", Calls: []Call{{ID: "call_9", Name: "exec_command", Input: `{"cmd":"cat a"}`}}}
	}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	body := respBody(dev+`,`+user, `"stream":true`)
	resp := postJSON(t, srv.URL+"/v1/responses", body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	evs := sseEvents(t, resp.Body)
	var names []string
	var text, args string
	for i, e := range evs {
		names = append(names, e[0])
		d := gjson.Parse(e[1])
		if d.Get("type").String() != e[0] || d.Get("sequence_number").Int() != int64(i) {
			t.Errorf("event %d %s: %s", i, e[0], e[1])
		}
		switch e[0] {
		case "response.output_text.delta":
			text += d.Get("delta").String()
		case "response.function_call_arguments.delta":
			args += d.Get("delta").String()
		}
	}
	got := strings.Join(names, " ")
	for _, want := range []string{"response.created response.in_progress response.output_item.added response.output_item.done",
		"response.content_part.added response.output_text.delta", "response.output_text.done response.content_part.done response.output_item.done",
		"response.function_call_arguments.done response.output_item.done response.completed"} {
		if !strings.Contains(got, want) {
			t.Errorf("events %s\nwant %s", got, want)
		}
	}
	if text != "reading" || args != `{"cmd":"cat a"}` {
		t.Errorf("text %q args %q", text, args)
	}
	done := gjson.Parse(evs[len(evs)-1][1]).Get("response")
	if done.Get("id").String() == "" || done.Get("status").String() != "completed" ||
		done.Get("usage.input_tokens").Int() != int64(CountResponses(s.Counter, Signer{}, []byte(body))) {
		t.Errorf("completed: %s", done.Raw)
	}
	// The answer's items, sent back as Codex does, are accepted.
	items := []string{dev, user}
	done.Get("output").ForEach(func(_, it gjson.Result) bool { items = append(items, it.Raw); return true })
	items = append(items, `{"type":"function_call_output","call_id":"call_9","output":"a"}`)
	if err := ValidateResponses([]byte(respBody(strings.Join(items, ","))), Signer{}); err != nil {
		t.Errorf("own answer sent back rejected: %v", err)
	}
	if r := done.Get("output.0"); r.Get("type").String() != "reasoning" || !strings.HasPrefix(r.Get("encrypted_content").String(), "gAAAAA") {
		t.Errorf("reasoning item %s", r.Raw)
	}
}

func TestResponsesJSONErrorsAndWebSocket(t *testing.T) {
	s := &Responses{Delay: -1}
	srv := httptest.NewServer(s)
	defer srv.Close()
	resp := postJSON(t, srv.URL+"/v1/responses", `{"model":"gpt-5.5","input":"hi"}`)
	b, _ := io.ReadAll(resp.Body)
	r := gjson.ParseBytes(b)
	// Without include, the reasoning item carries no encrypted_content.
	if resp.StatusCode != 200 || r.Get("object").String() != "response" || r.Get("output.0.encrypted_content").Exists() ||
		r.Get("output.1.content.0.text").String() != "Done." || r.Get("usage.total_tokens").Int() == 0 {
		t.Fatalf("answer %d %s", resp.StatusCode, b)
	}
	resp = postJSON(t, srv.URL+"/v1/responses", respBody(user+`,`+out1))
	b, _ = io.ReadAll(resp.Body)
	r = gjson.ParseBytes(b)
	if resp.StatusCode != 400 || r.Get("error.type").String() != "invalid_request_error" || r.Get("error.param").String() != "input" ||
		!strings.Contains(r.Get("error.message").String(), "No tool call found") {
		t.Fatalf("error answer %d %s", resp.StatusCode, b)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/responses", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	ws, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ws.Body.Close()
	if ws.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("websocket upgrade answered %d", ws.StatusCode)
	}
	if n := len(s.Rejected()); n != 2 {
		t.Errorf("%d rejected, want 2", n)
	}
}

func TestScript(t *testing.T) {
	s := &Script{ID: "t", Final: "finished", Steps: []Step{{Name: "Read", Input: `{"file_path":"/a"}`}, {Name: "Read", Input: `{"file_path":"/b"}`}}}
	m := &Messages{Delay: -1, Answer: s.Messages}
	srv := httptest.NewServer(m)
	defer srv.Close()
	// Play the agent: send the history, append the answer and a result.
	msgs := []string{userHi}
	for turn := 0; turn < 5; turn++ {
		resp := postJSON(t, srv.URL+"/v1/messages", msgBody(`[`+strings.Join(msgs, ",")+`]`, thinkOn))
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("turn %d: %d %s", turn, resp.StatusCode, b)
		}
		content := gjson.GetBytes(b, "content")
		msgs = append(msgs, `{"role":"assistant","content":`+content.Raw+`}`)
		use := content.Get(`#(type=="tool_use")`)
		if !use.Exists() {
			if got := content.Get(`#(type=="text").text`).String(); got != "finished" || turn != 2 {
				t.Fatalf("turn %d ended with %q", turn, got)
			}
			break
		}
		msgs = append(msgs, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+use.Get("id").String()+`","content":"data"}]}`)
	}
	if a := s.Answers(); len(a) != 3 || a[0] != 0 || a[1] != 1 || a[2] != 2 || !s.Finished() {
		t.Errorf("answers %v", a)
	}
	// A request after results whose last message is not a result (the
	// agent compacting) gets Other with a progress marker; a history that
	// holds only that marker resumes there.
	compact := msgBody(`[`+strings.Join(msgs[:3], ",")+`,{"role":"assistant","content":"ok"},{"role":"user","content":"summarize"}]`, thinkOn)
	if k, in := s.StepOf("messages", []byte(compact)); in || k != 1 {
		t.Errorf("compaction request: step %d in loop %v", k, in)
	}
	rep := s.Messages([]byte(compact))
	if len(rep.Calls) != 0 || !strings.Contains(rep.Text, "[script t at step 1]") {
		t.Errorf("compaction answer %+v", rep)
	}
	resumed := msgBody(`[{"role":"user","content":"summary: ` + rep.Text + `"}]`)
	if k, in := s.StepOf("messages", []byte(resumed)); !in || k != 1 {
		t.Errorf("resumed request: step %d in loop %v", k, in)
	}
	// Responses: the call id of the newest output gives the step.
	body := respBody(user + `,` + strings.Replace(call1, "call_1", "call_t_000", 1) + `,` + strings.Replace(out1, "call_1", "call_t_000", 1))
	if k, in := s.StepOf("responses", []byte(body)); !in || k != 1 {
		t.Errorf("responses step %d in loop %v", k, in)
	}
	if rep := s.Responses([]byte(body)); len(rep.Calls) != 1 || rep.Calls[0].ID != "call_t_001" || rep.Calls[0].Input != `{"file_path":"/b"}` {
		t.Errorf("responses reply %+v", rep)
	}
}

func TestMux(t *testing.T) {
	chat, m, r := New(), &Messages{Delay: -1}, &Responses{Delay: -1}
	srv := httptest.NewServer(Mux(chat, m, r))
	defer srv.Close()
	postJSON(t, srv.URL+"/v1/messages/count_tokens", msgBody(`[`+userHi+`]`))
	postJSON(t, srv.URL+"/v1/responses", `{"model":"m","input":"x"}`)
	postJSON(t, srv.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	if len(m.Received()) != 1 || len(r.Received()) != 1 || len(chat.Received()) != 1 {
		t.Errorf("routed %d/%d/%d", len(m.Received()), len(r.Received()), len(chat.Received()))
	}
}
