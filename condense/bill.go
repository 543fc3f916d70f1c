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
