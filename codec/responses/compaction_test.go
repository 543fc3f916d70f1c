package responses

import (
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/tokenizer"
)

func TestScanMarksAgentCompaction(t *testing.T) {
	const task = `{"type":"message","role":"user","content":[{"type":"input_text","text":"Fix it."}]}`
	const prompt = `{"type":"message","role":"user","content":[{"type":"input_text","text":"You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task."}]}`
	const answer = `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Summary."}]}`
	cases := []struct {
		name, input, want, untouchable string
	}{
		{"codex local compaction", task + "," + prompt, "codex", ""},
		{"compaction_trigger", task + `,{"type":"compaction_trigger"}`, CompactionTrigger, "compaction_trigger: the upstream compacts the conversation"},
		{"the prompt answered, conversation going on", task + "," + prompt + "," + answer, "", ""},
		{"an ordinary turn", task, "", ""},
	}
	c := New(tokenizer.New(tokenizer.Options{}))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := c.Scan([]byte(`{"model":"gpt-5","input":[`+tc.input+`]}`), func(string) string { return tokenizer.O200kBase })
			if err != nil {
				t.Fatal(err)
			}
			if r.Compaction != tc.want || r.Untouchable != tc.untouchable {
				t.Errorf("compaction %q untouchable %q, want %q %q", r.Compaction, r.Untouchable, tc.want, tc.untouchable)
			}
		})
	}
}

// TestCompactionItemCountedByLength: a compaction item's encrypted_content
// is counted as a quarter of its length, never tokenized as text; the item
// is frozen and the head runs through it.
func TestCompactionItemCountedByLength(t *testing.T) {
	blob := strings.Repeat("the quick brown fox ", 400) // text that would tokenize to far less than len/4
	body := `{"model":"gpt-5","input":[{"type":"message","role":"user","content":"Fix it."},` +
		`{"type":"compaction","id":"cmp_1","encrypted_content":"` + blob + `"},{"type":"message","role":"user","content":"Go on."}]}`
	c := New(tokenizer.New(tokenizer.Options{}))
	r, err := c.Scan([]byte(body), func(string) string { return tokenizer.O200kBase })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Items[1].Tokens, itemOverhead+(len(blob)+3)/4; got != want {
		t.Errorf("compaction item counted %d tokens, want %d", got, want)
	}
	if err := c.Parse(r); err != nil {
		t.Fatal(err)
	}
	if !r.Items[1].Frozen || r.Head != 2 {
		t.Errorf("frozen %v, head %d", r.Items[1].Frozen, r.Head)
	}
}
