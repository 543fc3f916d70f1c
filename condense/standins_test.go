package condense

import (
	"context"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
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
