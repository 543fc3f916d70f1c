package condense

import (
	"context"

	"github.com/condense-proxy/condense-proxy/view"
)

// bill records fwd, the request forwarded, in the conversation's prefix
// log and estimates its bill and the bill of the request as received.
func (e *Engine) bill(ctx context.Context, scope string, r *Report, fwd *view.Request) {
	cur, prev, ok, store := e.recordPrefix(ctx, scope, r, fwd, unscale(r.TokensBefore, r.safety), r.SummarizerSpend)
	r.PrefixReused = -1
	if ok {
		r.PrefixReused = scale(sharedPrefix(prev, cur), r.safety)
	}
	r.CacheRead, r.CacheWrite, r.Bill = r.estimate(cur, prev, ok, r.PrefixReused, r.TokensAfter)
	prevReceived := -1
	if ok {
		prevReceived = min(scale(prev.received, r.safety), r.TokensBefore)
	}
	r.UncondensedRead, r.UncondensedWrite, r.BillUncondensed = r.estimate(cur, prev, ok, prevReceived, r.TokensBefore)
	cur.billed += r.BillUncondensed
	store(cur)
	r.RecallTool = e.opts.RecallTool != nil && cur.condensed && r.recallEligible()
}

// condensedNow reports whether the request is forwarded condensed.
func (r *Report) condensedNow() bool {
	return r.Applied != AppliedNone && r.Applied != AppliedObserve && r.Applied != "" && !r.AsReceived && r.AgentCompaction == ""
}

// recallEligible reports whether the request may carry the recall tool
// once its conversation was condensed: not one going as received
// (unchanged means unchanged), not the agent's own compaction request.
func (r *Report) recallEligible() bool {
	return r.Counted && !r.AsReceived && r.AgentCompaction == "" && r.Applied != AppliedObserve
}

// recallToolOf sets r.RecallTool for a counting request, which is not
// billed: what the agent's next request of the conversation will carry.
func (e *Engine) recallToolOf(ctx context.Context, scope string, r *Report) {
	if e.opts.RecallTool == nil || !r.recallEligible() {
		return
	}
	prev, ok := e.prefixOf(ctx, scope+"\x00"+r.Conversation)
	r.RecallTool = r.condensedNow() || ok && prev.condensed
}

// estimate prices a request of tokens tokens whose leading shared tokens
// (-1: none known) equal the request before it (prev, when ok): read
// from the provider's cache when prev is within the cache's lifetime and
// the prefix long enough to be cached, written otherwise.
func (r *Report) estimate(cur, prev prefixEntry, ok bool, shared, tokens int) (read, write int, bill float64) {
	p := r.prices
	if ok && cur.at.Sub(prev.at) < p.ttl && shared >= p.minPrefix {
		read = min(shared, tokens)
	}
	write = max(tokens-read, 0)
	return read, write, p.read*float64(read) + p.write*float64(write)
}

func unscale(n int, factor float64) int {
	if factor <= 1 {
		return n
	}
	return int(float64(n)/factor + 0.5)
}

func scale(n int, factor float64) int {
	if factor <= 1 {
		return n
	}
	return int(float64(n)*factor + 0.5)
}
