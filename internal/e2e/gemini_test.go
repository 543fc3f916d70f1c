package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// geminiSession is a Gemini CLI-like conversation: its set-up exchange,
// the task, then steps of a model call (the first of every other step
// signed by the fake, as Gemini 3 signs them) and the user's
// functionResponse with a large output.
func geminiSession(steps int) []string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	cs := []string{
		enc(map[string]any{"role": "user", "parts": []any{map[string]any{"text": "This is the Gemini CLI. We are setting up the context for our chat."}}}),
		enc(map[string]any{"role": "model", "parts": []any{map[string]any{"text": "Got it. Thanks for the context!"}}}),
		enc(map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Fix the failing test in package store. The planted fact: the port is 4711."}}}),
	}
	for i := 0; i < steps; i++ {
		id := fmt.Sprintf("call_%03d", i)
		args := fmt.Sprintf(`{"absolute_path":"/src/f%d.go"}`, i)
		call := map[string]any{"functionCall": map[string]any{"id": id, "name": "read_file", "args": json.RawMessage(args)}}
		if i%2 == 0 {
			call["thoughtSignature"] = fakeupstream.DefaultSigner.SignThinking("call:read_file:" + args)
		}
		cs = append(cs, enc(map[string]any{"role": "model", "parts": []any{map[string]any{"text": fmt.Sprintf("Reading f%d.go.", i)}, call}}))
		var out strings.Builder
		for l := 0; l < 60+i%40; l++ {
			fmt.Fprintf(&out, "%4d\tfunc f%d_%d(x int) int { return x*%d + %d }\n", l+1, i, l, l, i)
		}
		cs = append(cs, enc(map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{
			"id": id, "name": "read_file", "response": map[string]any{"output": out.String()}}}}}))
	}
	return cs
}

// TestGeminiConversationCondensed replays a long Gemini conversation,
// request by request, through the stack serve builds in front of the
// strict Gemini fake (window 16k), streamed, in auto, full, selective and
// truncate: every request is accepted (alternation, pairing, signatures,
// nothing over the window), the system instruction and the head byte for
// byte, the last content verbatim, and the conversation condensed.
func TestGeminiConversationCondensed(t *testing.T) {
	const window = 16000
	cs := geminiSession(60)
	for _, mode := range []string{condense.ModeAuto, condense.ModeFull, condense.ModeSelective, condense.ModeTruncate} {
		t.Run(mode, func(t *testing.T) {
			s := harness.New(harness.Options{Window: window, Summarizer: "extractive"})
			defer s.Close()
			g := &fakeupstream.Gemini{Window: window, Delay: -1, Key: "gk", Summarize: harness.CannedSummary}
			s.SetUpstream(fakeupstream.WithGemini(s.Fake, g))
			condensed := 0
			for k := 5; k <= len(cs); k += 2 {
				body := []byte(`{"contents":[` + strings.Join(cs[:k], ",") + `],"systemInstruction":{"parts":[{"text":"You are an interactive CLI agent."}]},` +
					`"tools":[{"functionDeclarations":[{"name":"read_file","description":"Reads a file.","parameters":{"type":"object","properties":{"absolute_path":{"type":"string"}}}}]}]}`)
				req, _ := http.NewRequest(http.MethodPost, s.Proxy.URL+"/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("x-goog-api-key", "gk")
				req.Header.Set(proxy.HeaderMode, mode)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				answer, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("%d contents: %d %s", k, resp.StatusCode, answer)
				}
				if a := resp.Header.Get(proxy.HeaderApplied); a != "" && a != condense.AppliedNone {
					condensed++
				}
			}
			if rej := g.Rejected(); len(rej) > 0 {
				t.Fatalf("%d requests rejected, the first: %s", len(rej), rej[0].Error)
			}
			got := g.Received()
			if len(got) == 0 || condensed == 0 {
				t.Fatalf("%d requests, %d condensed", len(got), condensed)
			}
			for _, r := range got {
				if fakeupstream.IsSummaryRequest(r.Body) {
					continue
				}
				out := gjson.GetBytes(r.Body, "contents").Array()
				n := len(out)
				for i := 0; i < 3; i++ {
					if out[i].Raw != cs[i] {
						t.Fatalf("head content %d changed", i)
					}
				}
				if gjson.GetBytes(r.Body, "systemInstruction").Raw != `{"parts":[{"text":"You are an interactive CLI agent."}]}` {
					t.Fatal("systemInstruction changed")
				}
				// The last content is one of the conversation's, verbatim.
				last := out[n-1].Raw
				found := false
				for _, c := range cs {
					found = found || c == last
				}
				if !found {
					t.Fatalf("last content not verbatim: %.200s", last)
				}
				if r.Tokens > window {
					t.Fatalf("%d tokens forwarded, over the window", r.Tokens)
				}
			}
		})
	}
}
