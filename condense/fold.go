package condense

import (
	"context"
	"errors"
	"fmt"

	"github.com/condense-proxy/condense-proxy/view"
)

// rebuild replaces the items of the request after the head, up to item
// rest, by inserted (raw items), leaving every other byte of the body as
// it was.
func rebuild(rq *job, inserted [][]byte, rest int) ([]byte, error) {
	out, err := spliced(rq, view.Edit{From: rq.conv.head, To: rest, Insert: inserted})
	if err != nil {
		return nil, fmt.Errorf("writing condensed messages: %w", err)
	}
	return out, nil
}

// errFoldMoves: auto's one fold of a conversation would move (fold.go's
// full, with budgets.foldOnce).
var errFoldMoves = errors.New("auto's fold would move")

// full folds the complete chunks before the tail into summaries. It
// returns nil when there is nothing to fold or the result is still over
// the target (the caller then uses the sliding window).
func (e *Engine) full(ctx context.Context, rq *job, b budgets, r *Report) ([]byte, error) {
	p, err := e.foldPlan(ctx, rq, b)
	if err != nil {
		return nil, err
	}
	if len(p.folded) == 0 {
		addReason(r, "; no complete chunk to summarize", PathNoChunk)
		return nil, nil
	}
	items, err := e.summarizeChunks(ctx, rq, e.foldSize(), p.folded)
	if err != nil {
		return nil, err
	}
	if items, err = e.foldLevels(ctx, rq, e.foldSize(), items, b.summary); err != nil {
		return nil, err
	}
	c := rq.conv
	rest := c.steps[p.foldEnd-1].end
	if p.foldEnd < len(c.steps) {
		rest = c.steps[p.foldEnd].first
	}
	summaryMsg, _ := e.summaryNote(ctx, rq, items, rest-c.head, rest)
	out, err := rebuild(rq, [][]byte{summaryMsg}, rest)
	if err != nil {
		return nil, err
	}
	levels := rq.addSummaryChanges(items, c)
	rc, err := e.countOut(rq, out)
	if err != nil {
		return nil, fmt.Errorf("counting condensed request: %w", err)
	}
	rq.reportSummaries(r, levels)
	windowed := rc.Total > b.limit
	if windowed {
		if out, err = e.windowAfterFold(ctx, rq, b, r, summaryMsg, p.foldEnd, rc.Total); out == nil {
			return nil, err
		}
	}
	r.Applied = AppliedFull
	if rq.noCalls != "" {
		// Nothing is prepared for a plan the budget could not pay for:
		// no request spends more than its budget, in the foreground or
		// behind it.
		addDegraded(r, DegradedCallBudget, rq.noCalls)
		return out, nil
	}
	e.prepareNextFold(ctx, rq, b, p, rc, rest, windowed)
	return out, nil
}

// foldPlan chooses the chunks full folds (none when no chunk is
// complete), within what the request may pay the summarizer for
// (fitCallBudget); errFoldMoves when auto's one fold would move (the
// caller then switches: decide.go). The break is decided at the
// conversation's first fold, once and for good (stored plus one: 1 is
// none): when its complete chunks cannot carry that fold a stride, its
// last chunk closes early, where the plan wants the fold.
func (e *Engine) foldPlan(ctx context.Context, rq *job, b budgets) (plan, error) {
	fp := e.foldPlanOf(ctx, rq, b, rq.conv)
	brk := e.decide(ctx, rq, decisionFoldBreak, func() int {
		if p := makePlan(rq.conv, b, fp, len(rq.conv.steps), 0, foldAt{}); p.short {
			return breakAt(rq.conv, b, fp, p) + 1
		}
		return 1
	}) - 1
	// A cold turn folds down to the target; the warm turns after it
	// never fold less than it did (cold.go).
	at := foldAt{cold: rq.cold}
	if !rq.cold {
		at.floor = e.coldFloor(ctx, rq, coldFold)
	}
	p := makePlan(rq.conv, b, fp, len(rq.conv.steps), brk, at)
	if len(p.folded) == 0 {
		return p, nil
	}
	p = e.fitCallBudget(ctx, rq, b, p)
	if rq.cold {
		e.keepColdFloor(ctx, rq, coldFold, p.foldEnd)
	}
	if b.foldOnce && e.decide(ctx, rq, decisionAutoFoldEnd, func() int { return p.foldEnd }) != p.foldEnd {
		return p, errFoldMoves
	}
	return p, nil
}

// windowAfterFold windows the verbatim steps from step foldEnd on after
// summaryMsg, the fold's summary, when the recent steps alone leave the
// request (tokens) over budget; nil when that fails or is not enough.
func (e *Engine) windowAfterFold(ctx context.Context, rq *job, b budgets, r *Report, summaryMsg []byte, foldEnd, tokens int) ([]byte, error) {
	out, err := e.window(ctx, rq, b, r, [][]byte{summaryMsg}, foldEnd)
	if err != nil || out == nil {
		addReason(r, fmt.Sprintf("; summaries left %d tokens, over the target %d", tokens, b.target), PathSummariesOverTarget)
		return nil, err
	}
	if rq.cutSummarized {
		// Stand-ins of the omitted steps in place of a marker: a
		// cheaper form, not less than promised.
		addReason(r, "; recent steps over budget: verbatim steps after the summary cut, extractive summaries in their place", PathRecentStepsCut)
	} else {
		addDegraded(r, DegradedRecentOverBudget, "recent steps over budget; older verbatim steps after the summary omitted")
	}
	return out, nil
}

// prepareNextFold writes the next fold's summaries in the background when
// it is near (requests grow unevenly: within a chunk, or a few requests'
// growth), so the request that folds finds them ready — not for auto's
// one fold: its next move is no fold, and auto never calls the summarizer
// for a summary it does not forward. Forwarded as it is (not windowed),
// the request (rc) is where they may be asked in place: the items from
// rest on follow the summary verbatim.
func (e *Engine) prepareNextFold(ctx context.Context, rq *job, b budgets, p plan, rc *view.Request, rest int, windowed bool) {
	if b.foldOnce || float64(rc.Total) <= float64(p.limit)-max(4*growth(rq.conv), float64(b.chunk)) {
		return
	}
	var base *inPlace
	if !windowed {
		base = e.inPlaceOf(ctx, rq, rc, rest, rq.conv.head+1-rest)
	}
	e.prepare(rq, base)
}

// fitCallBudget counts, before any call, the summaries the plan needs
// that are not in the cache (the chain of level-1 summaries from the
// first one missing, and about one merge for every groupSize-1 of them).
// When they are more than the request may pay for (max_summarizer_calls),
// it folds fewer chunks — the fewest after which the request still fits
// its limit — if that is within the budget; otherwise the job makes no
// call at all and extractive summaries stand in, not kept.
func (e *Engine) fitCallBudget(ctx context.Context, rq *job, b budgets, p plan) plan {
	if rq.noCalls != "" || rq.req.CountOnly || e.summaryModel(rq) == "extractive" {
		return p
	}
	model := e.summaryModel(rq)
	cached := len(p.folded)
	prevHash := ""
	for i, ch := range p.folded {
		from, to := rq.conv.steps[ch.a].first, rq.conv.steps[ch.b-1].end
		v, ok := e.getCache(ctx, summaryKey(rq.req.Scope, model, e.promptHash, 1, rq.received().hashMessages(from, to), prevHash))
		if !ok {
			cached = i
			break
		}
		prevHash = textHash(string(v))
	}
	need := func(k int) int { m := max(k-cached, 0); return m + m/(groupSize-1) }
	budget := e.opts.MaxSummarizerCalls - rq.calls
	if need(len(p.folded)) <= budget {
		return p
	}
	c := rq.conv
	fixed := c.tokens(0, c.head) + b.overhead + b.summary
	total := c.stepTokens(0, len(c.steps))
	folded := c.stepTokens(0, p.folded[0].a)
	for k := 1; k <= len(p.folded); k++ {
		ch := p.folded[k-1]
		folded += c.stepTokens(ch.a, ch.b)
		if fixed+total-folded > p.limit {
			continue
		}
		if need(k) > budget {
			break
		}
		p.folded, p.foldEnd = p.folded[:k], ch.b
		return p
	}
	rq.noCalls = fmt.Sprintf("this request needs about %d summaries not written yet, more than condense.max_summarizer_calls (%d); extractive summaries used", need(len(p.folded)), e.opts.MaxSummarizerCalls)
	return p
}

// groupSize is how many summaries of one level fold into one of the next.
const groupSize = 4

// chunk is a range of steps [a, b) summarized together.
type chunk struct{ a, b int }

// chunkSteps cuts steps into chunks of about chunkTokens, from the first
// step on: a chunk closes at the first step boundary where it holds
// chunkTokens or more, or at step brk (the conversation's frozen break,
// 0 for none: breakAt). Boundaries depend only on the steps before them,
// so they stay put as the conversation grows. Only complete chunks are
// returned; the open last one is not.
func chunkSteps(steps []step, chunkTokens, brk int) []chunk {
	var out []chunk
	start, acc := 0, 0
	for i, s := range steps {
		acc += s.tokens
		if acc >= chunkTokens || i+1 == brk {
			out = append(out, chunk{start, i + 1})
			start, acc = i+1, 0
		}
	}
	return out
}

// plan is where a request is cut.
type plan struct {
	limit   int     // the request folds further when it outgrows this
	folded  []chunk // complete chunks folded into summaries
	foldEnd int     // first step after the folded chunks
	// short: no grid point was reached, the chunks that may fold hold
	// less than a stride; open is the first step after them.
	short bool
	open  int
}

// breakAt returns where a conversation's first fold closes its last chunk
// when its complete chunks cannot carry the fold a stride (p is short): at
// a small window the chunks are coarse — one 12k chunk of a 25k request —
// and a fold that stops at the last complete one leaves the request well
// above the depth the cost model planned, to bust again a few requests
// later. The break is the first step after the complete chunks at which
// the request fits the plan's limit less its stride (counted as makePlan
// counts), at most the newest step outside the recent turns; 0 when no
// step lies between the two.
func breakAt(c *conversation, b budgets, fp foldPlan, p plan) int {
	last := len(c.steps) - b.keepRecent
	if last <= p.open {
		return 0
	}
	fixed := c.tokens(0, c.head) + b.overhead + b.summary
	total := c.stepTokens(0, len(c.steps))
	goal := min(b.limit, fp.Limit) - fp.Stride
	folded := c.stepTokens(0, p.open)
	for s := p.open; s < last; s++ {
		if folded += c.steps[s].tokens; fixed+total-folded <= goal {
			return s + 1
		}
	}
	return last
}

// foldAt is where a cold turn asks the fold to reach (cold.go): cold, the
// first grid point after which the request fits the target, or else every
// chunk that may fold; floor, when above 0, is the step a cold turn folded
// up to, which a warm turn's fold reaches at least.
type foldAt struct {
	cold  bool
	floor int
}

// makePlan chooses how many complete chunks fold into summaries. Fold
// points lie on a grid over the chunks, stride tokens apart from the start
// of the conversation, so they never move as the conversation grows: the
// plan folds up to the first grid point after which the request fits its
// limit (with a full summary budget), and keeps every later step
// verbatim. The condensed request then grows append-only turn after turn
// — its prefix byte-identical, so provider prompt caches stay warm —
// until it outgrows the limit, and the fold jumps a whole stride at once,
// down to about limit − stride. The stride is the cost model's choice for
// the conversation (plan.go), frozen at its first fold. Only chunks that
// end at or before step maxStep, and before the newest keepRecent steps,
// may fold; brk is the conversation's break (breakAt), 0 for none; at,
// a cold turn's ask (foldAt).
func makePlan(c *conversation, b budgets, fp foldPlan, maxStep, brk int, at foldAt) plan {
	stride := fp.Stride
	chunks := chunkSteps(c.steps, b.chunk, brk)
	most := 0 // chunks that may fold
	for i, ch := range chunks {
		if ch.b <= len(c.steps)-b.keepRecent && ch.b <= maxStep {
			most = i + 1
		}
	}
	fixed := c.tokens(0, c.head) + b.overhead + b.summary
	total := c.stepTokens(0, len(c.steps))
	limit := min(b.limit, fp.Limit)
	goal := limit
	if at.cold {
		goal = min(goal, b.target)
	}
	// The fold: the first grid point after which the request fits the
	// plan's limit. When none does (the steps that may fold are too few:
	// auto folds only what its digest frontier passed), the last grid
	// point, as long as the request then fits the threshold — the fold
	// stays put instead of following every chunk that completes — and
	// everything that may fold only past the threshold.
	var p plan
	fold, lastGrid, lastRest := -1, 0, 0
	folded, acc := 0, 0 // tokens folded; since the last grid point
	for i := 0; i < most; i++ {
		n := c.stepTokens(chunks[i].a, chunks[i].b)
		folded += n
		acc += n
		if acc < stride {
			continue // not a grid point
		}
		acc = 0
		lastGrid, lastRest = i+1, fixed+total-folded
		if lastRest <= goal {
			fold = i + 1
			break
		}
	}
	if fold < 0 {
		p.short = true
		if most > 0 {
			p.open = chunks[most-1].b
		}
		fold = most
		if lastGrid > 0 && lastRest <= b.limit && !at.cold {
			fold = lastGrid
		}
	}
	for fold < most && at.floor > 0 && (fold == 0 || chunks[fold-1].b < at.floor) {
		fold++ // not less than the last cold turn folded
	}
	p.limit = limit
	if fold > 0 {
		p.folded = chunks[:fold]
		p.foldEnd = chunks[fold-1].b
	}
	return p
}
