package chat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// TestAsk: a summary asked in place is a valid chat request (the strict
// fake's pairing rules) whose messages are the conversation's byte for
// byte, then the instruction as a user message; not streamed, its answer
// bounded by max_tokens — or max_completion_tokens, with room for
// reasoning, where the request bounds its answer so. Requests that force
// a tool call or a structured answer are not asked so.
func TestAsk(t *testing.T) {
	c := New(tokenizer.New(tokenizer.Options{}))
	msgs := `[{"role":"system","content":"You are a coding agent."},{"role":"user","content":"Fix the test."},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"cmd\":\"go test\"}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"--- FAIL: TestX"}]`
	scan := func(b string) []byte {
		r, err := c.Scan([]byte(b), func(string) string { return "o200k_base" })
		if err != nil {
			t.Fatal(err)
		}
		out, ok, err := c.Ask(r, "You are the condense-proxy summarizer. Summarize messages 1 to 4.", 1500)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return nil
		}
		return out
	}
	for _, tc := range []struct{ name, body, bound string }{
		{"max_tokens", `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"max_tokens":4096,"messages":` + msgs + `,"tools":[]}`, "max_tokens"},
		{"max_completion_tokens", `{"model":"o3","stream":true,"max_completion_tokens":30000,"reasoning_effort":"high","messages":` + msgs + `}`, "max_completion_tokens"},
		{"no bound", `{"model":"gpt-4o","messages":` + msgs + `}`, "max_tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := scan(tc.body)
			if out == nil {
				t.Fatal("not asked")
			}
			var req struct{ Messages []json.RawMessage }
			if err := json.Unmarshal(out, &req); err != nil {
				t.Fatal(err)
			}
			if err := fakeupstream.Validate(req.Messages); err != nil {
				t.Fatalf("the strict fake refuses it: %v", err)
			}
			was := gjson.Get(tc.body, "messages").Array()
			if len(req.Messages) != len(was)+1 {
				t.Fatalf("%d messages, want %d", len(req.Messages), len(was)+1)
			}
			for i := range was {
				if string(req.Messages[i]) != was[i].Raw {
					t.Fatalf("message %d changed", i)
				}
			}
			if !strings.Contains(string(req.Messages[len(was)]), "condense-proxy summarizer") {
				t.Error("the instruction is not the last message")
			}
			want := int64(1500)
			if tc.bound == "max_completion_tokens" {
				want += 8192
			}
			if gjson.GetBytes(out, "stream").Bool() || gjson.GetBytes(out, "stream_options").Exists() || gjson.GetBytes(out, tc.bound).Int() != want {
				t.Errorf("stream %s, stream_options %s, %s %s", gjson.GetBytes(out, "stream").Raw, gjson.GetBytes(out, "stream_options").Raw, tc.bound, gjson.GetBytes(out, tc.bound).Raw)
			}
		})
	}
	for _, forced := range []string{`"tool_choice":"required"`, `"tool_choice":{"type":"function","function":{"name":"bash"}}`, `"response_format":{"type":"json_object"}`, `"n":2`} {
		if out := scan(`{"model":"gpt-4o",` + forced + `,"messages":` + msgs + `}`); out != nil {
			t.Errorf("%s: asked in place", forced)
		}
	}
}
