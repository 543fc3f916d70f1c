package condense

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestNewestStepsOwnTextNeverDigested: a request over the window whose
// newest steps are large because of the user's own prompt, or of the
// assistant's own text, is forwarded with those texts verbatim: the
// shrinking of the newest steps digests tool outputs only, never a
// message's own text (a digest of a user prompt names no tool). When the
// request cannot fit without digesting them, it is forwarded by the
// window's last resort — never with a stub in place of the text.
func TestNewestStepsOwnTextNeverDigested(t *testing.T) {
	words := func(tag string, n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "%s%d please keep this sentence as written. ", tag, i)
		}
		return b.String()
	}
	history := func(steps int) []map[string]any {
		msgs := []map[string]any{{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix the bug."}}
		for i := 0; i < steps; i++ {
			id := fmt.Sprintf("call_%d", i)
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": fmt.Sprintf("Step %d.", i), "tool_calls": []map[string]any{{"id": id, "type": "function",
					"function": map[string]any{"name": "bash", "arguments": `{"command":"cat log.txt"}`}}}},
				map[string]any{"role": "tool", "tool_call_id": id, "content": words(fmt.Sprintf("out%d-", i), 60)})
		}
		return msgs
	}
	prompt := words("prompt", 500)    // ~5,000 tokens
	assistant := words("answer", 500) // ~5,000 tokens
	big := words("big", 800)          // ~8,000 tokens: over the target alone, within the window
	cases := map[string][]map[string]any{
		"big user prompt": append(history(30), map[string]any{"role": "user", "content": big}),
		"big assistant text": append(history(30),
			map[string]any{"role": "assistant", "content": big},
			map[string]any{"role": "user", "content": "Go on."}),
		"user prompt": append(history(30), map[string]any{"role": "user", "content": prompt}),
		"assistant text": append(history(30),
			map[string]any{"role": "assistant", "content": assistant},
			map[string]any{"role": "user", "content": "Go on."}),
		"both": append(history(30),
			map[string]any{"role": "assistant", "content": assistant},
			map[string]any{"role": "user", "content": prompt}),
	}
	for name, msgs := range cases {
		for _, mode := range []string{ModeAuto, ModeTruncate, ModeSelective, ModeFull} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				b := body(t, msgs)
				e := newEngine(12000, nil, Options{SelectiveEnabled: true, Summarizer: "extractive"})
				res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "s", Mode: mode})
				if err != nil {
					t.Fatal(err)
				}
				if res.Report.TokensBefore <= res.Report.Trigger {
					t.Fatalf("not over the threshold: %d tokens, trigger %d", res.Report.TokensBefore, res.Report.Trigger)
				}
				validate(t, res.Body)
				out := gjson.GetBytes(res.Body, "messages")
				texts := map[string]bool{}
				out.ForEach(func(_, m gjson.Result) bool {
					texts[m.Get("content").String()] = true
					return true
				})
				for _, m := range msgs[len(msgs)-2:] {
					if s, _ := m["content"].(string); m["role"] != "tool" && len(s) > 1000 && !texts[s] {
						t.Errorf("the %s's own text (%d bytes) was not forwarded verbatim (applied %s: %s; %s)", m["role"], len(s), res.Report.Applied, res.Report.Reason, res.Report.Degraded)
					}
				}
				for _, c := range res.Report.Changes {
					if c.Kind == ChangeDigest && c.Tool == "" {
						t.Errorf("a digest naming no tool replaced item %d: %.120q", c.From, c.Text)
					}
				}
				if strings.Contains(string(res.Body), "digest of  —") {
					t.Errorf("the forwarded body holds a digest naming no tool")
				}
			})
		}
	}
}

// TestOwnTextOverTheWindowForwardedAsReceived: when the user's last prompt
// alone is over the window, nothing may shrink it (its own text is never
// digested): the request is forwarded as received, the report saying it
// is too large for the context window and forwarded unchanged (the
// window's last resort), and the upstream
// answers what it would have without the proxy.
func TestOwnTextOverTheWindowForwardedAsReceived(t *testing.T) {
	msgs := []map[string]any{{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix the bug."}}
	for i := 0; i < 10; i++ {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": "Looking.", "tool_calls": []map[string]any{{"id": id, "type": "function",
				"function": map[string]any{"name": "bash", "arguments": `{"command":"cat log.txt"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": strings.Repeat(fmt.Sprintf("line %d of the log\n", i), 200)})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": strings.Repeat("Here is my very long prompt, word for word. ", 2000)})
	b := body(t, msgs)
	for _, mode := range []string{ModeAuto, ModeTruncate, ModeSelective, ModeFull} {
		t.Run(mode, func(t *testing.T) {
			e := newEngine(12000, nil, Options{SelectiveEnabled: true, Summarizer: "extractive"})
			res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "s", Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(res.Body, b) {
				t.Errorf("forwarded %d bytes of %d received (applied %s: %s)", len(res.Body), len(b), res.Report.Applied, res.Report.Reason)
			}
			if !res.Report.DegradedBy(DegradedTooLarge) || !res.Report.Took(PathForwardedUnchanged) {
				t.Errorf("degraded %q, reason %q", res.Report.Degraded, res.Report.Reason)
			}
		})
	}
}
