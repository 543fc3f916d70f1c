package condense

import (
	"github.com/condense-proxy/condense-proxy/view"
)

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
