package condense

import (
	"context"
	"maps"
	"testing"

	"github.com/condense-proxy/condense-proxy/cache"
)

// TestDryRunPricesTheSummariesItWouldAsk: a plan's dry run stands an
// extractive text in for every summary not written yet, and must price
// only the ones the real run would ask the summarizer for. Full mode's
// fold asks for its summaries. Auto's cut writes them extractive once
// they would cost more than its allowance (condense.auto_llm_share of
// what the conversation has cost so far — nothing, at its first
// request): free. Priced as summarizer calls, they made the cut look as
// dear as a fold, and auto folded a held-out session whose one fold
// summary then cost a fifth of its bill (BENCHMARKS.md). The dry runs
// call nothing.
func TestDryRunPricesTheSummariesItWouldAsk(t *testing.T) {
	ctx := context.Background()
	msgs := reasoning(40)
	b := body(t, msgs)
	probe, err := New(Deps{Counter: counter, Models: limits(1_000_000)}, Options{}).Condense(ctx, Request{Codec: chatCodec, Body: b, Mode: ModeOff})
	if err != nil {
		t.Fatal(err)
	}
	window := probe.Report.TokensBefore * 100 / 85 // over the threshold (0.8)
	for _, tc := range []struct {
		name  string
		share float64 // condense.auto_llm_share
		asks  bool    // the cut's summaries are priced as summarizer calls
	}{
		{"past the allowance", 0.02, false},
		{"within the allowance", 100, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := &countingSummarizer{}
			e := New(Deps{Counter: counter, Models: limits(window), Cache: cache.NewMemory(64 << 20), Summarizer: sum},
				Options{SelectiveEnabled: true, MaxSummarizerCalls: 100, ChunkTokens: 4000, SummaryBudgetTokens: 2000, AutoLLMShare: tc.share})
			// The conversation's earlier request, under the threshold:
			// what it cost is what the allowance is a share of.
			if _, err := e.Condense(ctx, Request{Codec: chatCodec, Body: body(t, msgs[:62]), Mode: ModeAuto, Scope: "s"}); err != nil {
				t.Fatal(err)
			}
			req := Request{Codec: chatCodec, Body: b, Mode: ModeAuto, Scope: "s"}
			var res Result
			vr, lim, err := e.scanFor(req, &res.Report)
			if err != nil {
				t.Fatal(err)
			}
			rq, _, _, err := e.admit(ctx, req, vr, lim, &res, func(string, string, int) {})
			if err != nil || rq == nil {
				t.Fatalf("not admitted for condensing: %v (%s)", err, res.Report.Reason)
			}
			bud := e.budgets(rq)
			_, fold, ok := e.dryRun(rq, func(dry *job, r *Report) ([]byte, error) { return e.full(ctx, dry, bud, r) })
			if !ok || fold == 0 {
				t.Fatalf("full mode's fold, dry-run: ok %v, %d summaries to ask, want some", ok, fold)
			}
			_, cut, ok := e.dryRun(rq, func(dry *job, r *Report) ([]byte, error) {
				// auto's cut over the request as received (no digests made)
				dry.summarizeCut, dry.decisions = true, maps.Clone(rq.decisions)
				return e.truncateBody(ctx, dry, false, bud, r)
			})
			if !ok {
				t.Fatal("auto's cut, dry-run: nothing smaller")
			}
			if got := cut > 0; got != tc.asks {
				t.Errorf("auto's cut, dry-run: %d summaries priced as summarizer calls; want some: %v", cut, tc.asks)
			}
			if n := sum.calls.Load(); n != 0 {
				t.Errorf("dry runs called the summarizer %d times", n)
			}
		})
	}
}
