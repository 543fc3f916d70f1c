package messages

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream/fakesign"
	"github.com/condense-proxy/condense-proxy/view"
)

// claudeOpus48 is a request Claude Code 2.1.197 sent with its default
// model (claude-opus-4-8, no --model), after one Bash round trip, trimmed:
// a {"role":"system"} message (the agent types) follows the first user
// message.
func claudeOpus48(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/claude-opus-4-8.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRecordedSystemMessage: the recorded request scans and parses; its
// system message is a frozen system item inside the head, with the tool
// round trip after it paired as usual; the strict fake accepts it (with a
// signed thinking block in the assistant turn, which the recording's
// scripted answer lacked and the adaptive thinking it asks for requires).
func TestRecordedSystemMessage(t *testing.T) {
	b := claudeOpus48(t)
	th := "I will run it."
	signed, err := sjson.SetRawBytes(b, "messages.2.content.-1", []byte(mustJSON(map[string]any{"type": "thinking", "thinking": th, "signature": fakesign.Default.SignThinking(th)})))
	if err != nil {
		t.Fatal(err)
	}
	// Move the appended thinking block first.
	content := gjson.GetBytes(signed, "messages.2.content").Array()
	reordered := "[" + content[len(content)-1].Raw
	for _, c := range content[:len(content)-1] {
		reordered += "," + c.Raw
	}
	if signed, err = sjson.SetRawBytes(signed, "messages.2.content", []byte(reordered+"]")); err != nil {
		t.Fatal(err)
	}
	if err := fakeupstream.ValidateMessages(signed, fakeupstream.DefaultSigner, false); err != nil {
		t.Fatalf("the strict fake refuses the recorded request: %s", err.Message)
	}
	r := scanParse(t, New(sharedCounter), b)
	if len(r.Items) != 4 {
		t.Fatalf("%d items, want 4", len(r.Items))
	}
	sys := r.Items[1]
	if sys.Role != view.RoleSystem || !sys.Frozen || len(sys.Outputs) != 0 {
		t.Fatalf("system message parsed as %+v", sys)
	}
	if r.Head != 2 {
		t.Fatalf("head %d, want 2 (the task and the system message)", r.Head)
	}
	if len(r.Items[2].Calls) != 1 || len(r.Items[3].Answers) != 1 || !r.Items[3].Glue {
		t.Fatalf("tool round trip after the system message not paired: %+v / %+v", r.Items[2], r.Items[3])
	}
	if got := New(sharedCounter).Text(r, 1).Text; !strings.HasPrefix(got, "Available agent types") {
		t.Fatalf("text of the system message: %.60q", got)
	}
}

// TestSystemMessageRefusals: a system message with a non-text block is
// refused (the API wants text), as the strict fake does.
func TestSystemMessageRefusals(t *testing.T) {
	msgs := []string{`{"role":"user","content":"go"}`, `{"role":"system","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}`}
	b := body(msgs, "claude-opus-4-8", false)
	c := New(sharedCounter)
	r, err := c.Scan(b, o200k)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Parse(r); err == nil {
		t.Fatal("a system message with an image parsed")
	}
	if fakeupstream.ValidateMessages(b, fakeupstream.DefaultSigner, false) == nil {
		t.Fatal("the strict fake accepts a system message with an image")
	}
}

// reminder is a later system message as Claude Code 2.1.197 appends it
// every few steps (with claude-opus-4-8), after the newest tool results.
const reminder = `{"role":"system","content":"The task tools haven't been used recently. If you're working on tasks that would benefit from tracking progress, consider using TaskCreate."}`

// TestSystemMessagesThroughCondensing: a long Claude Code-like session
// laid out as Claude Code 2.1.197 sends it with claude-opus-4-8 — the
// recorded agent-types system message after the task, a reminder after
// every fifth tool result — is condensed in every mode, valid for the
// strict fake. The leading system message is kept verbatim, in place;
// every system message forwarded is one received, verbatim, right after
// the message it followed; the newest reminder is kept.
func TestSystemMessagesThroughCondensing(t *testing.T) {
	sys := gjson.GetBytes(claudeOpus48(t), "messages.1").Raw
	if gjson.Get(sys, "role").Str != "system" {
		t.Fatal("fixture: messages.1 is not the system message")
	}
	const window = 40000
	for _, thinking := range []bool{true, false} {
		session := claudeSession(21, 60, thinking)
		msgs := []string{session[0], sys}
		for i, m := range session[1:] {
			msgs = append(msgs, m)
			if i%10 == 9 { // after every fifth tool result
				msgs = append(msgs, reminder)
			}
		}
		if gjson.Get(msgs[len(msgs)-1], "role").Str != "system" {
			t.Fatal("the session does not end with a reminder")
		}
		// What each system message follows.
		after := map[string]string{}
		key := func(m gjson.Result) string { return m.Get("role").Str + "/" + m.Get("content.0.tool_use_id").Str }
		for i := 2; i < len(msgs); i++ {
			if gjson.Get(msgs[i], "role").Str == "system" {
				after[key(gjson.Get(msgs[i-1], "@this"))] = msgs[i]
			}
		}
		for _, mode := range []string{condense.ModeAuto, condense.ModeFull, condense.ModeSelective, condense.ModeTruncate} {
			b := body(msgs, "claude-opus-4-8", thinking)
			e, c := newEngine(window, condense.Options{SelectiveEnabled: true, ChunkTokens: 5000, SummaryBudgetTokens: 3000})
			res, err := e.Condense(context.Background(), condense.Request{Body: b, Codec: c, Mode: mode, Scope: "test"})
			if err != nil {
				t.Fatal(err)
			}
			rep := res.Report
			if rep.Applied == condense.AppliedNone {
				t.Fatalf("thinking %v, %s: not condensed: %s", thinking, mode, rep.Reason)
			}
			if rep.TokensAfter > window {
				t.Fatalf("thinking %v, %s: %d tokens forwarded", thinking, mode, rep.TokensAfter)
			}
			if err := fakeupstream.ValidateMessages(res.Body, fakeupstream.DefaultSigner, false); err != nil {
				t.Fatalf("thinking %v, %s: the API would refuse it: %s", thinking, mode, err.Message)
			}
			out := gjson.GetBytes(res.Body, "messages").Array()
			if out[0].Raw != msgs[0] || out[1].Raw != sys {
				t.Fatalf("thinking %v, %s: the task and the agent types are not kept first", thinking, mode)
			}
			if last := out[len(out)-1].Raw; last != msgs[len(msgs)-1] {
				t.Fatalf("thinking %v, %s: the newest reminder is not last: %.80s", thinking, mode, last)
			}
			for i := 2; i < len(out); i++ {
				if out[i].Get("role").Str != "system" {
					continue
				}
				if want, ok := after[key(out[i-1])]; !ok || out[i].Raw != want {
					t.Fatalf("thinking %v, %s: system message %d does not follow the message it followed: %.80s", thinking, mode, i, out[i].Raw)
				}
			}
		}
	}
}
