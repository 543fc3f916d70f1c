package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// marked lists, in document order, the raw JSON of every object of body
// carrying key (a prompt-cache breakpoint: cache_control,
// prompt_cache_breakpoint) as a field of its own, the top level left out.
func marked(body []byte, key string) []string {
	var out []string
	var walk func(v gjson.Result, top bool)
	walk = func(v gjson.Result, top bool) {
		if v.IsObject() && !top && v.Get(key).Exists() {
			out = append(out, v.Raw)
		}
		if v.IsObject() || v.IsArray() {
			v.ForEach(func(_, c gjson.Result) bool {
				walk(c, false)
				return true
			})
		}
	}
	walk(gjson.ParseBytes(body), true)
	return out
}

// checkBreakpoints fails unless the breakpoints forwarded are breakpoints
// sent, in the same order, none twice (a breakpoint of a block cut by
// the window goes with it), and those the kept blocks of want carry are
// all there.
func checkBreakpoints(t *testing.T, key string, sent, fwd []byte, want ...string) {
	t.Helper()
	s, f := marked(sent, key), marked(fwd, key)
	i := 0
	for _, m := range f {
		for i < len(s) && s[i] != m {
			i++
		}
		if i == len(s) {
			t.Errorf("%s: a breakpoint forwarded was not sent there (added, moved or duplicated): %.200s", key, m)
			return
		}
		i++
	}
	for _, w := range want {
		if strings.Count(strings.Join(f, "\n"), w) != 1 {
			t.Errorf("%s: the kept breakpoint %q is not forwarded once", key, w)
		}
	}
}

// chatCacheBody is a chat request of n tool steps whose system message
// and last user message carry GPT-5.6's prompt_cache_breakpoint, with
// prompt_cache_key and prompt_cache_options at the top level.
func chatCacheBody(n int) []byte {
	msgs := []string{
		`{"role":"system","content":[{"type":"text","text":"You are a coding agent.","prompt_cache_breakpoint":{"mode":"explicit"}}]}`,
		`{"role":"user","content":"Fix TestParseDuration."}`,
	}
	for i := 0; i < n; i++ {
		var out strings.Builder
		for l := 0; l < 120; l++ {
			fmt.Fprintf(&out, "\tv%d := compute(%d, %d) // pkg/file%d.go\n", l, i, l*7919%1000, i)
		}
		o, _ := json.Marshal(out.String())
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","content":"Reading file %d.","tool_calls":[{"id":"call_%d","type":"function","function":{"name":"read","arguments":"{\"path\":\"pkg/file%d.go\"}"}}]}`, i, i, i),
			fmt.Sprintf(`{"role":"tool","tool_call_id":"call_%d","content":%s}`, i, o))
	}
	msgs = append(msgs, `{"role":"user","content":[{"type":"text","text":"Now run the tests.","prompt_cache_breakpoint":{"mode":"explicit"}}]}`)
	return []byte(`{"model":"gpt-5.6","messages":[` + strings.Join(msgs, ",") + `],"prompt_cache_key":"pck-chat-7",` +
		`"prompt_cache_options":{"mode":"explicit","ttl":"30m"},"stream":false}`)
}

// TestPromptCacheFieldsPassThrough: a request over the threshold,
// really condensed in each mode, reaches the upstream with its
// prompt_cache_key and prompt_cache_options as sent (chat and Responses),
// and a client's breakpoints on the blocks kept — GPT-5.6's
// prompt_cache_breakpoint, Anthropic's cache_control (a Messages
// request's top-level cache_control as sent) — neither moved nor
// duplicated.
func TestPromptCacheFieldsPassThrough(t *testing.T) {
	const bp = `"prompt_cache_breakpoint":{"mode":"explicit"}`
	resp := string(responsesBody(40, `,"prompt_cache_options":{"mode":"explicit","ttl":"30m"}`))
	resp = strings.Replace(resp, `"text":"You are Codex."}`, `"text":"You are Codex.",`+bp+`}`, 1)
	resp = strings.Replace(resp, `],"tools":`,
		`,{"type":"message","role":"user","content":[{"type":"input_text","text":"Now run the tests.",`+bp+`}]}],"tools":`, 1)
	// Claude Code's breakpoints: on the system prompt, on the last
	// message's last block, and automatic caching's at the top level.
	msg := string(messagesBody(40))
	msg = strings.Replace(msg, `"stream":true}`, `"stream":true,"cache_control":{"type":"ephemeral"}}`, 1)
	end := strings.LastIndex(msg, `}]}],"stream"`)
	msg = msg[:end] + `,"cache_control":{"type":"ephemeral"}` + msg[end:]

	cases := []struct {
		name, path string
		body       []byte
		top        []string // top-level fields that must arrive as sent
		key        string   // the breakpoint's field
		kept       []string // text of the kept blocks carrying one
	}{
		{"chat", "/v1/chat/completions", chatCacheBody(40), []string{"prompt_cache_key", "prompt_cache_options"},
			"prompt_cache_breakpoint", []string{"You are a coding agent.", "Now run the tests."}},
		{"responses", "/v1/responses", []byte(resp), []string{"prompt_cache_key", "prompt_cache_options"},
			"prompt_cache_breakpoint", []string{"You are Codex.", "Now run the tests."}},
		{"messages", "/v1/messages", []byte(msg), []string{"cache_control", "system"},
			"cache_control", []string{"You are Claude Code.", `"tool_use_id":"toolu_39"`}},
	}
	for _, tc := range cases {
		for _, mode := range []string{"auto", "full", "selective", "truncate"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				up := &anthropicUpstream{} // records what it gets, whatever the format
				h := newHarness(t, up, func(o *Options) { o.Condenser = smallWindowEngine() })
				r := post(t, h.proxy.URL+tc.path, tc.body, map[string]string{"X-Condense-Mode": mode, "Authorization": "Bearer k"})
				io.Copy(io.Discard, r.Body)
				r.Body.Close()
				got := up.received()
				if a := r.Header.Get(HeaderApplied); a == "" || a == "none" || len(got) != 1 {
					t.Fatalf("not condensed: applied %q (%s), %d forwarded", a, r.Header.Get(HeaderDegraded), len(got))
				}
				fwd := got[0].body
				if len(fwd) >= len(tc.body) {
					t.Fatalf("not smaller: %d bytes of %d", len(fwd), len(tc.body))
				}
				for _, f := range tc.top {
					s, g := gjson.GetBytes(tc.body, f), gjson.GetBytes(fwd, f)
					if !s.Exists() || g.Raw != s.Raw {
						t.Errorf("%s: sent %s, forwarded %s", f, s.Raw, g.Raw)
					}
				}
				checkBreakpoints(t, tc.key, tc.body, fwd, tc.kept...)
			})
		}
	}
}
