package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/codec/messages"
	"github.com/condense-proxy/condense-proxy/codec/responses"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// The agents' compaction instructions, as their sources write them (see
// codec/internal/compaction for where each comes from).
const (
	claudeCompact = "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\n- Do NOT use Read, Bash, Grep, Glob, Edit, Write, or ANY other tool.\n\n" +
		"Your task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests and your previous actions."
	codexCompact = "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.\n\n" +
		"Include:\n- Goal / user objective\n- Current progress and key decisions made\n"
	rooCompact = "Summarize the conversation so far, as described in the prompt instructions."
)

// toolOutput is a large file read, step i.
func toolOutput(i int) string {
	var out strings.Builder
	for l := 0; l < 120; l++ {
		fmt.Fprintf(&out, "\tv%d := compute(%d, %d) // pkg/file%d.go\n", l, i, l*7919%1000, i)
	}
	return out.String()
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// chatCompaction is a Roo Code-like chat request of n tool steps whose
// last message is last (a user message's text).
func chatCompaction(n int, last string) []byte {
	msgs := []string{`{"role":"system","content":"You are Roo."}`, `{"role":"user","content":"Fix TestParseDuration."}`}
	for i := 0; i < n; i++ {
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","content":"Reading file %d.","tool_calls":[{"id":"call_%d","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"pkg/file%d.go\"}"}}]}`, i, i, i),
			fmt.Sprintf(`{"role":"tool","tool_call_id":"call_%d","content":%s}`, i, jsonString(toolOutput(i))))
	}
	msgs = append(msgs, `{"role":"user","content":`+jsonString(last)+`}`)
	return []byte(`{"model":"gpt-4o","messages":[` + strings.Join(msgs, ",") + `],"stream":true}`)
}

// messagesCompaction is a Claude Code-like request of n tool steps whose
// last user message carries the last tool result and then last (Claude
// Code compacting in the middle of a tool loop).
func messagesCompaction(n int, last string, extra string) []byte {
	msgs := []string{`{"role":"user","content":[{"type":"text","text":"<system-reminder>CLAUDE.md</system-reminder>"},{"type":"text","text":"Fix TestParseDuration."}]}`}
	for i := 0; i < n; i++ {
		msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"Reading file %d."},{"type":"tool_use","id":"toolu_%d","name":"Read","input":{"file_path":"pkg/file%d.go"}}]}`, i, i, i))
		user := fmt.Sprintf(`{"type":"tool_result","tool_use_id":"toolu_%d","content":%s}`, i, jsonString(toolOutput(i)))
		if i == n-1 && last != "" {
			user += `,{"type":"text","text":` + jsonString(last) + `,"cache_control":{"type":"ephemeral"}}`
		}
		msgs = append(msgs, `{"role":"user","content":[`+user+`]}`)
	}
	return []byte(`{"model":"claude-sonnet-4-5","max_tokens":32000,"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],` +
		`"tools":[{"name":"Read","description":"Read a file","input_schema":{"type":"object"}}],"metadata":{"user_id":"u"},"messages":[` + strings.Join(msgs, ",") + `]` + extra + `,"stream":true}`)
}

// responsesCompaction is a Codex-like request of n turns whose last
// input item is last (raw JSON).
func responsesCompaction(n int, last string) []byte {
	items := []string{
		`{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"Fix TestParseDuration."}]}`,
	}
	for i := 0; i < n; i++ {
		items = append(items,
			fmt.Sprintf(`{"type":"reasoning","id":"rs_%d","summary":[{"type":"summary_text","text":"Reading file %d."}],"encrypted_content":%s}`, i, i, jsonString(fakeupstream.DefaultSigner.Encrypt(fmt.Sprintf("thought %d", i)))),
			fmt.Sprintf(`{"type":"function_call","id":"fc_%d","name":"exec_command","arguments":"{\"cmd\":\"cat pkg/file%d.go\"}","call_id":"call_%d"}`, i, i, i),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"call_%d","output":%s}`, i, jsonString(toolOutput(i))))
	}
	items = append(items, last)
	return []byte(`{"model":"gpt-5-codex","input":[` + strings.Join(items, ",") + `],"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object"}}],` +
		`"reasoning":{"effort":"medium"},"store":false,"stream":true,"include":["reasoning.encrypted_content"],"prompt_cache_key":"pck-1"}`)
}

func userInput(text string) string {
	return `{"type":"message","role":"user","content":[{"type":"input_text","text":` + jsonString(text) + `}]}`
}

// windowEngine condenses above 80% of the given window, extractively.
func windowEngine(window int) *condense.Engine {
	return condense.New(condense.Deps{Counter: tokenizer.New(tokenizer.Options{}), Models: condense.ModelsFunc(func(string) condense.ModelLimits {
		return condense.ModelLimits{Window: window, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
	})}, condense.Options{Summarizer: "extractive", SelectiveEnabled: true})
}

// tokensOf is what the engine counts of body in codec's format.
func tokensOf(t *testing.T, c view.Codec, body []byte) int {
	t.Helper()
	r, err := c.Scan(body, func(string) string { return tokenizer.O200kBase })
	if err != nil {
		t.Fatalf("scanning: %v", err)
	}
	return r.Total
}

// receivedUpstream is what a strict fake received.
type receivedUpstream interface {
	http.Handler
	Received() []fakeupstream.Received
}

// compactionCase is one format's agent compaction request.
type compactionCase struct {
	name, path string
	codec      view.Codec
	upstream   func() receivedUpstream
	body       []byte
	agent      string
	// last returns the raw last message of a body.
	last func(body []byte) string
}

func compactionCases() []compactionCase {
	counter := tokenizer.New(tokenizer.Options{})
	return []compactionCase{
		{name: "chat/roo-code", path: "/v1/chat/completions", codec: chat.New(counter),
			upstream: func() receivedUpstream { return fakeupstream.New() },
			body:     chatCompaction(12, rooCompact), agent: "roo-code",
			last: func(b []byte) string { return gjson.GetBytes(b, "messages.@reverse.0").Raw }},
		{name: "messages/claude-code", path: "/v1/messages", codec: messages.New(counter),
			upstream: func() receivedUpstream { return &fakeupstream.Messages{} },
			body:     messagesCompaction(12, claudeCompact, ""), agent: "claude-code",
			last: func(b []byte) string { return gjson.GetBytes(b, "messages.@reverse.0").Raw }},
		{name: "responses/codex", path: "/v1/responses", codec: responses.New(counter),
			upstream: func() receivedUpstream { return &fakeupstream.Responses{} },
			body:     responsesCompaction(12, userInput(codexCompact)), agent: "codex",
			last: func(b []byte) string { return gjson.GetBytes(b, "input.@reverse.0").Raw }},
	}
}

// send posts body through a proxy in front of up, with the engine's
// window at window tokens and the given mode, and returns the response
// (body read) and what the fake received.
func send(t *testing.T, tc compactionCase, window int, mode string) (*http.Response, []byte, fakeupstream.Received, *harness) {
	t.Helper()
	up := tc.upstream()
	h := newHarness(t, up, func(o *Options) { o.Condenser = windowEngine(window) })
	hdr := map[string]string{"Authorization": "Bearer sk-1", "x-api-key": "sk-ant-1", "anthropic-version": "2023-06-01"}
	if mode != "" {
		hdr[HeaderMode] = mode
	}
	resp := post(t, h.proxy.URL+tc.path, tc.body, hdr)
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := up.Received()
	if len(got) != 1 {
		t.Fatalf("upstream received %d requests", len(got))
	}
	if resp.StatusCode != http.StatusOK || got[0].Status != http.StatusOK {
		t.Fatalf("status %d, upstream %d %s: %s", resp.StatusCode, got[0].Status, got[0].Error, answer)
	}
	return resp, answer, got[0], h
}

// TestAgentCompactionForwardedByteForByte: an agent's own compaction
// request over the threshold but inside the window reaches the strict
// fake with the received body's SHA-256, in every mode and with
// X-Condense-Force, and the log line marks it.
func TestAgentCompactionForwardedByteForByte(t *testing.T) {
	for _, tc := range compactionCases() {
		for _, mode := range []string{"", condense.ModeFull, condense.ModeSelective, condense.ModeTruncate} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				n := tokensOf(t, tc.codec, tc.body)
				window := n * 100 / 90 // over 80% of it, inside it
				resp, _, got, h := send(t, tc, window, mode)
				if sha256.Sum256(got.Body) != sha256.Sum256(tc.body) {
					t.Fatalf("upstream body differs from the agent's (%d vs %d bytes)", len(got.Body), len(tc.body))
				}
				if a := resp.Header.Get(HeaderApplied); a != condense.AppliedNone {
					t.Errorf("applied %q", a)
				}
				if d := resp.Header.Get(HeaderDegraded); d != "" {
					t.Errorf("degraded %q", d)
				}
				if before := resp.Header.Get(HeaderTokensBefore); before == "" || atoi(before) <= window*8/10 {
					t.Errorf("tokens before %s, not over the threshold of %d", before, window*8/10)
				}
				logs := h.waitLog(t, `"agent_compaction"`)
				if !strings.Contains(logs, `"agent_compaction":"`+tc.agent+`"`) {
					t.Errorf("log line does not mark the agent compaction: %s", logs)
				}
			})
		}
	}
}

func atoi(s string) int {
	n := 0
	fmt.Sscan(s, &n)
	return n
}

// TestAgentCompactionOverWindowDigestsOnly: over the window the request is
// condensed with digests of its tool outputs only — no summary, no window
// marker, every message still there, the instruction byte for byte — and
// X-Condense-Degraded says so; the strict fake accepts it.
func TestAgentCompactionOverWindowDigestsOnly(t *testing.T) {
	for _, tc := range compactionCases() {
		t.Run(tc.name, func(t *testing.T) {
			n := tokensOf(t, tc.codec, tc.body)
			window := n * 6 / 10
			resp, _, got, _ := send(t, tc, window, "")
			if a := resp.Header.Get(HeaderApplied); a != condense.AppliedSelective {
				t.Fatalf("applied %q, want selective", a)
			}
			d := resp.Header.Get(HeaderDegraded)
			if !strings.Contains(d, "agent compaction ("+tc.agent+") over the context window") || !strings.Contains(d, "no summaries") {
				t.Errorf("degraded %q", d)
			}
			if after := atoi(resp.Header.Get(HeaderTokensAfter)); after > window || after == 0 {
				t.Errorf("%d tokens forwarded, window %d", after, window)
			}
			fwd := string(got.Body)
			if strings.Contains(fwd, "conversation-summary") || strings.Contains(fwd, "were omitted here") {
				t.Errorf("a summary or a window marker was forwarded")
			}
			if !strings.Contains(fwd, "[condense-proxy digest of ") {
				t.Errorf("no digest forwarded")
			}
			in, out := tc.codec, tc.codec
			ri, _ := in.Scan(tc.body, func(string) string { return tokenizer.O200kBase })
			ro, _ := out.Scan(got.Body, func(string) string { return tokenizer.O200kBase })
			if len(ri.Items) != len(ro.Items) {
				t.Errorf("%d items forwarded of %d", len(ro.Items), len(ri.Items))
			}
			if ro.Compaction != tc.agent {
				t.Errorf("the forwarded request's instruction is lost (%q)", ro.Compaction)
			}
		})
	}
}

// TestCompactionPromptEarlierDoesNotLatch: an instruction in an earlier
// user message, the conversation having gone on, is an ordinary request
// (condensed over the threshold).
func TestCompactionPromptEarlierDoesNotLatch(t *testing.T) {
	body := chatCompaction(12, rooCompact)
	body = bytes.Replace(body, []byte(`],"stream"`), []byte(`,{"role":"assistant","content":"Summary: …"},{"role":"user","content":"Go on."}],"stream"`), 1)
	tc := compactionCases()[0]
	tc.body = body
	n := tokensOf(t, tc.codec, body)
	resp, _, _, h := send(t, tc, n*100/90, "")
	if a := resp.Header.Get(HeaderApplied); a == condense.AppliedNone {
		t.Errorf("not condensed: %s", h.logs.String())
	}
	if strings.Contains(h.waitLog(t, `"applied"`), "agent_compaction") {
		t.Errorf("marked as an agent compaction")
	}
}

// TestCompactionTriggerUntouched: a Responses request whose last item is
// compaction_trigger goes to the upstream untouched, over the threshold or
// the window, and the fake's one compaction item comes back.
func TestCompactionTriggerUntouched(t *testing.T) {
	body := responsesCompaction(12, `{"type":"compaction_trigger"}`)
	for _, tc := range []struct {
		name         string
		percent      int // the window, in percent of the request
		wantDegraded bool
	}{
		{"over the threshold", 110, false},
		{"over the window", 60, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := compactionCases()[2]
			c.body = body
			n := tokensOf(t, c.codec, body)
			resp, answer, got, h := send(t, c, n*tc.percent/100, "")
			if sha256.Sum256(got.Body) != sha256.Sum256(body) {
				t.Fatal("the trigger request was changed")
			}
			if a := resp.Header.Get(HeaderApplied); a != condense.AppliedNone {
				t.Errorf("applied %q", a)
			}
			if d := resp.Header.Get(HeaderDegraded); (d != "") != tc.wantDegraded {
				t.Errorf("degraded %q", d)
			}
			if k := strings.Count(string(answer), `"type":"response.output_item.done"`); k != 1 || !strings.Contains(string(answer), `"type":"compaction"`) {
				t.Errorf("answer has %d output items: %.300s", k, answer)
			}
			if !strings.Contains(h.waitLog(t, "agent_compaction"), `"agent_compaction":"compaction_trigger"`) {
				t.Error("log line does not mark it")
			}
		})
	}
}

// TestResponsesCompactProxied: POST /v1/responses/compact passes through
// untouched and its answer comes back.
func TestResponsesCompactProxied(t *testing.T) {
	up := &fakeupstream.Responses{}
	h := newHarness(t, up, func(o *Options) { o.Condenser = windowEngine(4000) })
	body := []byte(`{"model":"gpt-5-codex","instructions":"You are Codex.","input":[` + userInput("Fix it.") +
		`,{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}],"prompt_cache_key":"pck-1"}`)
	resp := post(t, h.proxy.URL+"/v1/responses/compact", body, map[string]string{"Authorization": "Bearer sk-1"})
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := up.Received()
	if resp.StatusCode != http.StatusOK || len(got) != 1 || got[0].Path != "/v1/responses/compact" || !bytes.Equal(got[0].Body, body) {
		t.Fatalf("status %d, upstream got %+v", resp.StatusCode, got)
	}
	a := gjson.ParseBytes(answer)
	if a.Get("object").Str != "response.compaction" || a.Get("output.#").Int() != 1 || a.Get("output.0.type").Str != "compaction" {
		t.Errorf("answer %s", answer)
	}
	if resp.Header.Get(HeaderApplied) != "" {
		t.Error("the compact endpoint was counted")
	}
}

// TestCompactionBlocksAndItemsSurviveEveryMode: a compaction item
// (Responses) or block (Messages) in a long conversation is forwarded
// byte-identical in every mode, with everything before it; Messages'
// context_management and context_hint pass unchanged, and no
// clear_thinking is added with thinking off.
func TestCompactionBlocksAndItemsSurviveEveryMode(t *testing.T) {
	counter := tokenizer.New(tokenizer.Options{})
	compItem := `{"type":"compaction","id":"cmp_1","encrypted_content":` + jsonString(fakeupstream.DefaultSigner.Encrypt("earlier work")) + `}`
	respBody := responsesCompaction(30, userInput("Go on."))
	// The compaction item right after the task.
	first := bytes.Index(respBody, []byte(`{"type":"reasoning"`))
	respBody = append(append(append([]byte{}, respBody[:first]...), compItem+","...), respBody[first:]...)

	compBlock := `{"type":"compaction","content":"Summary of the earlier work: tests in pkg/timeparse fail.","signature":"c2lnbmF0dXJl"}`
	ctx := `,"context_management":{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":30000}}]},"context_hint":{"type":"auto"}`
	msgBody := messagesCompaction(30, "", ctx)
	at := bytes.Index(msgBody, []byte(`{"role":"assistant"`))
	msgBody = append(append(append([]byte{}, msgBody[:at]...), `{"role":"assistant","content":[`+compBlock+`,{"type":"text","text":"Resuming."}]},{"role":"user","content":"Continue."},`...), msgBody[at:]...)

	cases := []struct {
		name, path string
		codec      view.Codec
		up         func() receivedUpstream
		body       []byte
		keep       []string
	}{
		{"responses", "/v1/responses", responses.New(counter), func() receivedUpstream { return &fakeupstream.Responses{} }, respBody, []string{compItem}},
		{"messages", "/v1/messages", messages.New(counter), func() receivedUpstream { return &fakeupstream.Messages{} }, msgBody,
			[]string{compBlock, `"context_management":{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":30000}}]}`, `"context_hint":{"type":"auto"}`}},
	}
	for _, tc := range cases {
		for _, mode := range []string{condense.ModeAuto, condense.ModeFull, condense.ModeSelective, condense.ModeTruncate} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				n := tokensOf(t, tc.codec, tc.body)
				c := compactionCase{name: tc.name, path: tc.path, codec: tc.codec, upstream: tc.up, body: tc.body}
				resp, _, got, _ := send(t, c, n*60/100, mode)
				if resp.Header.Get(HeaderApplied) == condense.AppliedNone {
					t.Fatalf("not condensed")
				}
				fwd := string(got.Body)
				for _, k := range tc.keep {
					if strings.Count(fwd, k) != 1 {
						t.Errorf("%.60s… not forwarded byte-identical", k)
					}
				}
				// Everything up to the compaction (included) is kept.
				end := strings.Index(string(tc.body), tc.keep[0]) + len(tc.keep[0])
				if !strings.HasPrefix(fwd, string(tc.body[:end])) {
					t.Error("what precedes the compaction changed")
				}
				if strings.Contains(fwd, "clear_thinking") {
					t.Error("clear_thinking added with thinking off")
				}
			})
		}
	}
}

// TestStripContextManagement: with the option, context_management and its
// beta are removed (other betas and bytes kept); without it, both pass.
func TestStripContextManagement(t *testing.T) {
	ctx := `,"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]}`
	body := messagesCompaction(2, "", ctx)
	for _, tc := range []struct {
		name  string
		strip bool
	}{{"off", false}, {"on", true}} {
		t.Run(tc.name, func(t *testing.T) {
			up := &anthropicUpstream{}
			h := newHarness(t, up, func(o *Options) { o.StripContextManagement = tc.strip })
			resp := post(t, h.proxy.URL+"/v1/messages?beta=true", body, map[string]string{
				"x-api-key": "sk-ant-1", "anthropic-beta": "claude-code-20250219,context-management-2025-06-27,prompt-caching-scope-2026-01-05"})
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			got := up.received()
			if len(got) != 1 {
				t.Fatalf("upstream got %d requests", len(got))
			}
			beta := got[0].header.Get("anthropic-beta")
			if !tc.strip {
				if !bytes.Equal(got[0].body, body) || beta != "claude-code-20250219,context-management-2025-06-27,prompt-caching-scope-2026-01-05" {
					t.Errorf("changed without the option: beta %q", beta)
				}
				return
			}
			if gjson.GetBytes(got[0].body, "context_management").Exists() || !gjson.ValidBytes(got[0].body) {
				t.Errorf("context_management forwarded: %.200s", got[0].body)
			}
			want := strings.Replace(string(body), ctx, "", 1)
			if string(got[0].body) != want {
				t.Error("other bytes changed")
			}
			if beta != "claude-code-20250219,prompt-caching-scope-2026-01-05" {
				t.Errorf("anthropic-beta %q", beta)
			}
		})
	}
}
