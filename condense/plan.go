package condense

import (
	"context"
	"maps"
	"slices"

	"github.com/condense-proxy/condense-proxy/view"
)

// The planner's decisions for one conversation, each made once by the cost
// model (cost.go) and frozen (memo.go).

// growth is the tokens a request adds to conversation c, on average: its
// steps' mean (an agent's request adds about one step).
func growth(c *conversation) float64 {
	if len(c.steps) == 0 {
		return 1
	}
	return float64(c.stepTokens(0, len(c.steps))) / float64(len(c.steps))
}

// recentTokens is what the newest keepRecent steps of c hold.
func recentTokens(c *conversation, keepRecent int) int {
	return c.stepTokens(max(len(c.steps)-keepRecent, 0), len(c.steps))
}

// foldPlanOf returns how the fold point of c (the conversation as it is
// folded: received, or digested in auto) moves: when the condensed request
// outgrows the plan's limit, by its stride. The first plan folds at the
// threshold. Folding before the threshold pays only over many requests,
// so once the conversation has shown it is long (as received, it has
// outgrown twice the limit) a second plan, made then, may lower the limit:
// one planned bust, after which the conversation is kept smaller.
func (e *Engine) foldPlanOf(ctx context.Context, rq *job, b budgets, c *conversation) foldPlan {
	minLimit, longAt := 0, longFull
	plan := func(low bool) foldPlan {
		fixed := c.tokens(0, c.head) + b.overhead
		perToken := 0.0
		if e.summaryModel(rq) != "extractive" {
			perToken = e.summaryPerToken(rq, e.perSummaryTokens(), b.chunk)
		}
		// The fold lands on chunk boundaries: about half a chunk above
		// the newest steps. When that leaves the first plan no room to
		// move (a small window against the chunk: at 32k, one 12k chunk
		// outside the newest steps), the first fold closes its last
		// chunk where the plan wants it (fold.go's breakAt), so the plan
		// may reach down to the newest steps. A later plan (low) folds
		// whole chunks only.
		floor := fixed + b.summary + recentTokens(c, b.keepRecent)
		minStride := max(b.chunk, b.window/50)
		if low || b.limit-(floor+b.chunk/2) > minStride {
			floor += b.chunk / 2
		}
		return pricesOf(rq.limits).planFolds(foldCase{
			limit: b.limit, floor: floor, fixed: fixed, growth: growth(c), horizon: horizon(len(c.steps)),
			perToken: perToken, minStride: minStride, lowLimit: low, minLimit: minLimit,
		})
	}
	if !rq.long(b, longAt) {
		return foldPlan{Limit: b.limit, Stride: e.decide(ctx, rq, decisionFold, func() int { return plan(false).Stride })}
	}
	return e.longPlan(ctx, rq, b, decisionFoldLongLimit, decisionFoldLong, func() foldPlan { return plan(true) })
}

// longPlan returns a long conversation's frozen plan: its limit (never
// above the request's) decided as limitName, its stride as strideName,
// both from one plan made by make when either is not decided yet.
func (e *Engine) longPlan(ctx context.Context, rq *job, b budgets, limitName, strideName string, make func() foldPlan) foldPlan {
	var fp foldPlan
	made := func() foldPlan {
		if fp.Limit == 0 {
			fp = make()
		}
		return fp
	}
	limit := e.decide(ctx, rq, limitName, func() int { return made().Limit })
	stride := e.decide(ctx, rq, strideName, func() int { return made().Stride })
	return foldPlan{Limit: min(limit, b.limit), Stride: stride}
}

// longFull: a conversation has shown it is long when, as received, it is
// past this many times the limit. From then on full mode's plan for long
// conversations applies (foldPlanOf); a session of 1× the window never
// gets there. Chosen on the bill suite (BENCHMARKS.md).
const longFull = 1.5

// longCut: auto's cut takes its plan for long conversations once the
// conversation, as received, is past this many times the limit — later
// than full mode's folds (longFull). The plan expects as many requests
// again as the conversation has sent; made at 1.5× on the corpus at 32k,
// it lowered the limit of sessions that ended soon after (5f8cbb78 in
// Messages form 0.620 → 0.627 of uncondensed), made at 3× it lowered
// f67ab274's bill in every form (Messages 0.262 → 0.221) with the 10×
// sessions' unchanged (BENCHMARKS.md).
const longCut = 3.0

// long reports whether the conversation is over the threshold and, as
// received, past f times the limit.
func (rq *job) long(b budgets, f float64) bool {
	c := rq.received()
	return rq.over && float64(c.stepTokens(0, len(c.steps))) >= f*float64(b.limit)
}

// windowStrideOf returns how far the sliding window's cut moves at once
// (at the limit: the window is a last resort).
func (e *Engine) windowStrideOf(ctx context.Context, rq *job, b budgets, prefixTok int) int {
	return e.decide(ctx, rq, decisionWindow, func() int {
		c := rq.received()
		fixed := c.tokens(0, c.head) + b.overhead + prefixTok
		floor := fixed + markerTokens + recentTokens(c, b.keepRecent)
		return pricesOf(rq.limits).planFolds(foldCase{
			limit: b.limit, floor: floor, fixed: fixed, growth: growth(c), horizon: horizon(len(c.steps)),
			minStride: b.window / 50,
		}).Stride
	})
}

// cutPlanOf returns how the window's cut moves. auto's cut (the window
// with summaries of what it omits) takes full mode's plan for long
// conversations once the conversation has shown it is long (longCut): a
// plan made then that may lower the limit, down to the target — one
// planned bust, after which the condensed conversation is kept smaller
// and every request reads less (foldPlanOf). Its summaries are priced per
// token cut, as cutSummary writes them. Otherwise (false) the cut moves at
// the limit, by windowStrideOf's stride, which the caller looks up only
// when the cut moves.
func (e *Engine) cutPlanOf(ctx context.Context, rq *job, b budgets, prefixTok int) (foldPlan, bool) {
	if !rq.summarizeCut || prefixTok > 0 || !rq.long(b, longCut) {
		return foldPlan{Limit: b.limit}, false
	}
	return e.longPlan(ctx, rq, b, decisionCutLongLimit, decisionCutLong, func() foldPlan {
		c := rq.received()
		fixed := c.tokens(0, c.head) + b.overhead
		perToken := 0.0
		if !rq.extractiveSummaries && !rq.notes && e.summaryModel(rq) != "extractive" {
			perToken = e.summaryPerToken(rq, e.perCutSummaryTokens(b), b.chunk)
		}
		floor := fixed + b.cutSummary + recentTokens(c, b.keepRecent)
		return pricesOf(rq.limits).planFolds(foldCase{
			limit: b.limit, floor: floor, fixed: fixed, growth: growth(c), horizon: horizon(len(c.steps)),
			perToken: perToken, minStride: b.window / 50, lowLimit: true, minLimit: b.target,
		})
	}), true
}

// frontierStrideOf returns how far selective condensing's digest frontier
// moves at once; tail is what the protected newest outputs hold now.
func (e *Engine) frontierStrideOf(ctx context.Context, rq *job, b budgets, tail int) int {
	if e.opts.MinSavingsTokens > 0 {
		return e.opts.MinSavingsTokens
	}
	return e.decide(ctx, rq, decisionFrontier, func() int {
		s := pricesOf(rq.limits).frontierStride(tail, growth(rq.received()))
		// At most the gap between the limit and the target. Eager
		// digests under the threshold get the threshold's gap too:
		// bounded by a fiftieth of the window there, the frontier
		// moved, and busted the cache, every other request.
		gap := b.limit - b.target
		if e.opts.SelectiveEager && !rq.over {
			gap = b.trigger - b.target
		}
		return min(max(s, b.window/100), max(gap, b.window/50))
	})
}

func (e *Engine) budgets(rq *job) budgets {
	w := rq.limits.Window
	f := rq.limits.SafetyFactor
	if f < 1 {
		f = 1
	}
	// Budgets are compared with raw counts, so the safety factor is taken
	// out of the target here.
	tf := rq.limits.Target
	if tf <= 0 {
		tf = e.opts.Target
	}
	target := int(float64(w) * tf / f)
	trigger := int(float64(w) * rq.limits.Threshold / f)
	// A request over the threshold may be condensed to anywhere between
	// the target and the threshold: cuts then stay put while the request
	// grows append-only, and move by a stride (threshold - target) when it
	// crosses the threshold again. A request condensed while under the
	// threshold (forced, too many messages) goes to the target.
	limit := target
	if rq.over && trigger > target {
		limit = trigger
	}
	// The hard limit leaves the answer its room (at most a quarter of
	// the window).
	room := min(max(rq.limits.MaxOutput, 0), w/4)
	return budgets{
		target:  target,
		trigger: trigger,
		limit:   limit,
		window:  int(float64(w) / f),
		hard:    int(float64(w-room) / f),
		// auto's summaries stand where a window's marker would: what
		// they say in an eighth of the window at most, and as much again
		// for the facts they keep — the errors, decisions and paths of
		// what the cut omits (fitSummary; BENCHMARKS.md, "What the agent
		// keeps").
		cutSummary:      factRoom * max(min(e.opts.SummaryBudgetTokens, int(float64(w)/f)/8), 256),
		tightCutSummary: factRoom * max(min(e.opts.SummaryBudgetTokens, int(float64(w)/f)/32), 256),
		chunk:           e.opts.ChunkTokens,
		summary:         e.opts.SummaryBudgetTokens,
		keepRecent:      e.opts.KeepRecentTurns,
		overhead:        rq.overhead + e.relevantTokens(),
	}
}

// budgets of a condensation, in tokens.
type budgets struct {
	target     int // condense down to this when a cut has to move
	trigger    int // the threshold
	limit      int // a condensed request may grow up to this before a cut moves
	window     int
	hard       int // the window less the room the answer needs
	cutSummary int // auto's summaries in place of a window marker
	// tightCutSummary: theirs when the newest steps need the room
	tightCutSummary int
	chunk           int
	summary         int // summary tokens per level before folding upward
	keepRecent      int // steps always kept verbatim
	overhead        int // tools and reply priming
	// foldOnce: auto's fold of the conversation, made once and replayed
	// until it would move (decide.go's foldOnce).
	foldOnce bool
}

// auto's ways for a conversation (decisionAuto).
const (
	autoDigests = 1 // selective's digests, then the cut with summaries
	// autoFolds: full mode's first fold; from the fold's next move on,
	// the digests and the cut (decide.go).
	autoFolds = 2
)

// autoFoldsReason is what a request's reason says when auto folds.
const autoFoldsReason = "; folds priced below digests for this conversation"

// autoSwitchReason is what the request says whose fold would move, where
// auto takes the digests and the cut.
const autoSwitchReason = "; auto's fold would move: digests and the cut from here"

// autoFoldsOf decides, at the first condensation of a conversation in
// auto mode, which of its parts condenses it first: selective's digests
// (out, as digested, fits the limit) — or, when they would not pay before
// the cut has to come (cutNow, windowNowOf), the cut on their bust — or
// full mode's fold, dry-run. Each is priced over the requests expected to
// follow (cost.go's autoCase): the re-write of what follows its first
// edit, the summaries it must write, the reads of the requests that
// follow, and its later moves — a fold or a cut removes as much again
// each time; digests remove their share of what has aged past the
// frontier since the last move, re-writing the tail after it, until they
// cannot make room and auto cuts. The fold is priced as if the
// conversation kept folding, although auto folds once and then takes the
// digests and the cut (decide.go): a model of that (the digests' later
// moves, from the folded request) ranked the corpus's sessions further
// from their measured bills (BENCHMARKS.md, "auto folds once"). The
// choice is frozen: flipping between the two would re-write the prefix.
func (e *Engine) autoFoldsOf(ctx context.Context, rq *job, b budgets, out []byte, cutNow bool) bool {
	return e.decide(ctx, rq, decisionAuto, func() int {
		a, kept, ok := e.digestsCase(rq, b, out)
		if !ok {
			return autoDigests
		}
		folded, misses, ok := e.dryRun(rq, func(dry *job, r *Report) ([]byte, error) {
			return e.full(ctx, dry, b, r) // folds alone: no window
		})
		if !ok || folded.Total > b.limit {
			return autoDigests
		}
		a.folded, a.foldKept, a.summaries = folded.Total, kept(folded), e.summariesPrice(rq, b, misses)
		a.perToken = e.summariesPrice(rq, b, 1) / float64(max(b.chunk, 1))
		p := pricesOf(rq.limits)
		fold, digest := p.autoFoldsCost(a), p.autoDigestsCost(a)
		if cutNow {
			// The cut, dry-run over the digests, in place of the digests:
			// a fold of its own depth and summaries.
			cut, cutMisses, ok := e.dryRun(rq, func(dry *job, r *Report) ([]byte, error) {
				dry.summarizeCut = true
				return e.windowDigests(ctx, rq, dry, b, r)
			})
			if ok {
				ca := a
				ca.folded, ca.foldKept, ca.summaries = cut.Total, kept(cut), e.summariesPrice(rq, b, cutMisses)
				digest = p.autoFoldsCost(ca)
			}
		}
		if fold < digest {
			return autoFolds
		}
		return autoDigests
	}) == autoFolds
}

// digestsCase returns the part of auto's pricing (cost.go's autoCase)
// that rq's digests (out) and its conversation fill, and kept, the tokens
// a condensed request keeps identical to rq before its first edit; ok is
// false when out does not count.
func (e *Engine) digestsCase(rq *job, b budgets, out []byte) (a autoCase, kept func(*view.Request) int, ok bool) {
	digested, err := e.countOut(rq, out)
	if err != nil {
		return autoCase{}, nil, false
	}
	c := rq.received()
	in := summarizeForPrefix(rq.in)
	kept = func(r *view.Request) int { return sharedPrefix(in, summarizeForPrefix(r)) }
	return autoCase{
		in: rq.in.Total, limit: b.limit, growth: growth(c), horizon: horizon(len(c.steps)),
		digested: digested.Total, digestKept: kept(digested), tail: recentTokens(c, max(e.sel.KeepRecent(), 1)),
	}, kept, true
}

// windowDigests windows the body rq's digests made for dry, a dry run's
// job of rq (dryRun).
func (e *Engine) windowDigests(ctx context.Context, rq, dry *job, b budgets, r *Report) ([]byte, error) {
	dry.changes, dry.frontier = slices.Clone(rq.changes), rq.frontier
	dry.digestBody, dry.digestPatches = rq.digestBody, rq.digestPatches
	dry.decisions = maps.Clone(rq.decisions)
	return e.truncateBody(ctx, dry, true, b, r)
}

// selective mode's and auto's ways for a conversation
// (decisionWindowFirst).
const (
	windowLater = 1 // the digests; the window (auto: the cut) when they no longer fit
	windowNow   = 2 // the window over the digests from the first condensation
)

// windowNowReason is what a request's reason says when the window comes
// on the digests' first bust.
const windowNowReason = "; digests would not pay before the window: the window now, on their bust"

// windowNowOf decides, at the first condensation of a conversation in
// selective or auto mode, whose digests (out) fit the limit, whether the
// window — auto's cut — comes now, over the digests, rather than when
// they no longer fit. The digests' first edit re-writes the conversation
// from its oldest digest, near the head, and the window re-writes it
// again when it comes. When the digests make little room — few large
// outputs in a conversation that grows fast — the window comes within
// the requests expected to follow, and the tokens the digests remove,
// read until then, may not pay for their re-write: an edit that does not
// pay (the cost model's test) is not made alone; the window rides on its
// bust, and the second bust is saved (on sqlfluff-1763 at 32k the digests
// re-wrote 18.7k tokens to remove 4.5k for 14 requests: BENCHMARKS.md).
// Eager digests (selective.eager) are already forwarded when the
// threshold is crossed: no bust of theirs to ride on. The choice is made
// at the conversation's first condensation (first) and frozen; a
// conversation condensed before without it (its first digests did not
// fit, or an earlier version of the proxy) keeps its digests.
func (e *Engine) windowNowOf(ctx context.Context, rq *job, b budgets, out []byte, first bool) bool {
	if e.opts.SelectiveEager || e.opts.DigestsFirst {
		return false
	}
	return e.decide(ctx, rq, decisionWindowFirst, func() int {
		if !first {
			return windowLater
		}
		if a, _, ok := e.digestsCase(rq, b, out); !ok || pricesOf(rq.limits).digestsPay(a) {
			return windowLater
		}
		return windowNow
	}) == windowNow
}
