package messages

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/internal/fakeupstream/fakesign"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

var sharedCounter = tokenizer.New(tokenizer.Options{})

// fable binds thinking, as the registry says of Claude Fable.
var fable = BindsThinking(func(model string) bool { return strings.Contains(model, "claude-fable") })

func o200k(string) string { return tokenizer.O200kBase }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// claudeSession builds a Claude Code-like conversation: the task, then
// turns of an assistant message (a signed thinking block when thinking,
// a sentence, a Read or Bash tool_use) and the user message answering it
// (a tool_result with a large output, a system reminder after it now and
// then). The last user message carries Claude Code's cache_control marker.
func claudeSession(seed int64, turns int, thinking bool) []string {
	rng := rand.New(rand.NewSource(seed))
	msgs := []string{mustJSON(map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "<system-reminder>CLAUDE.md: use go test ./...</system-reminder>"},
		map[string]any{"type": "text", "text": fmt.Sprintf("Fix the failing tests in package store (session %d).", seed)},
	}})}
	for i := 0; i < turns; i++ {
		id := fmt.Sprintf("toolu_%d_%03d", seed, i)
		var blocks []any
		if thinking {
			th := fmt.Sprintf("Step %d: I should look at file%d.go next.", i, i)
			blocks = append(blocks, map[string]any{"type": "thinking", "thinking": th, "signature": fakesign.Default.SignThinking(th)})
		}
		blocks = append(blocks, map[string]any{"type": "text", "text": fmt.Sprintf("Reading file%d.go.", i)})
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": id, "name": "Read", "input": map[string]any{"file_path": fmt.Sprintf("/src/file%d.go", i)}})
		msgs = append(msgs, mustJSON(map[string]any{"role": "assistant", "content": blocks}))
		var out strings.Builder
		for l := 0; l < 80+rng.Intn(120); l++ {
			fmt.Fprintf(&out, "%4d\t\tv%d_%d := compute(x*%d, %d) // line of file %d\n", l+1, i, l, rng.Intn(100), rng.Intn(1000), i)
		}
		if i%7 == 3 {
			out.WriteString("store_test.go:42: got 3 want 4\nFAIL\n")
		}
		user := []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": out.String()}}
		if i%5 == 4 {
			user = append(user, map[string]any{"type": "text", "text": "<system-reminder>The todo list is empty.</system-reminder>"})
		}
		msgs = append(msgs, mustJSON(map[string]any{"role": "user", "content": user}))
	}
	return msgs
}

// body wraps messages in a Claude Code-like request: system blocks with a
// cache marker, tools, thinking when asked, metadata; the last block of
// the last message carries a cache marker too.
func body(msgs []string, model string, thinking bool) []byte {
	last := msgs[len(msgs)-1]
	if n := gjson.Get(last, "content.#").Int(); n > 0 {
		var m map[string]any
		json.Unmarshal([]byte(last), &m)
		bs := m["content"].([]any)
		bs[n-1].(map[string]any)["cache_control"] = map[string]any{"type": "ephemeral"}
		last = mustJSON(m)
	}
	all := append(append([]string(nil), msgs[:len(msgs)-1]...), last)
	var b strings.Builder
	fmt.Fprintf(&b, `{"model":%q,"max_tokens":32000,"system":[{"type":"text","text":"You are Claude Code, Anthropic's official CLI for Claude."},{"type":"text","text":"Be precise.","cache_control":{"type":"ephemeral"}}],`, model)
	b.WriteString(`"tools":[{"name":"Read","description":"Read a file","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}}}},{"name":"Bash","description":"Run a command","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}],`)
	if thinking {
		b.WriteString(`"thinking":{"type":"enabled","budget_tokens":16000},`)
	}
	b.WriteString(`"metadata":{"user_id":"user_abc_account_x_session_y"},"context_management":{"edits":[]},"messages":[`)
	b.WriteString(strings.Join(all, ","))
	b.WriteString(`],"stream":true}`)
	return []byte(b.String())
}

func scanParse(t *testing.T, c *Codec, b []byte) *view.Request {
	t.Helper()
	r, err := c.Scan(b, o200k)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Parse(r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestScanNotARequest(t *testing.T) {
	c := New(sharedCounter)
	for _, b := range []string{
		`not json`, `[1,2]`, `{"model":"claude-sonnet-4-5"}`, `{"messages":"hi"}`, `{"messages":[]}`,
		`{"m\u0065ssages":[{"role":"user","content":"x"}],"messages":[]}`,
		`{"messages":[{"role":"user","content":"x"}],"messages":"y"}`,
	} {
		if _, err := c.Scan([]byte(b), o200k); !errors.Is(err, view.ErrNotRequest) {
			t.Errorf("%s: err %v, want ErrNotRequest", b, err)
		}
	}
	many := New(tokenizer.New(tokenizer.Options{MaxMessages: 2}))
	if _, err := many.Scan([]byte(`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}`), o200k); !errors.Is(err, view.ErrTooManyItems) {
		t.Errorf("over the item limit: err %v", err)
	}
}

// TestScanCounts: system, tools and messages all count; the task is the
// head; a tool_result turn first is no head.
func TestScanCounts(t *testing.T) {
	c := New(sharedCounter)
	b := body(claudeSession(1, 3, true), "claude-sonnet-4-5", true)
	r, err := c.Scan(b, o200k)
	if err != nil {
		t.Fatal(err)
	}
	items := 0
	for _, it := range r.Items {
		items += it.Tokens
	}
	if r.Model != "claude-sonnet-4-5" || r.Head != 1 || len(r.Items) != 7 {
		t.Fatalf("model %q head %d items %d", r.Model, r.Head, len(r.Items))
	}
	// The tools bring the tool-use system prompt; the system prompt counts.
	if r.Total < items+toolUseSystemPrompt+10 {
		t.Errorf("total %d, items %d: system and tools not counted", r.Total, items)
	}
	noTools, _ := c.Scan([]byte(strings.Replace(string(b), `"tools":[`, `"tool_list":[`, 1)), o200k)
	if r.Total-noTools.Total < toolUseSystemPrompt {
		t.Errorf("tools add %d tokens, want at least %d", r.Total-noTools.Total, toolUseSystemPrompt)
	}
	r2, _ := c.Scan([]byte(`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"y"}]}]}`), o200k)
	if r2.Head != 0 {
		t.Errorf("a tool_result turn is the head")
	}
}

// TestParseSteps: an assistant message's tool_use blocks are its calls;
// the next user message's tool_results answer them and are glued; each
// result's content is a digestible output; thinking freezes the assistant
// message.
func TestParseSteps(t *testing.T) {
	c := New(sharedCounter)
	b := body(claudeSession(2, 6, true), "claude-sonnet-4-5", true)
	r := scanParse(t, c, b)
	if !gjson.GetBytes(b, "messages.12.content.0.cache_control").Exists() {
		t.Fatal("the session's last tool_result should carry the marker")
	}
	for i := 1; i < len(r.Items); i += 2 {
		a, u := r.Items[i], r.Items[i+1]
		if a.Role != view.RoleAssistant || len(a.Calls) != 1 || !a.Frozen || a.Glue {
			t.Fatalf("item %d: %+v", i, a)
		}
		if u.Role != view.RoleUser || !u.Glue || len(u.Answers) != 1 || u.Answers[0] != a.Calls[0].ID || len(u.Outputs) != 1 {
			t.Fatalf("item %d: %+v", i+1, u)
		}
		o := u.Outputs[0]
		v := string(b[o.Start+o.Value[0] : o.Start+o.Value[1]])
		want := gjson.GetBytes(b, fmt.Sprintf("messages.%d.content.0.content", i+1)).Raw
		if !o.Frozen && v != want {
			t.Fatalf("item %d: output value %.40q, want %.40q", i+1, v, want)
		}
		marked := gjson.GetBytes(b, fmt.Sprintf("messages.%d.content.0.cache_control", i+1)).Exists()
		if marked != o.Frozen {
			t.Errorf("item %d: tool_result with cache_control %v frozen %v", i+1, marked, o.Frozen)
		}
	}
	if it := r.Items[0]; len(it.Outputs) != 1 || !it.Outputs[0].Own {
		t.Errorf("the task's text is not an Own output: %+v", it)
	}
}

// TestParseRefuses: what the API refuses is ErrInvalid, so the request
// goes upstream as received.
func TestParseRefuses(t *testing.T) {
	c := New(sharedCounter)
	for name, msgs := range map[string]string{
		"tool role":              `{"role":"user","content":"a"},{"role":"tool","content":"b"}`,
		"system message image":   `{"role":"user","content":"a"},{"role":"system","content":[{"type":"image","source":{}}]}`,
		"tool_result after text": `{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{}}]},{"role":"user","content":[{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"t","content":"y"}]}`,
		"tool_use without id":    `{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","name":"n","input":{}}]}`,
		"content a number":       `{"role":"user","content":7}`,
		"block not an object":    `{"role":"user","content":["x"]}`,
	} {
		r, err := c.Scan([]byte(`{"messages":[`+msgs+`]}`), o200k)
		if err != nil {
			t.Fatalf("%s: scan %v", name, err)
		}
		if err := c.Parse(r); !errors.Is(err, view.ErrInvalid) {
			t.Errorf("%s: parse %v, want ErrInvalid", name, err)
		}
	}
}

// TestFrozenOutputs: a tool_result holding an image, a marker inside its
// content, or its own marker is never digested; one of text blocks is.
func TestFrozenOutputs(t *testing.T) {
	c := New(sharedCounter)
	for _, tc := range []struct {
		content string
		frozen  bool
	}{
		{`"text"`, false},
		{`[{"type":"text","text":"a"},{"type":"text","text":"b"}]`, false},
		{`[{"type":"text","text":"a"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"QQ=="}}]`, true},
		{`[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]`, true},
	} {
		b := `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":` + tc.content + `}]}]}`
		r := scanParse(t, c, []byte(b))
		if o := r.Items[2].Outputs[0]; o.Frozen != tc.frozen {
			t.Errorf("%s: frozen %v, want %v", tc.content, o.Frozen, tc.frozen)
		}
	}
}

// TestNoteAndSplice: a note is a user message of one text block; a splice
// keeps every byte outside the messages array and the kept messages.
func TestNoteAndSplice(t *testing.T) {
	c := New(sharedCounter)
	b := body(claudeSession(3, 6, true), "claude-sonnet-4-5", true)
	r := scanParse(t, c, b)
	note := c.Note(`summary with "quotes"`)
	if g := gjson.ParseBytes(note); g.Get("role").Str != "user" || g.Get("content.0.type").Str != "text" || g.Get("content.0.text").Str != `summary with "quotes"` {
		t.Fatalf("note %s", note)
	}
	out, err := c.Splice(r, view.Edit{From: 1, To: 5, Insert: [][]byte{note}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), string(b[:r.Array[0]])) || !strings.HasSuffix(string(out), string(b[r.Array[1]:])) {
		t.Error("bytes outside the messages array changed")
	}
	got := gjson.GetBytes(out, "messages").Array()
	if len(got) != len(r.Items)-4+1 || got[0].Raw != r.Raw(0) || got[1].Raw != string(note) || got[2].Raw != r.Raw(5) {
		t.Errorf("spliced messages wrong: %d", len(got))
	}
}

// TestTextOfAStep: transcripts carry text, calls and results, not the
// thinking.
func TestTextOfAStep(t *testing.T) {
	c := New(sharedCounter)
	r := scanParse(t, c, body(claudeSession(4, 2, true), "claude-sonnet-4-5", true))
	a := c.Text(r, 1)
	if a.Text != "Reading file0.go." || len(a.Calls) != 1 || a.Calls[0].Name != "Read" || strings.Contains(a.Text, "Step 0") {
		t.Errorf("assistant text %+v", a)
	}
	u := c.Text(r, 2)
	if len(u.Results) != 1 || !strings.Contains(u.Results[0].Text, "v0_0 := compute") {
		t.Errorf("user text %+v", u)
	}
}

// TestFinishDropBlock: for a model binding thinking to its prefix, a
// condensed request keeping a thinking block after a change asks the API
// to drop stale blocks (with its beta); never for other models, never when
// nothing changed before a kept thinking block, never over the caller's
// own choice.
func TestFinishDropBlock(t *testing.T) {
	c := New(sharedCounter, fable)
	condensed := func(model string, thinking bool) (*view.Request, []byte) {
		b := body(claudeSession(5, 6, thinking), model, thinking)
		r := scanParse(t, c, b)
		out, err := c.Splice(r, view.Edit{From: 1, To: 5, Insert: [][]byte{c.Note("summary")}})
		if err != nil {
			t.Fatal(err)
		}
		return r, out
	}
	r, out := condensed("claude-fable-5-1", true)
	got, headers, err := c.Finish(r, out)
	if err != nil {
		t.Fatal(err)
	}
	if gjson.GetBytes(got, "thinking.block_binding.prefix_mismatch_behavior").Str != "drop_block" || gjson.GetBytes(got, "thinking.budget_tokens").Int() != 16000 {
		t.Errorf("thinking %s", gjson.GetBytes(got, "thinking").Raw)
	}
	if len(headers) != 1 || headers[0].Value != BindingBeta {
		t.Errorf("headers %v", headers)
	}
	if !gjson.ValidBytes(got) || len(got) != len(out)+len(`"block_binding":{"prefix_mismatch_behavior":"drop_block"},`) {
		t.Errorf("body changed beyond the thinking settings")
	}

	r, out = condensed("claude-sonnet-4-5", true)
	if got, headers, _ := c.Finish(r, out); string(got) != string(out) || headers != nil {
		t.Error("a model that does not bind thinking got block_binding")
	}
	r, out = condensed("claude-fable-5-1", false)
	if got, headers, _ := c.Finish(r, out); string(got) != string(out) || headers != nil {
		t.Error("a request without thinking blocks got block_binding")
	}
	// Only the last messages changed (a digest in the newest step): no
	// thinking block after the change.
	b := body(claudeSession(6, 4, true), "claude-fable-5-1", true)
	r = scanParse(t, c, b)
	last := len(r.Items) - 1
	o := r.Items[last].Outputs[0]
	out = append(append(append([]byte(nil), b[:o.Start+o.Value[0]]...), `"digest"`...), b[o.Start+o.Value[1]:]...)
	if got, headers, _ := c.Finish(r, out); string(got) != string(out) || headers != nil {
		t.Error("block_binding set with no thinking block after the change")
	}
	// The caller's own choice stands.
	b = []byte(strings.Replace(string(body(claudeSession(7, 6, true), "claude-fable-5-1", true)), `"budget_tokens":16000`, `"budget_tokens":16000,"block_binding":{"prefix_mismatch_behavior":"error"}`, 1))
	r = scanParse(t, c, b)
	out, _ = c.Splice(r, view.Edit{From: 1, To: 5, Insert: [][]byte{c.Note("summary")}})
	if got, headers, _ := c.Finish(r, out); string(got) != string(out) || headers != nil {
		t.Error("the caller's block_binding was overridden")
	}
}
