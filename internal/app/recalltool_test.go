package app_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/memory"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/tidwall/gjson"
)

// TestRecallToolFromTheFirstCondensation, in the default configuration
// (the recall tool on) in full mode with LLM summaries: summaries prepared
// ahead, while the conversation is still under the threshold, do not give
// it the tool — every request before the first condensed one goes byte
// for byte —; from the first condensed request on every request carries
// it, the same bytes; and the summaries asked in place after that carry it
// too, so they read the conversation the provider cached with it.
func TestRecallToolFromTheFirstCondensation(t *testing.T) {
	if !config.Defaults().Memory.RecallTool {
		t.Fatal("memory.recall_tool is off by default")
	}
	const window = 32000
	counter := tokenizer.New(tokenizer.Options{})
	st := harness.New(harness.Options{Window: window, Threshold: 0.75, Target: 0.5, Summarizer: "llm", Counter: counter, SummaryTokens: 500,
		Model: &config.ModelConfig{ContextWindow: window, Encoding: "o200k_base", SafetyFactor: 1, CacheRead: 0.1, CacheWrite: 1.25, CacheTTL: 5 * time.Minute}})
	t.Cleanup(st.Close)
	sess, _ := corpus.Synthetic(1, window*32/10*3)
	tool := func(b []byte) string {
		out := ""
		gjson.GetBytes(b, "tools").ForEach(func(_, v gjson.Result) bool {
			if v.Get("function.name").String() == memory.ToolName || v.Get("name").String() == memory.ToolName {
				out = v.Raw
			}
			return true
		})
		return out
	}
	var toolBytes string
	condensed, askedAhead, askedInPlace := false, 0, 0
	for i, n := range sess.TurnEnds() {
		body, err := sess.Request("gpt-4o", n)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", st.Proxy.URL+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-agent")
		req.Header.Set("X-Condense-Mode", "full")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		st.Drain()
		applied := res.Header.Get("X-Condense-Applied")
		for _, g := range st.Fake.Received() {
			if fakeupstream.IsSummaryRequest(g.Body) {
				if !condensed {
					askedAhead++
				}
				// Asked in place: the conversation's own messages, then
				// the instruction.
				inPlace := len(gjson.GetBytes(g.Body, "messages").Array()) > 2
				if inPlace && condensed {
					askedInPlace++
					if got := tool(g.Body); got != toolBytes {
						t.Fatalf("request %d: a summary asked in place after the first condensation carries tool %q, want %q", i, got, toolBytes)
					}
				}
				continue
			}
			got := tool(g.Body)
			switch {
			case !condensed && applied == "none":
				if !bytes.Equal(g.Body, body) {
					t.Fatalf("request %d, under the threshold and never condensed, was not forwarded byte for byte (tool %q)", i, got)
				}
			case !condensed:
				condensed, toolBytes = true, got
				if got == "" {
					t.Fatalf("request %d, the first condensed one, has no recall tool", i)
				}
			case got != toolBytes:
				t.Fatalf("request %d (%s): tool %q, want the first condensed request's %q", i, applied, got, toolBytes)
			}
		}
		st.Fake.Reset()
	}
	if !condensed || askedAhead == 0 || askedInPlace == 0 {
		t.Fatalf("the session did not exercise the rule: condensed %v, summaries asked before the first condensation %d, in place after it %d", condensed, askedAhead, askedInPlace)
	}
}
