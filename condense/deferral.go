package condense

import (
	"context"
	"fmt"

	"github.com/condense-proxy/condense-proxy/view"
)

// deferral decides, for a request over the threshold of a conversation
// never condensed (condense.defer), whether forwarding it as received is
// cheaper than condensing it now: condensing re-writes what follows the
// first byte it changes (once) and pays the summarizer for the summaries
// not written yet; it saves, on each of the requests expected to follow,
// the reads of the tokens it removed. It dry-runs the condensation (no
// summarizer call, nothing written) to know both. At the hard limit — the
// window less the room the answer needs — it never defers, nor when the
// conversation, growing as it has, is expected to get there before it
// ends. It returns why it defers.
func (e *Engine) deferral(ctx context.Context, rq *job, mode string) (string, bool) {
	b := e.budgets(rq)
	if rq.in.Total >= b.hard {
		return "", false
	}
	if _, ok := e.decided(ctx, rq, decisionCondensed); ok {
		return "", false
	}
	after, misses, ok := e.dryRun(rq, func(dry *job, r *Report) ([]byte, error) { return e.condense(ctx, dry, mode, r) })
	if !ok {
		return "", false
	}
	p := pricesOf(rq.limits)
	kept := sharedPrefix(summarizeForPrefix(rq.in), summarizeForPrefix(after))
	rewrite := max(after.Total-kept, 0)
	summarize := e.summariesPrice(rq, b, misses)
	cost := (p.write-p.read)*float64(rewrite) + summarize
	// Half the usual horizon: deferring is the cautious choice when the
	// session's end is unknown (a bust paid for a session that then ends
	// is the loss defer exists to avoid).
	requests := horizon(len(rq.conv.steps)) / 2
	// A conversation expected to reach the hard limit before it ends
	// must condense there anyway: deferring would only move the bust
	// later, onto a larger request, and read the tokens it removes on
	// every request meanwhile.
	if toHard := float64(b.hard-rq.in.Total) / growth(rq.received()); toHard < requests {
		return "", false
	}
	saves := requests * p.read * float64(rq.in.Total-after.Total)
	if saves >= cost {
		return "", false
	}
	return fmt.Sprintf("condensing now would cost about %.0f input tokens' worth (re-writing %d tokens, %d summaries) and save about %.0f over the %.0f requests expected to follow",
		cost, rewrite, misses, saves, requests), true
}

// dryRun condenses rq with condense as a counting request would — no
// summarizer call (an extractive text stands in for a summary not written
// yet), nothing kept — and returns the request it would forward and how many
// summaries it would ask the summarizer for: not those found cached, nor
// those auto's allowance would write extractive (auto's cut reads the
// conversation's allowance as its real run would); ok is false when it
// would forward nothing smaller than rq.
func (e *Engine) dryRun(rq *job, condense func(dry *job, r *Report) ([]byte, error)) (after *view.Request, asks int, ok bool) {
	dryReq := rq.req
	dryReq.CountOnly = true
	dry := &job{reqState: &reqState{req: dryReq, codec: rq.codec, model: rq.model, limits: rq.limits, over: rq.over, headHash: rq.headHash},
		in: rq.in, conv: rq.conv, overhead: rq.overhead, frontier: -1}
	r := Report{Conversation: conversationID(rq.in)}
	out, err := condense(dry, &r)
	if err != nil || out == nil {
		return nil, 0, false
	}
	after, err = e.countOut(dry, out)
	if err != nil || after.Total >= rq.in.Total {
		return nil, 0, false
	}
	return after, dry.asks, true
}

// summariesPrice is what writing n summaries of chunks costs, in units of
// the input price: their input — a chunk's transcript at the summary
// model's input price, or, asked in place (inplace.go) when that is
// cheaper, the request read from the provider's cache — and their text at
// the summary model's output price (summaryPrices). Nothing for the
// extractive summarizer.
func (e *Engine) summariesPrice(rq *job, b budgets, n int) float64 {
	if e.summaryModel(rq) == "extractive" {
		return 0
	}
	inPrice, outPrice := e.summaryPrices(rq)
	in := inPrice * float64(b.chunk)
	if ip := rq.inplace; ip != nil {
		if e.settle(rq, ip); ip.cached > 0 {
			in = min(in, ip.price(pricesOf(rq.limits), e.counter.Text(rq.limits.Encoding, inPlacePrompt+e.opts.Prompt)))
		}
	}
	return float64(n) * (in + outPrice*float64(e.perSummaryTokens()))
}
