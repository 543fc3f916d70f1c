package condense

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/condense-proxy/condense-proxy/selective"
	"github.com/condense-proxy/condense-proxy/view"
)

// errTooLarge: even the head and the last step do not fit the window.
var errTooLarge = errors.New("head and last step alone exceed the context window")

// rebuild replaces the items of the request after the head, up to item
// rest, by inserted (raw items), leaving every other byte of the body as
// it was.
func rebuild(rq *job, inserted [][]byte, rest int) ([]byte, error) {
	out, err := rq.codec.Splice(rq.in, view.Edit{From: rq.conv.head, To: rest, Insert: inserted})
	if err != nil {
		return nil, fmt.Errorf("writing condensed messages: %w", err)
	}
	return out, nil
}

// full folds the complete chunks before the tail into summaries. It
// returns nil when there is nothing to fold or the result is still over
// the target (the caller then uses the sliding window).
func (e *Engine) full(ctx context.Context, rq *job, b budgets, r *Report) ([]byte, error) {
	p := makePlan(rq.conv, b)
	if len(p.folded) == 0 {
		r.Reason += "; no complete chunk to summarize"
		return nil, nil
	}
	items, err := e.summarizeChunks(ctx, rq, p.folded)
	if err != nil {
		return nil, err
	}
	if items, err = e.foldLevels(ctx, rq, items, b.summary); err != nil {
		return nil, err
	}
	c := rq.conv
	rest := c.steps[p.foldEnd-1].end
	if p.foldEnd < len(c.steps) {
		rest = c.steps[p.foldEnd].first
	}
	summaryText := renderSummary(items, rest-c.head)
	summaryMsg := rq.codec.Note(summaryText)
	out, err := rebuild(rq, [][]byte{summaryMsg}, rest)
	if err != nil {
		return nil, err
	}
	levels := map[int]int{}
	for _, it := range items {
		levels[it.level]++
		rq.changes = append(rq.changes, Change{Kind: ChangeSummary, ID: it.id, Level: it.level, From: it.from, To: it.to,
			TokensBefore: c.tokens(it.from, it.to), TokensAfter: it.tokens, Text: it.text})
	}
	rc, err := e.countOut(rq, out)
	if err != nil {
		return nil, fmt.Errorf("counting condensed request: %w", err)
	}
	r.Summaries = formatLevels(levels)
	r.Cache = cacheState(rq.hits, rq.misses)
	if len(rq.degraded) > 0 {
		// The first reason: what a fold summarized later repeats it.
		addDegraded(r, rq.degraded[0])
	}
	if rc.Total > b.limit {
		// The recent steps alone are over budget: keep the summary and
		// window the verbatim steps after it.
		out, err = e.window(ctx, rq, b, r, [][]byte{summaryMsg}, p.foldEnd)
		if err != nil || out == nil {
			r.Reason += fmt.Sprintf("; summaries left %d tokens, over the target %d", rc.Total, b.target)
			return nil, err
		}
		addDegraded(r, "recent steps over budget; older verbatim steps after the summary omitted")
	}
	r.Applied = AppliedFull
	if rc.Total+b.summary > p.limit-b.stride/2 {
		// The next fold is near: its summaries are written in the
		// background, so the request that folds finds them ready.
		e.prepare(rq)
	}
	return out, nil
}

const markerTokens = 80

// window keeps the head, prefix (already-rendered items, may be empty),
// a marker saying what was omitted, and the newest steps from step
// firstStep on that fit the target: at least the newest keepRecent steps
// (or, when even those cannot fit the window, the newest one). When those
// newest steps alone are over the target, their largest tool outputs are
// digested first (shrinkNewest), so the agent keeps every call it just
// made with a digest of its result rather than losing the step. It
// returns nil when nothing would change.
func (e *Engine) window(ctx context.Context, rq *job, b budgets, r *Report, prefix [][]byte, firstStep int) ([]byte, error) {
	c := rq.conv
	if firstStep >= len(c.steps) {
		return nil, nil
	}
	prefixTok := 0
	for _, p := range prefix {
		prefixTok += e.counter.Text(rq.limits.Encoding, string(p))
	}
	fixed := c.tokens(0, c.head) + b.overhead + prefixTok + markerTokens
	last := len(c.steps) - 1
	must := max(firstStep, len(c.steps)-b.keepRecent, 0)
	must = min(must, last)
	if fixed+c.stepTokens(must, len(c.steps)) > b.limit && !rq.shrunk {
		need := fixed + c.stepTokens(must, len(c.steps)) - b.limit
		out, err := e.shrinkNewest(ctx, rq, r, prefix, firstStep, must, need)
		if out != nil || err != nil {
			return out, err
		}
	}
	// The cut. The conversation's previous cut stays while the request
	// still fits the limit with it: the request grows append-only and its
	// prefix stays byte-identical. Past the limit, the cut jumps to the
	// first point of a grid laid a stride apart from firstStep (on the
	// received request's counts) after which the request fits the target:
	// one large step, then append-only again.
	cutKey := rq.cutKey(len(prefix) > 0)
	keep := e.storedCut(ctx, rq, cutKey, firstStep, must)
	if keep >= 0 && fixed+c.stepTokens(keep, len(c.steps)) > b.limit {
		keep = -1
	}
	if keep < 0 {
		grid := rq.gridTokens()
		acc := 0
		for g := firstStep; g <= must; g++ {
			if g > firstStep {
				acc += grid[g-1]
				if acc < b.stride && g < must {
					continue
				}
				acc = 0
			}
			if fixed+c.stepTokens(g, len(c.steps)) <= b.target {
				keep = g
				break
			}
		}
		// No grid point fits the target (the grid is coarse where single
		// steps are large): the first step after which it fits.
		for g := firstStep + 1; keep < 0 && g <= must; g++ {
			if fixed+c.stepTokens(g, len(c.steps)) <= b.target {
				keep = g
			}
		}
	}
	if keep < 0 {
		keep = must
		if fixed+c.stepTokens(must, len(c.steps)) > b.window {
			keep = last
			if fixed+c.steps[last].tokens > b.window {
				return nil, errTooLarge
			}
		}
	}
	e.storeCut(ctx, rq, cutKey, keep)
	from, rest := c.steps[firstStep].first, c.steps[keep].first
	if rest == from {
		if !rq.shrunk {
			return nil, nil
		}
		// The digests inside the newest steps were enough: nothing more
		// is omitted after the prefix.
		if len(prefix) == 0 {
			return rq.in.Body, nil
		}
		return rebuild(rq, prefix, from)
	}
	// The marker names the received items it replaces (not digests made
	// of them): its id stays while the cut does.
	oc := rq.received()
	id := oc.hashMessages(from, rest)
	e.storeOriginals(ctx, rq, id, from, rest)
	text := fmt.Sprintf("[condense-proxy: %d earlier messages were omitted here to fit the context window. Originals: GET /v1/condense/originals/%s]", rest-from, id)
	marker := rq.codec.Note(text)
	rq.changes = append(rq.changes, Change{Kind: ChangeWindow, ID: id, From: from, To: rest,
		TokensBefore: oc.tokens(from, rest), TokensAfter: e.counter.Text(rq.limits.Encoding, string(marker)), Text: text})
	inserted := append(append([][]byte{}, prefix...), marker)
	return rebuild(rq, inserted, rest)
}

// cutKey names where a conversation's window cut is remembered: per
// caller, conversation and kind of window (after a summary or not).
func (rq *job) cutKey(afterSummary bool) string {
	kind := "w"
	if afterSummary {
		kind = "s"
	}
	return "cut:" + kind + ":" + rq.req.Scope + ":" + rq.conv.hashMessages(0, rq.conv.head)
}

// storedCut returns the step where the conversation's previous window cut
// was, when it is still a step boundary of this request, holding the
// same item, between firstStep and must; -1 otherwise.
func (e *Engine) storedCut(ctx context.Context, rq *job, key string, firstStep, must int) int {
	v, ok := e.getCache(ctx, key)
	if !ok {
		return -1
	}
	idxS, hash, ok := strings.Cut(string(v), ":")
	idx, err := strconv.Atoi(idxS)
	c := rq.conv
	if !ok || err != nil || idx < 0 || idx >= c.len() || hash != c.hashMessages(idx, idx+1) {
		return -1
	}
	for g := firstStep + 1; g <= must; g++ {
		if c.steps[g].first == idx {
			return g
		}
	}
	return -1
}

// storeCut remembers the window cut at step keep (not for counting
// requests, and not when it is already there).
func (e *Engine) storeCut(ctx context.Context, rq *job, key string, keep int) {
	if rq.req.CountOnly {
		return
	}
	c := rq.conv
	idx := c.steps[keep].first
	v := strconv.Itoa(idx) + ":" + c.hashMessages(idx, idx+1)
	if old, ok := e.getCache(ctx, key); ok && string(old) == v {
		return
	}
	e.setCache(ctx, key, []byte(v))
}

// shrinkNewest digests the largest tool outputs (and pasted tool results
// in user messages) inside steps [must, end), largest first, until need
// tokens are freed, then windows the result. Every call keeps its result:
// only a result's text is replaced. It returns nil when nothing could be
// digested.
func (e *Engine) shrinkNewest(ctx context.Context, rq *job, r *Report, prefix [][]byte, firstStep, must, need int) ([]byte, error) {
	c := rq.conv
	msgs := selectiveView(c)
	// Largest first, but the newest step's own outputs last: the agent
	// keeps what it just asked for verbatim as long as anything else can
	// give way.
	first, newest := c.steps[must].first, c.steps[len(c.steps)-1].first
	var pick []int
	for i, m := range msgs {
		if m.Item >= first {
			pick = append(pick, i)
		}
	}
	sort.SliceStable(pick, func(a, b int) bool {
		ma, mb := msgs[pick[a]], msgs[pick[b]]
		if na, nb := ma.Item >= newest, mb.Item >= newest; na != nb {
			return nb
		}
		return ma.Tokens > mb.Tokens
	})
	res, err := e.sel.Apply(ctx, selective.Request{
		Body: rq.in.Body, Messages: msgs, Need: need, Pick: pick, Scope: rq.req.Scope, CacheOnly: rq.req.CountOnly,
		Keep: func(id string, original func() []byte) { e.keepOriginal(ctx, rq, id, original) },
	})
	if err != nil || res.Digested == 0 {
		return nil, err
	}
	vr, err := e.countOut(rq, res.Body)
	if err != nil {
		return nil, fmt.Errorf("counting shrunk request: %w", err)
	}
	sub := &job{req: rq.req, codec: rq.codec, model: rq.model, limits: rq.limits, in: vr, stop: rq.stop, shrunk: true,
		changes: rq.changes, degraded: rq.degraded, over: rq.over, grid: rq.gridTokens(), orig: rq.received()}
	if err := e.parse(sub); err != nil {
		return nil, err
	}
	for _, d := range res.Made {
		sub.changes = append(sub.changes, Change{Kind: ChangeDigest, ID: d.ID, From: d.Item, To: d.Item + 1, Tool: d.Tool,
			TokensBefore: d.Before, TokensAfter: d.After, Text: d.Text})
	}
	out, err := e.window(ctx, sub, e.budgets(sub), r, prefix, firstStep)
	if err != nil || out == nil {
		return nil, err
	}
	rq.changes = sub.changes
	rq.countedOut, rq.out = sub.countedOut, sub.out
	addDegraded(r, fmt.Sprintf("newest steps over budget; %d of their tool outputs digested", res.Digested))
	return out, nil
}

func formatLevels(levels map[int]int) string {
	keys := make([]int, 0, len(levels))
	for k := range levels {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("l%d=%d", k, levels[k]))
	}
	return strings.Join(parts, ",")
}

func cacheState(hits, misses int) string {
	switch {
	case hits+misses == 0:
		return ""
	case misses == 0:
		return "hit"
	case hits == 0:
		return "miss"
	default:
		return "partial"
	}
}

// truncate keeps the head, a marker saying what was omitted, and the
// newest steps that fit the target (at least the last one).
func (e *Engine) truncate(ctx context.Context, rq *job, b budgets, r *Report) ([]byte, error) {
	out, err := e.window(ctx, rq, b, r, nil, 0)
	if errors.Is(err, errTooLarge) {
		addDegraded(r, "request too large to condense: "+errTooLarge.Error())
	}
	if err != nil {
		return nil, err
	}
	if out == nil {
		r.Reason += "; every step is needed verbatim"
		return nil, nil
	}
	r.Applied = AppliedTruncate
	return out, nil
}

// prepare summarizes, in the background, the chunks a coming condensation
// will need, so the request that crosses the threshold finds them cached.
// At most PrepareConcurrency run at once; others are skipped, not queued.
func (e *Engine) prepare(rq *job) {
	if e.cache == nil || rq.req.CountOnly {
		return
	}
	// The work outlives the request, whose body buffer may be reused: it
	// runs on its own copy (item offsets stay the same), as a job of its
	// own that no request deadline stops.
	in := *rq.in
	in.Body = bytes.Clone(in.Body)
	in.Items = append([]view.Item(nil), in.Items...)
	in.Parsed = false
	rq = &job{req: rq.req, codec: rq.codec, model: rq.model, limits: rq.limits, in: &in, over: rq.over}
	if err := e.parse(rq); err != nil || len(rq.conv.steps) == 0 {
		return
	}
	key := rq.req.Scope + ":" + rq.conv.hashMessages(0, rq.conv.head)
	if _, busy := e.preparing.LoadOrStore(key, struct{}{}); busy {
		return
	}
	select {
	case e.prepareSem <- struct{}{}:
	default:
		e.preparing.Delete(key)
		return
	}
	// Across replicas: the conversation is being prepared while the
	// shared lock is held (renewed while the work runs).
	unlock := func() {}
	if l, ok := e.cache.(Locker); ok {
		release, got := l.Lock(context.Background(), "prepare:"+key, e.opts.SummaryTimeout+5*time.Second)
		if !got {
			<-e.prepareSem
			e.preparing.Delete(key)
			return
		}
		unlock = release
	}
	// Detached from the request: the agent does not wait for this, and it
	// must finish even if this request's client leaves.
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		defer func() { unlock(); <-e.prepareSem; e.preparing.Delete(key) }()
		ctx := context.Background()
		b := e.budgets(rq)
		// Prepare every chunk outside the recent turns: the request that
		// crosses the threshold will be longer than this one and fold at
		// least as much.
		var folded []chunk
		for _, ch := range chunkSteps(rq.conv.steps, b.chunk) {
			if ch.b > len(rq.conv.steps)-b.keepRecent {
				break
			}
			folded = append(folded, ch)
		}
		if len(folded) == 0 {
			return
		}
		items, err := e.summarizeChunks(ctx, rq, folded)
		if err == nil {
			_, err = e.foldLevels(ctx, rq, items, b.summary)
		}
		if err != nil {
			e.log.Warn("background summary preparation failed", "err", err)
			return
		}
		e.log.Debug("summaries prepared ahead", "chunks", len(folded), "summarizer_calls", rq.calls)
	}()
}

// addDegraded appends a fallback's reason to the report.
func addDegraded(r *Report, why string) {
	if r.Degraded == "" {
		r.Degraded = why
	} else if !strings.Contains(r.Degraded, why) {
		r.Degraded += "; " + why
	}
}
