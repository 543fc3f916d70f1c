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

// TestSystemMessageSurvivesCondensing: a long Claude Code-like session
// with the recorded system message where Claude Code puts it (after the
// task) or a few turns later is condensed in every mode; the result is
// valid for the strict fake and holds the system message verbatim, once,
// after the same messages as received.
func TestSystemMessageSurvivesCondensing(t *testing.T) {
	sys := gjson.GetBytes(claudeOpus48(t), "messages.1").Raw
	if gjson.Get(sys, "role").Str != "system" {
		t.Fatal("fixture: messages.1 is not the system message")
	}
	const window = 40000
	for _, at := range []int{1, 5} {
		for _, thinking := range []bool{true, false} {
			for _, mode := range []string{condense.ModeAuto, condense.ModeFull, condense.ModeTruncate} {
				msgs := claudeSession(21, 60, thinking)
				msgs = append(msgs[:at], append([]string{sys}, msgs[at:]...)...)
				b := body(msgs, "claude-opus-4-8", thinking)
				e, c := newEngine(window, condense.Options{SelectiveEnabled: true, ChunkTokens: 5000, SummaryBudgetTokens: 3000})
				res, err := e.Condense(context.Background(), condense.Request{Body: b, Codec: c, Mode: mode, Scope: "test"})
				if err != nil {
					t.Fatal(err)
				}
				rep := res.Report
				if rep.Applied == condense.AppliedNone {
					t.Fatalf("at %d, thinking %v, %s: not condensed: %s", at, thinking, mode, rep.Reason)
				}
				if err := fakeupstream.ValidateMessages(res.Body, fakeupstream.DefaultSigner, false); err != nil {
					t.Fatalf("at %d, thinking %v, %s: the API would refuse it: %s", at, thinking, mode, err.Message)
				}
				out := gjson.GetBytes(res.Body, "messages").Array()
				n, pos := 0, -1
				for i, m := range out {
					if m.Raw == sys {
						n, pos = n+1, i
					}
				}
				if n != 1 || pos != at {
					t.Fatalf("at %d, thinking %v, %s: system message %d times, at %d", at, thinking, mode, n, pos)
				}
				// Nothing before it is cut or moved (a tool result there
				// may be digested: kept messages' outputs may be).
				for i := 0; i < at; i++ {
					if out[i].Get("role").Str != gjson.Get(msgs[i], "role").Str || out[i].Get("content.0.tool_use_id").Str != gjson.Get(msgs[i], "content.0.tool_use_id").Str {
						t.Fatalf("at %d, %s: message %d before the system message is not the same message", at, mode, i)
					}
				}
			}
		}
	}
}
