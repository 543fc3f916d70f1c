package condense

import (
	"context"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
)

// TestAutoNotes: with condense.stand_ins notes, auto's cut leaves notes of
// what it omits — the calls, the errors, the user's words, the files and
// the id to recall each — without a summary (no summarizer call, no
// assistant words), and a note stays byte for byte while the cut does.
// With summaries (the default) the same session's stand-ins keep the
// assistant's words.
func TestAutoNotes(t *testing.T) {
	sess, _ := corpus.Synthetic(7, 700_000)
	run := func(standIns string) (notes []Change, calls int) {
		sum := &countingSummarizer{}
		opts := Options{SelectiveEnabled: true, StandIns: standIns, AutoLLMShare: 1}
		if standIns == StandInSummaries {
			opts.Summarizer = "extractive" // the words an LLM's summary would paraphrase
		}
		e := newEngine(32000, sum, opts)
		prev := map[[2]int]string{}
		for _, n := range sess.TurnEnds() {
			b, _ := sess.Request("gpt-4o", n)
			res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeAuto, Scope: "s"})
			if err != nil {
				t.Fatal(err)
			}
			validate(t, res.Body)
			for _, c := range res.Report.Changes {
				if c.Kind != ChangeSummary {
					continue
				}
				notes = append(notes, c)
				if p, ok := prev[[2]int{c.From, c.To}]; ok && p != c.Text && c.Level == 1 {
					t.Errorf("the stand-in of messages %d-%d changed while it stood", c.From, c.To)
				}
				prev[[2]int{c.From, c.To}] = c.Text
			}
			if standIns == StandInNotes && len(res.Report.Changes) > 0 && strings.Contains(string(res.Body), "conversation-summary") &&
				!strings.Contains(string(res.Body), "search it with the condense_recall tool") {
				t.Errorf("request of %d messages: its notes do not point to the recall tool", n)
			}
		}
		return notes, int(sum.calls.Load())
	}
	notes, calls := run(StandInNotes)
	if len(notes) == 0 {
		t.Fatal("no stand-in was written: the session tests nothing")
	}
	if calls != 0 {
		t.Errorf("notes made %d summarizer calls", calls)
	}
	for _, c := range notes {
		if strings.Contains(c.Text, "- Assistant:") || strings.Contains(c.Text, "- Decision:") {
			t.Errorf("a note of messages %d-%d summarizes the assistant's words: %.200q", c.From, c.To, c.Text)
		}
		if c.Level == 1 && !strings.Contains(c.Text, "tool calls (") {
			t.Errorf("a note of messages %d-%d does not say which calls were made: %.200q", c.From, c.To, c.Text)
		}
	}
	summaries, _ := run(StandInSummaries)
	words := false
	for _, c := range summaries {
		words = words || strings.Contains(c.Text, "- Assistant:") || strings.Contains(c.Text, "- Decision:")
	}
	if !words {
		t.Error("no summary kept the assistant's words: the comparison tests nothing")
	}
}
