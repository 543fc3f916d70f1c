package corpus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/testenv"
)

// sharedCorpus returns the shared corpus folder; it skips the test when
// the folder is absent, or fails it in CI (testenv.InCI).
func sharedCorpus(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "corpus", "raw")
	if _, err := os.Stat(dir); err != nil {
		if testenv.InCI() {
			t.Fatalf("in CI and the shared corpus is absent: %v", err)
		}
		t.Skip("shared corpus absent")
	}
	return dir
}

func TestClaudeMessagesFixture(t *testing.T) {
	s, err := LoadMessages(filepath.Join("..", "..", "testdata", "corpus", "claude-native.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Model != "claude-opus-4-20250514" || s.Turns() != 4 {
		t.Fatalf("model %q, %d turns", s.Model, s.Turns())
	}
	for k := range s.Turns() {
		body, _ := s.Request(k)
		if err := fakeupstream.ValidateMessages(body, fakeupstream.Signer{}, false); err != nil {
			t.Fatalf("request %d rejected: %v\n%s", k, err, body)
		}
	}
	body, _ := s.Request(3)
	msgs := gjson.GetBytes(body, "messages").Array()
	roles := ""
	for _, m := range msgs {
		roles += m.Get("role").String()[:1]
	}
	// user, answer (thinking + Read), result, answer (redacted + Bash),
	// [synthetic result, interruption, new prompt], answer (cmake), result.
	if roles != "uauauau" {
		t.Fatalf("roles %s", roles)
	}
	first := msgs[1].Get("content.0")
	if first.Get("type").String() != "thinking" || !fakeupstream.DefaultSigner.VerifyThinking(first.Get("thinking").String(), first.Get("signature").String()) {
		t.Errorf("thinking not re-signed: %s", first.Raw)
	}
	if c := msgs[2].Get("content.0.content.1.type").String(); c != "image" {
		t.Errorf("image in the tool result lost: %s", msgs[2].Raw)
	}
	if msgs[3].Get("content.0.type").String() != "redacted_thinking" {
		t.Errorf("redacted thinking lost: %s", msgs[3].Raw)
	}
	u := msgs[4].Get("content").Array()
	if len(u) != 3 || u[0].Get("tool_use_id").String() != "toolu_2" || !u[0].Get("is_error").Bool() ||
		u[1].Get("text").String() != "[Request interrupted by user for tool use]" || u[2].Get("text").String() != "Use cmake instead" {
		t.Errorf("interrupted call not repaired: %s", msgs[4].Raw)
	}
	if len(msgs[5].Get("content").Array()) != 1 {
		t.Errorf("empty text block kept: %s", msgs[5].Raw)
	}
	if !msgs[6].Get("content.0.is_error").Bool() || msgs[6].Get("content.0.cache_control.type").String() != "ephemeral" {
		t.Errorf("last message: %s", msgs[6].Raw)
	}
	// Thinking: on where the answer starts with thinking and the loop allows.
	for k, want := range []bool{true, true, false, false} {
		b, _ := s.Request(k)
		if got := gjson.GetBytes(b, "thinking").Exists(); got != want {
			t.Errorf("request %d thinking %v, want %v", k, got, want)
		}
	}
	// The first request keeps the prompt as recorded but for the marker.
	b0, _ := s.Request(0)
	if m := gjson.GetBytes(b0, "messages.0.content.0"); m.Get("text").String() != "Find the bug" || !m.Get("cache_control").Exists() {
		t.Errorf("first request: %s", b0)
	}
	if n := strings.Count(string(b0), "cache_control"); n != 3 {
		t.Errorf("%d cache markers", n)
	}
	if tools := gjson.GetBytes(body, "tools.#.name").String(); tools != `["Read","Bash"]` {
		t.Errorf("tools %s", tools)
	}
}

func TestClaudeMessagesKeepsStrings(t *testing.T) {
	s, err := LoadMessages(filepath.Join("..", "..", "testdata", "corpus", "claude.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	last, _ := s.Request(s.Turns() - 1)
	msgs := gjson.GetBytes(last, "messages").Array()
	if msgs[0].Get("content").Type != gjson.String {
		t.Errorf("string content not kept: %s", msgs[0].Raw)
	}
	// Results in two lines merged into one message, the orphan dropped.
	if ids := msgs[2].Get("content.#.tool_use_id").String(); ids != `["toolu_2","toolu_1"]` {
		t.Errorf("results %s", ids)
	}
	if err := fakeupstream.ValidateMessages(last, fakeupstream.Signer{}, false); err != nil {
		t.Error(err)
	}
}

// TestSharedCorpusNativeForms converts every shared-corpus session to its
// native forms (Responses and Gemini; Messages for Claude Code's) and has the strict fakes check every request unmodified.
func TestSharedCorpusNativeForms(t *testing.T) {
	dir := sharedCorpus(t)
	files, err := Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d corpus files", len(files))
	}
	claude := 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			r := Responses(s)
			if r.Turns() < 5 {
				t.Errorf("only %d Responses requests", r.Turns())
			}
			reasoning := 0
			for k := range r.Turns() {
				body, _ := r.Request(k)
				if err := fakeupstream.ValidateResponses(body, fakeupstream.Signer{}); err != nil {
					t.Fatalf("Responses request %d rejected: %v", k, err)
				}
				if k == r.Turns()-1 {
					reasoning = strings.Count(string(body), `"type":"reasoning"`)
				}
			}
			withReasoning := 0
			for _, m := range s.Messages {
				if m.Reasoning != "" {
					withReasoning++
				}
			}
			if reasoning == 0 && withReasoning > 0 {
				t.Errorf("%d reasoning messages, no reasoning item", withReasoning)
			}
			gm := Gemini(s)
			if gm.Turns() < 5 {
				t.Errorf("only %d Gemini requests", gm.Turns())
			}
			for k := range gm.Turns() {
				body, _ := gm.Request(k)
				if err := fakeupstream.ValidateGemini(body, fakeupstream.Signer{}); err != nil {
					t.Fatalf("Gemini request %d rejected: %v", k, err)
				}
			}
			t.Logf("%d Gemini requests (%d Responses requests)", gm.Turns(), r.Turns())
			if !strings.HasSuffix(f, ".jsonl") {
				return
			}
			claude++
			m, err := LoadMessages(f)
			if err != nil {
				t.Fatal(err)
			}
			if m.Turns() < 5 {
				t.Errorf("only %d Messages requests", m.Turns())
			}
			for k := range m.Turns() {
				body, _ := m.Request(k)
				if err := fakeupstream.ValidateMessages(body, fakeupstream.Signer{}, false); err != nil {
					t.Fatalf("Messages request %d rejected: %v", k, err)
				}
			}
			t.Logf("%d Messages requests (%d messages), %d Responses requests, %d reasoning items", m.Turns(), m.Len(), r.Turns(), reasoning)
		})
	}
	if claude == 0 {
		t.Error("no Claude Code session in the shared corpus")
	}
}

func TestResponsesForm(t *testing.T) {
	s := &Session{Name: "x", Format: "test", Tools: []string{"bash"}, Messages: []Message{
		{Role: "system", Content: Str("You are an agent.")},
		{Role: "user", Content: Str("Fix it")},
		{Role: "assistant", Content: Str("Looking."), Reasoning: "Start with ls.", ToolCalls: []ToolCall{{ID: "c1", Type: "function", Function: Function{Name: "bash", Arguments: `{"command":"ls"}`}}}},
		{Role: "tool", ToolCallID: "c1", Content: Str("a.go")},
		{Role: "assistant", Content: Str(""), Reasoning: "Read it.", ToolCalls: []ToolCall{{ID: "c2", Type: "function", Function: Function{Name: "bash", Arguments: `{"command":"cat a.go"}`}}}},
		{Role: "tool", ToolCallID: "c2", Content: Str("package a")},
		{Role: "assistant", Content: Str(""), Reasoning: "Nothing to say."},
		{Role: "user", Content: Str("and?")},
	}}
	r := Responses(s)
	if r.Turns() != 4 {
		t.Fatalf("%d turns", r.Turns())
	}
	body, _ := r.Request(3)
	if err := fakeupstream.ValidateResponses(body, fakeupstream.Signer{}); err != nil {
		t.Fatal(err)
	}
	var types []string
	gjson.GetBytes(body, "input").ForEach(func(_, it gjson.Result) bool {
		types = append(types, it.Get("type").String()+":"+it.Get("role").String())
		return true
	})
	// The empty assistant message (reasoning only) leaves no item.
	want := "message:developer message:user reasoning: message:assistant function_call: function_call_output: reasoning: function_call: function_call_output: message:user"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("items\n%s\nwant\n%s", got, want)
	}
	rs := gjson.GetBytes(body, "input.2.encrypted_content").String()
	if p, ok := fakeupstream.DefaultSigner.Decrypt(rs); !ok || p != "Start with ls." {
		t.Errorf("encrypted content %q → %q %v", rs, p, ok)
	}
	for _, k := range []string{"store", "include", "prompt_cache_key", "tools.0.name", "reasoning.effort"} {
		if !gjson.GetBytes(body, k).Exists() {
			t.Errorf("%s missing", k)
		}
	}
	if gjson.GetBytes(body, "store").Bool() {
		t.Error("store true")
	}
	if b0, _ := r.Request(0); len(gjson.GetBytes(b0, "input").Array()) != 2 {
		t.Errorf("first request %s", b0)
	}
}
