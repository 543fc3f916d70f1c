package proxy_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/memory"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// TestNewUserKeepsThePlantedFact is issue 39's new user: a 16k-window
// model, a 40-step session, the default configuration (auto, LLM
// summaries from the upstream's model, the recall tool on by default).
// The fact planted in the first tool output is in every forwarded request,
// or the model gets it back through the recall tool when it asks; no
// request is marked degraded; and the session was condensed (else the
// test proves nothing).
func TestNewUserKeepsThePlantedFact(t *testing.T) {
	for _, format := range []string{"chat", "messages", "responses"} {
		t.Run(format, func(t *testing.T) {
			// The scripted model: a summary when asked for one; the fact
			// when its request holds it (directly or recalled); else a
			// recall call when it has the tool.
			m := func(format string, body []byte) fakeupstream.Reply {
				if fakeupstream.IsSummaryRequest(body) {
					return fakeupstream.Reply{Text: "## Task and intent\n- Fix the deploy script; the files of pkg/ were read."}
				}
				if strings.Contains(string(body), "ZEBRA-9931") {
					return fakeupstream.Reply{Text: "FINAL knows ZEBRA-9931"}
				}
				if strings.Contains(string(body), `"`+memory.ToolName+`"`) {
					return fakeupstream.Reply{Thinking: "I need an earlier fact.", Text: "Let me look that up.",
						Calls: []fakeupstream.Call{{ID: "call_recall_1", Name: memory.ToolName, Input: `{"query":"deploy token ticket ZEBRA"}`}}}
				}
				return fakeupstream.Reply{Text: "FINAL lost the fact"}
			}
			st := &recallStack{Stack: harness.New(harness.Options{Window: 16000, Summarizer: "llm"}), chat: &chatUpstream{answer: m}}
			counter := tokenizer.New(tokenizer.Options{})
			st.msgs = &fakeupstream.Messages{Counter: counter, Delay: -1, Answer: func(b []byte) fakeupstream.Reply { return m("messages", b) }}
			st.resp = &fakeupstream.Responses{Counter: counter, Delay: -1, Answer: func(b []byte) fakeupstream.Reply { return m("responses", b) }}
			st.SetUpstream(http.HandlerFunc(st.route))
			t.Cleanup(st.Close)

			condensed := 0
			for n := 1; n <= 40; n++ {
				req, _ := http.NewRequest("POST", st.Proxy.URL+paths[format], bytes.NewReader(conversation(format, n, false)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer sk-new-user")
				req.Header.Set("x-api-key", "sk-new-user")
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				answer, _ := io.ReadAll(res.Body)
				res.Body.Close()
				st.Drain()
				if res.StatusCode != 200 {
					t.Fatalf("step %d: status %d: %s", n, res.StatusCode, answer)
				}
				if d := res.Header.Get("X-Condense-Degraded"); d != "" {
					t.Errorf("step %d (%s): marked degraded: %s", n, res.Header.Get("X-Condense-Applied"), d)
				}
				if a := res.Header.Get("X-Condense-Applied"); a != "none" && a != "" {
					condensed++
				}
				if strings.Contains(string(answer), memory.ToolName) {
					t.Fatalf("step %d: the agent received a %s call", n, memory.ToolName)
				}
				if !strings.Contains(string(answer), "FINAL knows ZEBRA-9931") {
					t.Fatalf("step %d (%s): the model did not have the fact, directly or recalled: %.300s", n, res.Header.Get("X-Condense-Applied"), answer)
				}
			}
			if condensed == 0 {
				t.Fatal("no request was condensed: the test proves nothing")
			}
			recalled := false
			for _, g := range st.upstream(format) {
				if strings.Contains(string(g.Body), memory.ToolName+":") && strings.Contains(string(g.Body), "ZEBRA-9931") {
					recalled = true
				}
			}
			if !recalled {
				t.Log("the fact stayed in every request (no recall was needed)")
			}
		})
	}
}
