package fakeupstream

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// msgBody builds a Messages request from a JSON list of messages and extra
// top-level fields.
func msgBody(messages string, extra ...string) string {
	b := `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":` + messages
	for _, e := range extra {
		b += "," + e
	}
	return b + "}"
}

func thinkingBlock(text string) string {
	return `{"type":"thinking","thinking":` + jsonString(text) + `,"signature":"` + DefaultSigner.SignThinking(text) + `"}`
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

const (
	userHi  = `{"role":"user","content":"hi"}`
	useA    = `{"role":"assistant","content":[{"type":"text","text":"look"},{"type":"tool_use","id":"toolu_a","name":"Read","input":{"file_path":"/x"}}]}`
	resultA = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"file x"}]}`
	thinkOn = `"thinking":{"type":"enabled","budget_tokens":2048}`
)

func TestValidateMessages(t *testing.T) {
	thinkUse := `{"role":"assistant","content":[` + thinkingBlock("I should read x.") + `,{"type":"tool_use","id":"toolu_a","name":"Read","input":{}}]}`
	cc := func(ttl string) string {
		if ttl == "" {
			return `"cache_control":{"type":"ephemeral"}`
		}
		return `"cache_control":{"type":"ephemeral","ttl":"` + ttl + `"}`
	}
	tests := []struct {
		name    string
		body    string
		count   bool   // count_tokens
		wantErr string // substring; empty: valid
	}{
		{"plain", msgBody(`[` + userHi + `]`), false, ""},
		{"tool round trip", msgBody(`[` + userHi + `,` + useA + `,` + resultA + `]`), false, ""},
		{"not json", `{"model":`, false, "parsing the body"},
		{"no model", `{"max_tokens":5,"messages":[` + userHi + `]}`, false, "model: Field required"},
		{"no max_tokens", `{"model":"m","messages":[` + userHi + `]}`, false, "max_tokens: Field required"},
		{"count_tokens needs no max_tokens", `{"model":"m","messages":[` + userHi + `]}`, true, ""},
		{"empty messages", msgBody(`[]`), false, "at least one message is required"},
		{"unknown role", msgBody(`[{"role":"system","content":"x"}]`), false, "messages.0.role: Input should be 'user' or 'assistant'"},
		{"unknown role later", msgBody(`[` + userHi + `,{"role":"tool","content":"x"}]`), false, "messages.1.role: Input should be 'user' or 'assistant'"},
		// Claude Code 2.1.197 with claude-opus-4-8.
		{"system message after the task", msgBody(`[` + userHi + `,{"role":"system","content":"Available agent types"},` + useA + `,` + resultA + `]`), false, ""},
		{"system message of text blocks", msgBody(`[` + userHi + `,{"role":"system","content":[{"type":"text","text":"Be brief."}]}]`), false, ""},
		{"system message with an image", msgBody(`[` + userHi + `,{"role":"system","content":[{"type":"image","source":{}}]}]`), false, "messages.1.content.0.type: Input should be 'text'"},
		{"empty system message", msgBody(`[` + userHi + `,{"role":"system","content":" "}]`), false, "system messages must have non-empty content"},
		{"system message between tool_use and tool_result", msgBody(`[` + userHi + `,` + useA + `,{"role":"system","content":"x"},` + resultA + `]`), false, "without `tool_result` blocks immediately after"},
		{"empty text block", msgBody(`[{"role":"user","content":[{"type":"text","text":""}]}]`), false, "text content blocks must contain non-whitespace text"},
		{"unknown block type", msgBody(`[{"role":"user","content":[{"type":"tool_use","id":"x","name":"n","input":{}}]}]`), false, "does not match any of the expected tags"},
		{"tool_use without result", msgBody(`[` + userHi + `,` + useA + `,` + userHi + `]`), false,
			"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a"},
		{"tool_use at the end", msgBody(`[` + userHi + `,` + useA + `]`), false, "ids were found without `tool_result` blocks"},
		{"tool_result answering nothing", msgBody(`[` + userHi + `,{"role":"assistant","content":"ok"},` + resultA + `]`), false,
			"messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_a"},
		{"tool_result of an older turn", msgBody(`[` + userHi + `,` + useA + `,` + resultA + `,{"role":"assistant","content":"ok"},` + resultA + `]`), false,
			"unexpected `tool_use_id`"},
		{"tool_result not first", msgBody(`[` + userHi + `,` + useA + `,{"role":"user","content":[{"type":"text","text":"here"},{"type":"tool_result","tool_use_id":"toolu_a","content":"x"}]}]`), false,
			"messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message"},
		{"duplicate tool_use id", msgBody(`[` + userHi + `,` + useA + `,` + resultA + `,` + useA + `,` + resultA + `]`), false, "`tool_use` ids must be unique"},
		{"signed thinking", msgBody(`[`+userHi+`,`+thinkUse+`,`+resultA+`]`, thinkOn), false, ""},
		{"edited thinking", msgBody(`[`+userHi+`,`+strings.Replace(thinkUse, "read x", "read y", 1)+`,`+resultA+`]`, thinkOn), false,
			"messages.1.content.0: Invalid `signature` in `thinking` block"},
		{"thinking without signature", msgBody(`[`+userHi+`,{"role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"text","text":"x"}]},`+userHi+`]`, thinkOn), false,
			"thinking.signature: Field required"},
		{"redacted thinking issued", msgBody(`[`+userHi+`,{"role":"assistant","content":[{"type":"redacted_thinking","data":"`+DefaultSigner.RedactedData("secret")+`"},{"type":"tool_use","id":"toolu_a","name":"Read","input":{}}]},`+resultA+`]`, thinkOn), false, ""},
		{"redacted thinking forged", msgBody(`[`+userHi+`,{"role":"assistant","content":[{"type":"redacted_thinking","data":"abc"},{"type":"text","text":"x"}]},`+userHi+`]`, thinkOn), false,
			"Invalid `data` in `redacted_thinking` block"},
		{"thinking on, loop without thinking", msgBody(`[`+userHi+`,`+useA+`,`+resultA+`]`, thinkOn), false,
			"messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`"},
		{"thinking on, finished turn without thinking", msgBody(`[`+userHi+`,{"role":"assistant","content":"done"},`+userHi+`]`, thinkOn), false, ""},
		{"thinking off, thinking blocks kept", msgBody(`[` + userHi + `,` + thinkUse + `,` + resultA + `]`), false, ""},
		{"thinking off, final assistant with thinking", msgBody(`[` + userHi + `,{"role":"assistant","content":[` + thinkingBlock("t") + `,{"type":"text","text":"x"}]}]`), false,
			"When thinking is disabled, an `assistant` message in the final position cannot contain `thinking`"},
		{"final block thinking", msgBody(`[`+userHi+`,{"role":"assistant","content":[`+thinkingBlock("t")+`]}]`, thinkOn), false,
			"The final block in an assistant message cannot be `thinking`"},
		{"four markers", msgBody(`[{"role":"user","content":[{"type":"text","text":"a",`+cc("")+`},{"type":"text","text":"b",`+cc("")+`}]}]`,
			`"system":[{"type":"text","text":"s",`+cc("")+`}]`, `"tools":[{"name":"Read","input_schema":{},`+cc("")+`}]`), false, ""},
		{"five markers", msgBody(`[{"role":"user","content":[{"type":"text","text":"a",`+cc("")+`},{"type":"text","text":"b",`+cc("")+`},{"type":"text","text":"c",`+cc("")+`}]}]`,
			`"system":[{"type":"text","text":"s",`+cc("")+`}]`, `"tools":[{"name":"Read","input_schema":{},`+cc("")+`}]`), false,
			"A maximum of 4 blocks with cache_control may be provided. Found 5."},
		{"marker inside a tool_result", msgBody(`[` + userHi + `,` + useA + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":[{"type":"text","text":"x",` + cc("") + `}],` + cc("") + `}]}]`), false, ""},
		{"1h before 5m", msgBody(`[{"role":"user","content":[{"type":"text","text":"a",`+cc("5m")+`}]}]`, `"system":[{"type":"text","text":"s",`+cc("1h")+`}]`), false, ""},
		{"1h after 5m", msgBody(`[{"role":"user","content":[{"type":"text","text":"a",`+cc("1h")+`}]}]`, `"system":[{"type":"text","text":"s",`+cc("")+`}]`), false,
			"messages.0.content.0.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block"},
		{"bad ttl", msgBody(`[{"role":"user","content":[{"type":"text","text":"a",` + cc("2h") + `}]}]`), false, "Input should be '5m' or '1h'"},
		{"system string", msgBody(`[`+userHi+`]`, `"system":"be brief"`), false, ""},
		{"image in a tool_result", msgBody(`[` + userHi + `,` + useA + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","is_error":true,"content":[{"type":"text","text":"x"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}}]}]}]`), false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateMessages([]byte(tc.body), Signer{}, tc.count)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("accepted, want %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Message, tc.wantErr):
				t.Fatalf("error %q, want %q", err.Message, tc.wantErr)
			}
		})
	}
}

// sseEvents reads a server-sent event stream into (event, data) pairs.
func sseEvents(t *testing.T, r io.Reader) [][2]string {
	t.Helper()
	var out [][2]string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var ev string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			ev = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			out = append(out, [2]string{ev, strings.TrimPrefix(line, "data: ")})
		}
	}
	return out
}

func postJSON(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestMessagesStream(t *testing.T) {
	m := &Messages{Delay: -1, Answer: func([]byte) Reply {
		return Reply{Thinking: "think first", Text: "reading", Calls: []Call{{ID: "toolu_x", Name: "Read", Input: `{"file_path":"/tmp/a"}`}}}
	}}
	srv := httptest.NewServer(m)
	defer srv.Close()
	body := msgBody(`[`+userHi+`]`, thinkOn, `"stream":true`)
	resp := postJSON(t, srv.URL+"/v1/messages?beta=true", body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	evs := sseEvents(t, resp.Body)
	var names []string
	var thinking, sig, text, input string
	for _, e := range evs {
		if e[0] != gjson.Get(e[1], "type").String() {
			t.Errorf("event %s carries type %s", e[0], gjson.Get(e[1], "type"))
		}
		names = append(names, e[0])
		d := gjson.Get(e[1], "delta")
		switch d.Get("type").String() {
		case "thinking_delta":
			thinking += d.Get("thinking").String()
		case "signature_delta":
			sig += d.Get("signature").String()
		case "text_delta":
			text += d.Get("text").String()
		case "input_json_delta":
			input += d.Get("partial_json").String()
		}
	}
	got := strings.Join(names, " ")
	for _, want := range []string{"message_start ping content_block_start content_block_delta", "content_block_stop message_delta message_stop"} {
		if !strings.Contains(got, want) {
			t.Errorf("events %s, want %s", got, want)
		}
	}
	if thinking != "think first" || !DefaultSigner.VerifyThinking(thinking, sig) || text != "reading" || input != `{"file_path":"/tmp/a"}` {
		t.Errorf("thinking %q sig %q text %q input %q", thinking, sig, text, input)
	}
	start := gjson.Get(evs[0][1], "message.usage.input_tokens").Int()
	if want := int64(CountMessages(m.Counter, Signer{}, []byte(body))); start != want || start == 0 {
		t.Errorf("usage.input_tokens %d, want %d", start, want)
	}
	if sr := gjson.Get(evs[len(evs)-2][1], "delta.stop_reason").String(); sr != "tool_use" {
		t.Errorf("stop_reason %q", sr)
	}
	rec := m.Received()
	if len(rec) != 1 || rec[0].Query != "beta=true" || rec[0].Path != "/v1/messages" || rec[0].Tokens != int(start) || string(rec[0].Body) != body {
		t.Errorf("recorded %+v", rec)
	}
}

func TestMessagesJSONAndErrors(t *testing.T) {
	m := &Messages{Delay: -1}
	srv := httptest.NewServer(m)
	defer srv.Close()
	resp := postJSON(t, srv.URL+"/v1/messages", msgBody(`[`+userHi+`]`, thinkOn))
	b, _ := io.ReadAll(resp.Body)
	r := gjson.ParseBytes(b)
	if resp.StatusCode != 200 || r.Get("type").String() != "message" || r.Get("content.0.type").String() != "thinking" ||
		r.Get("content.1.text").String() != "Done." || r.Get("stop_reason").String() != "end_turn" || r.Get("usage.input_tokens").Int() == 0 {
		t.Fatalf("answer %d %s", resp.StatusCode, b)
	}
	resp = postJSON(t, srv.URL+"/v1/messages", msgBody(`[`+userHi+`,`+useA+`]`))
	b, _ = io.ReadAll(resp.Body)
	r = gjson.ParseBytes(b)
	if resp.StatusCode != 400 || r.Get("type").String() != "error" || r.Get("error.type").String() != "invalid_request_error" ||
		!strings.Contains(r.Get("error.message").String(), "tool_use") {
		t.Fatalf("error answer %d %s", resp.StatusCode, b)
	}
	if rej := m.Rejected(); len(rej) != 1 || rej[0].Status != 400 || rej[0].Error == "" {
		t.Errorf("rejected %+v", rej)
	}
	// count_tokens answers the same count the answers report.
	body := msgBody(`[` + userHi + `,` + useA + `,` + resultA + `]`)
	resp = postJSON(t, srv.URL+"/v1/messages/count_tokens?beta=true", body)
	b, _ = io.ReadAll(resp.Body)
	if n := gjson.GetBytes(b, "input_tokens").Int(); resp.StatusCode != 200 || n != int64(CountMessages(m.Counter, Signer{}, []byte(body))) || n < 10 {
		t.Errorf("count_tokens %d %s", resp.StatusCode, b)
	}
	// Summarizer calls never reach Answer.
	m.Answer = func([]byte) Reply { t.Error("summary reached Answer"); return Reply{} }
	resp = postJSON(t, srv.URL+"/v1/messages", msgBody(`[{"role":"user","content":"You are the condense-proxy summarizer."}]`))
	b, _ = io.ReadAll(resp.Body)
	if gjson.GetBytes(b, "content.0.text").String() != DefaultSummary {
		t.Errorf("summary answer %s", b)
	}
}

func TestCountMessages(t *testing.T) {
	m := &Messages{}
	c := m.counter()
	short := CountMessages(c, Signer{}, []byte(msgBody(`[`+userHi+`]`)))
	long := CountMessages(c, Signer{}, []byte(msgBody(`[{"role":"user","content":"`+strings.Repeat("word ", 1000)+`"}]`)))
	img := CountMessages(c, Signer{}, []byte(msgBody(`[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"`+strings.Repeat("A", 100000)+`"}}]}]`)))
	if short > 20 || long < 1000 || long > 1100 || img < ImageTokens || img > ImageTokens+20 {
		t.Errorf("counts: short %d, 1000 words %d, image %d", short, long, img)
	}
}
