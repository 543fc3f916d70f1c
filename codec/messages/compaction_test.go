package messages

import (
	"testing"

	"github.com/condense-proxy/condense-proxy/tokenizer"
)

func TestScanMarksAgentCompaction(t *testing.T) {
	const task = `{"role":"user","content":"Fix it."}`
	const use = `{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{}}]}`
	// Claude Code 2.1.197 compacting in a tool loop: the tool result, then
	// its instruction, in one user message.
	const compact = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"},{"type":"text","text":"CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\nYour task is to create a detailed summary of the conversation so far, paying close attention"}]}`
	cases := []struct {
		name, msgs, want string
	}{
		{"claude code in a tool loop", task + "," + use + "," + compact, "claude-code"},
		{"answered and going on", task + "," + use + "," + compact + `,{"role":"assistant","content":"<summary>s</summary>"},{"role":"user","content":"Go on."}`, ""},
		{"last message is the assistant's", task + "," + use, ""},
		{"an ordinary turn", task, ""},
	}
	c := New(tokenizer.New(tokenizer.Options{}))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := c.Scan([]byte(`{"model":"claude-sonnet-4-5","messages":[`+tc.msgs+`]}`), o200k)
			if err != nil {
				t.Fatal(err)
			}
			if r.Compaction != tc.want {
				t.Errorf("compaction %q, want %q", r.Compaction, tc.want)
			}
		})
	}
}

// TestCompactionBlockFrozen: an assistant message holding a server
// compaction block is frozen, counted by the block's text (not its
// signature), and the head runs through it.
func TestCompactionBlockFrozen(t *testing.T) {
	sig := `"signature":"c2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJl"`
	body := `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"Fix it."},` +
		`{"role":"assistant","content":[{"type":"compaction","content":"Earlier: tests fail.",` + sig + `}]},` +
		`{"role":"user","content":"Go on."},{"role":"assistant","content":"ok"},{"role":"user","content":"More."}]}`
	c := New(tokenizer.New(tokenizer.Options{}))
	r := scanParse(t, c, []byte(body))
	if !r.Items[1].Frozen || r.Head != 2 {
		t.Errorf("frozen %v, head %d", r.Items[1].Frozen, r.Head)
	}
	counter := tokenizer.New(tokenizer.Options{})
	if got, want := r.Items[1].Tokens, messageOverhead+blockOverhead+counter.Text(tokenizer.O200kBase, "Earlier: tests fail."); got != want {
		t.Errorf("compaction message counted %d tokens, want %d", got, want)
	}
}
