package condense

import (
	"context"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/tidwall/gjson"
)

// TestMergedStandInsKeepTheirShare: selective's window stand-ins of a long
// session, their budget too small for every decision, merged level upon
// level. A merge keeps facts in the share of the budget its steps are of
// what the stand-ins cover, so the oldest merge (most of the session)
// keeps most of its decisions — a summary's room alone kept 5% of them
// at one cut's move.
func TestMergedStandInsKeepTheirShare(t *testing.T) {
	sess, facts := corpus.Synthetic(5, 300_000)
	e := newEngine(16000, nil, Options{SelectiveEnabled: true, SummaryBudgetTokens: 1000, SummaryMaxTokens: 250, ChunkTokens: 1500})
	worst, merged, dropped := 1.0, false, false
	for _, end := range sess.TurnEnds() {
		b, _ := sess.Request("gpt-4o", end)
		res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeSelective, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		validate(t, res.Body)
		for _, c := range res.Report.Changes {
			merged = merged || c.Kind == ChangeSummary && c.Level > 1
		}
		seen, kept := 0, 0
		for _, f := range facts {
			text := "(" + f.Text + ")"
			if f.Kind != "decision" || !strings.Contains(string(b), text) {
				continue
			}
			seen++
			if strings.Contains(string(res.Body), text) {
				kept++
			}
		}
		if seen > 0 {
			dropped = dropped || kept < seen
			worst = min(worst, float64(kept)/float64(seen))
		}
	}
	if !merged || !dropped {
		t.Fatalf("merged %v, a decision dropped %v: the budget does not bind, the session tests nothing", merged, dropped)
	}
	if worst < 1.0/3 {
		t.Errorf("a request kept %.0f%% of the decisions it held: a merge kept less than its share", 100*worst)
	}
}

// TestAutoMergesKeepFactsWhoeverWroteThem: auto's cut summaries of a long
// session, bought from an LLM (a generous allowance) that writes a short
// text keeping no fact, merged level upon level. A merge is the
// extractive summary of the messages it covers, in its share of the
// budget: it keeps their decisions, where an LLM's merge of LLM summaries
// kept what the LLM wrote — none. (The LLM's summaries fill what they may
// say, so that they outgrow their budget and merge.)
func TestAutoMergesKeepFactsWhoeverWroteThem(t *testing.T) {
	sess, facts := corpus.Synthetic(5, 300_000)
	llm := SummarizerFunc(func(_ context.Context, in SummaryInput) (string, error) {
		return "## Task and intent\n" + strings.Repeat("- The agent works on the task.\n", in.MaxTokens/8), nil
	})
	e := newEngine(16000, llm, Options{SelectiveEnabled: true, AutoLLMShare: 1, SummaryBudgetTokens: 1000, SummaryMaxTokens: 250, ChunkTokens: 1500})
	seen, kept, merges := 0, 0, 0
	for _, end := range sess.TurnEnds() {
		b, _ := sess.Request("gpt-4o", end)
		res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeAuto, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		validate(t, res.Body)
		msgs := gjson.GetBytes(b, "messages").Array()
		for _, c := range res.Report.Changes {
			if c.Kind != ChangeSummary || c.Level < 2 {
				continue
			}
			merges++
			var covered strings.Builder
			for _, m := range msgs[c.From:c.To] {
				covered.WriteString(m.Raw)
			}
			for _, f := range facts {
				text := "(" + f.Text + ")"
				if f.Kind != "decision" || !strings.Contains(covered.String(), text) {
					continue
				}
				seen++
				if strings.Contains(c.Text, text) {
					kept++
				}
			}
		}
	}
	if merges == 0 || seen == 0 {
		t.Fatalf("%d merges covering %d decisions: the session tests nothing", merges, seen)
	}
	t.Logf("%d merges kept %d of the %d decisions they cover", merges, kept, seen)
	if float64(kept) < float64(seen)/3 {
		t.Errorf("auto's merges kept %d of the %d decisions they cover", kept, seen)
	}
}
