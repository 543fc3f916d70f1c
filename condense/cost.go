package condense

import (
	"math"
	"time"
)

// The cost model. Providers bill a request's input in three parts: the
// prefix they have cached from the conversation's previous request (a
// cache read, at read × the input price), and the rest, which they write
// to the cache (at write × the input price). An agent's requests grow
// append-only, so an uncondensed conversation is almost all cache reads.
// An edit of a request changes its bytes from some point on: everything
// after that point is written again (a bust), once; every later request
// then reads the edited, smaller prefix. So an edit pays when the tokens
// it removes, read on every request still to come, outweigh the re-write
// of what follows it — and a deeper edit (one that removes more) busts
// once and lasts longer before the next one.
//
// The planner prices the few choices that shape a conversation's bill —
// how far a cut or fold moves when the request outgrows the limit (the
// stride) and how often selective condensing moves its digest frontier —
// by simulating the requests expected to follow. Each choice is made once
// per conversation and frozen (memo.go), so every later request and every
// replica replays it byte for byte.

// prices are a model's prompt-cache prices and its output price as
// multiples of its input price, how long its cache lives idle, and the
// shortest prefix it caches (tokens).
type prices struct {
	read, write float64
	output      float64
	ttl         time.Duration
	minPrefix   int
}

// Defaults when a model's limits do not say (Anthropic's: the dearest to
// bust, so a planner that assumes them edits cached history least).
const (
	defaultCacheRead  = 0.1
	defaultCacheWrite = 1.25
	defaultCacheTTL   = 5 * time.Minute
	// defaultMinCachedPrefix is the shortest prefix the providers cache
	// (Anthropic's and OpenAI's: 1024 tokens).
	defaultMinCachedPrefix = 1024
	// defaultOutputPrice is the output price as a multiple of the input
	// price (Anthropic's: 5).
	defaultOutputPrice = 5.0
)

func pricesOf(l ModelLimits) prices {
	p := prices{read: l.CacheRead, write: l.CacheWrite, output: l.OutputPrice, ttl: l.CacheTTL, minPrefix: l.MinCachedPrefix}
	if p.read <= 0 || p.read > 1 {
		p.read = defaultCacheRead
	}
	if p.write < 1 {
		p.write = defaultCacheWrite
	}
	if p.ttl <= 0 {
		p.ttl = defaultCacheTTL
	}
	if p.minPrefix <= 0 {
		p.minPrefix = defaultMinCachedPrefix
	}
	if !(p.output > 0) {
		p.output = defaultOutputPrice
	}
	return p
}

// summaryPrices are the prices of the summarizer's input and output
// tokens in units of the request's model's input price: the output
// price of the model that writes the summaries — the request's, or
// condense.summary_model's, whose input price relative to the request's
// model's (1 when either is unknown) scales both.
func (e *Engine) summaryPrices(rq *job) (in, out float64) {
	m := e.llmModel(rq)
	if m == "extractive" || m == rq.model {
		return 1, pricesOf(rq.limits).output
	}
	l := e.models.Limits(m)
	in = 1
	if l.InputPrice > 0 && rq.limits.InputPrice > 0 {
		in = l.InputPrice / rq.limits.InputPrice
	}
	return in, pricesOf(l).output * in
}

// summaryPerToken is what summarizing one token costs besides the bust,
// in units of the input price: the summarizer reading it, and its share
// of a summary of summaryTokens written per chunk tokens.
func (e *Engine) summaryPerToken(rq *job, summaryTokens, chunk int) float64 {
	in, out := e.summaryPrices(rq)
	return in + out*float64(summaryTokens)/float64(max(chunk, 1))
}

// horizon is how many more requests a conversation that has taken steps
// steps is expected to send: as many as it has sent (a conversation that
// has lasted long tends to last as long again), at least 8 and at most
// maxHorizon.
func horizon(steps int) float64 { return min(max(8, float64(steps)), maxHorizon) }

// maxHorizon bounds the requests the cost model simulates, request by
// request, for each plan it prices (planFolds prices 289): a request of
// 100,000 tiny messages would otherwise cost seconds of pricing. No
// agent's conversation comes near it.
const maxHorizon = 4096

// foldCase is what a conversation's cuts are planned from. Token counts
// are raw (no safety factor).
type foldCase struct {
	limit  int     // the request must be cut before it outgrows this (the threshold)
	floor  int     // the smallest request a cut can leave (head, summary, newest steps)
	fixed  int     // tokens before the first byte a cut changes (cached across it)
	growth float64 // tokens a request adds, on average
	// requests expected still to come
	horizon float64
	// perToken is what folding one token costs besides the bust: the
	// summarizer's input and output per token folded (0 for a window,
	// which omits).
	perToken float64
	// minStride bounds the stride from below.
	minStride int
	// lowLimit lets the planner cut before the request reaches limit:
	// a conversation already condensed may be kept smaller than the
	// threshold when that is cheaper (full mode's folds). False: cuts
	// move only at the limit (the sliding window, a last resort).
	lowLimit bool
	// minLimit, when above 0, is the lowest limit a low-limit plan may
	// choose (auto keeps what its digests hold down to the target).
	minLimit int
}

// foldPlan is how a conversation's cuts move: when the request outgrows
// Limit, the cut jumps Stride tokens on, leaving about Limit − Stride.
type foldPlan struct{ Limit, Stride int }

// planFolds returns the cuts that minimize the expected bill of the
// requests to come, in units of the input price: each cut moves the
// request down to about limit − stride, which is re-written once (a
// bust), and the requests that follow read it from the cache as it grows
// back to the limit. A deep cut (a long stride) pays the bust and the
// summarizer once for many requests of small reads; a shallow one busts
// often and reads more; a low limit reads less but busts more often. Over
// a short horizon the summarizer's price makes shallow cuts cheaper.
func (p prices) planFolds(c foldCase) foldPlan {
	best := foldPlan{Limit: c.limit, Stride: max(c.minStride, 1)}
	if c.limit-c.floor <= c.minStride {
		return best
	}
	bestCost := math.Inf(1)
	const steps = 16
	lo := c.limit
	if c.lowLimit {
		lo = max(c.floor+c.minStride, min(c.minLimit, c.limit))
	}
	for i := 0; i <= steps; i++ {
		l := lo + (c.limit-lo)*i/steps
		if l-c.floor < c.minStride {
			continue
		}
		for j := 0; j <= steps; j++ {
			s := c.minStride + (l-c.floor-c.minStride)*j/steps
			if cost := p.foldCost(c, l, s); cost < bestCost {
				best, bestCost = foldPlan{Limit: l, Stride: s}, cost
			}
		}
	}
	return best
}

// foldCost simulates the requests to come with cuts at limit l of stride
// s: the request is at the threshold now and is cut; each request then
// grows by the growth and is read from the cache; past l it is cut again.
func (p prices) foldCost(c foldCase, l, s int) float64 {
	g := max(c.growth, 1)
	size := float64(c.limit)
	cost := 0.0
	for t := 0.0; t < c.horizon; t++ {
		if t == 0 || size > float64(l) {
			after := max(size-float64(s), float64(c.floor))
			if t == 0 {
				after = max(float64(l-s), float64(c.floor))
			}
			cost += (p.write-p.read)*max(after-float64(c.fixed), 0) + c.perToken*(size-after)
			size = after
		}
		cost += p.read * size
		size += g
	}
	return cost
}

// frontierStride returns how far selective condensing's digest frontier
// moves at once: every move re-writes the protected newest outputs after
// it (tail tokens) once; between moves, the outputs that aged past the
// frontier are read undigested. The square-root rule balances the two:
// stride = sqrt(2 × (write − read) / read × tail × growth).
func (p prices) frontierStride(tail int, growth float64) int {
	s := math.Sqrt(2 * (p.write - p.read) / p.read * float64(max(tail, 1)) * max(growth, 1))
	return int(s)
}

// autoCase is what auto's choice between its parts is priced from
// (plan.go's autoFoldsOf): the request now (in tokens, over the limit),
// and what each part would forward for it — as digested, and as folded —
// with the tokens each keeps before its first edit.
type autoCase struct {
	in, limit        int
	growth, horizon  float64
	digested         int
	digestKept       int
	tail             int // what the protected newest outputs hold: digests move behind them
	folded, foldKept int
	summaries        float64 // the fold's summaries now
	perToken         float64 // a later fold's (or cut's) summaries, per token removed
}

// autoFold is a later fold (or auto's cut) of a request of size tokens:
// it removes as much as the dry run's fold did, re-writes what follows the
// head and pays the summaries of what it removed. It returns the size
// after it and its cost.
func (p prices) autoFold(a autoCase, size float64) (after, cost float64) {
	fixed := float64(a.foldKept)
	after = max(size-float64(a.in-a.folded), fixed)
	return after, (p.write-p.read)*(after-fixed) + a.perToken*(size-after)
}

// autoFoldsCost simulates folds over the requests to come: this one
// folded as the dry run did, each later one when the request outgrows the
// limit again, removing as much as this one did.
func (p prices) autoFoldsCost(a autoCase) float64 {
	cost := (p.write-p.read)*float64(max(a.folded-a.foldKept, 0)) + a.summaries
	size, last := float64(a.folded), float64(a.folded)
	for t := 1.0; t < a.horizon; t++ {
		cost += p.read * size
		if size += max(a.growth, 1); size > float64(a.limit) {
			var c float64
			size, c = p.autoFold(a, size)
			cost += c
			last = size
		}
	}
	next := float64(a.limit) + max(a.growth, 1)
	_, c := p.autoFold(a, next)
	return cost + runUp(size, last, next)*c
}

// runUp is the share of the way from last (the size after the last move
// of a simulation) to next (the size of the next move) that size has
// come at the horizon: auto's simulations charge the move that comes
// after the horizon at that share of its cost. A move then costs a little
// more or less as it comes a request sooner or later, not whole or not
// at all as a move on the horizon's last request would (20 tokens more in
// a cut's dry run flipped a 1× session at 32k from 1.09 to 1.22 of
// uncondensed: BENCHMARKS.md).
func runUp(size, last, next float64) float64 {
	if next <= last {
		return 1
	}
	return min(max((size-last)/(next-last), 0), 1)
}

// moveShare is the share of what ages past the frontier that a later
// move of the digests removes: the share this one removed of the history
// it could digest (after its first edit, before the protected tail).
func (a autoCase) moveShare() float64 {
	eligible := float64(max(a.in-a.digestKept-a.tail, 1))
	return min(float64(a.in-a.digested)/eligible, 1)
}

// autoDigestsCost simulates digests over the requests to come: this one
// digested; at each later move the digests remove the same share of what
// aged past the frontier since the last move as this one removed of the
// history, re-writing what follows the old frontier (the tail then); when
// that cannot bring the request under the limit, auto cuts as a fold
// would (its summaries priced the same). (The frontier also moves between
// these, a stride at a time. Pricing each of those moves, with the first
// move's share, ranked the corpus's sessions further from their measured
// bills than this account does — later moves remove less than the first,
// which digested the oldest, largest outputs: BENCHMARKS.md.)
func (p prices) autoDigestsCost(a autoCase) float64 {
	share := a.moveShare()
	cost := (p.write - p.read) * float64(max(a.digested-a.digestKept, 0))
	size, last := float64(a.digested), float64(a.digested)
	for t := 1.0; t < a.horizon; t++ {
		cost += p.read * size
		if size += max(a.growth, 1); size > float64(a.limit) {
			var c float64
			size, c = p.digestsMove(a, share, size, last)
			cost += c
			last = size
		}
	}
	next := float64(a.limit) + max(a.growth, 1)
	_, c := p.digestsMove(a, share, next, last)
	return cost + runUp(size, last, next)*c
}

// digestsMove is a later move of auto's digests (autoDigestsCost) on a
// request of size tokens, last tokens after the previous move: they
// remove share of what aged since, re-writing what follows the old
// frontier, or, when that leaves the request over the limit, auto cuts
// as a fold would. It returns the size after it and its cost.
func (p prices) digestsMove(a autoCase, share, size, last float64) (after, cost float64) {
	if after = size - share*(size-last); after <= float64(a.limit) {
		return after, (p.write - p.read) * (after - max(last-float64(a.tail), float64(a.foldKept)))
	}
	return p.autoFold(a, size)
}

// digestsRunway returns how many requests the digests keep the
// conversation under the limit, as autoDigestsCost simulates their moves
// (the horizon when they last it).
func (p prices) digestsRunway(a autoCase) float64 {
	share := a.moveShare()
	size, last := float64(a.digested), float64(a.digested)
	for t := 1.0; t < a.horizon; t++ {
		if size += max(a.growth, 1); size > float64(a.limit) {
			after := size - share*(size-last)
			if after > float64(a.limit) {
				return t
			}
			size, last = after, after
		}
	}
	return a.horizon
}

// digestsPay reports whether the digests' first edit pays by itself: the
// tokens it removes, read on every request until a cut has to come (or
// to the horizon), outweigh re-writing what follows its first digest.
func (p prices) digestsPay(a autoCase) bool {
	runway := p.digestsRunway(a)
	if runway >= a.horizon {
		return true
	}
	removed := float64(a.in - a.digested)
	return removed*p.read*runway > (p.write-p.read)*float64(max(a.digested-a.digestKept, 0))
}
