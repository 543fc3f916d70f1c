package condense

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/condense-proxy/condense-proxy/selective"
)

// errTooLarge: even the head and the last step do not fit the window.
var errTooLarge = errors.New("head and last step alone exceed the context window")

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
	// What stands for the omitted steps: auto's cut and a window after a
	// fold's summary carry stand-ins of them (summaries, cutSummary —
	// extractive after a fold, whose summary was the LLM's work), within
	// the cut summaries' budget; the sliding window of truncate mode, a
	// marker.
	standIn := rq.summarizeCut || len(prefix) > 0
	note := markerTokens
	if standIn {
		note = b.cutSummary
	}
	fixed := c.tokens(0, c.head) + b.overhead + prefixTok + note
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
	plan, planned := e.cutPlanOf(ctx, rq, b, prefixTok)
	held := -1 // the tokens of auto's summaries at the stored cut, when read
	// holds reports whether the request fits limit with the stored cut.
	// Over it with the summaries' budget, auto's cut stays while the
	// request fits with the summaries it carries, as written — the
	// budget is their bound, not their size.
	holds := func(limit int) bool {
		if fixed+c.stepTokens(keep, len(c.steps)) <= limit {
			return true
		}
		if held < 0 && rq.summarizeCut && len(prefix) == 0 {
			held = e.storedNote(ctx, rq, cutKey, keep)
		}
		return held >= 0 && fixed-note+held+c.stepTokens(keep, len(c.steps)) <= limit
	}
	// The cut moves when the request outgrows the plan's limit with it;
	// on a cold turn, when it is over the target with it: the move the
	// plan would make later, made now, when it busts nothing (cold.go).
	moveAt := plan.Limit
	if rq.cold {
		moveAt = min(moveAt, b.target)
	}
	if keep >= 0 && !holds(moveAt) {
		keep, held = -1, -1
	}
	if keep < 0 {
		// The cut jumps to about limit − stride, the depth the cost
		// model chose for the conversation (at least to the target on a
		// cold turn).
		if !planned {
			plan.Stride = e.windowStrideOf(ctx, rq, b, prefixTok)
		}
		stride := plan.Stride
		fit := max(plan.Limit-stride, 0)
		if !rq.over || rq.cold {
			fit = min(fit, b.target)
		}
		grid := rq.gridTokens()
		acc := 0
		for g := firstStep; g <= must; g++ {
			if g > firstStep {
				acc += grid[g-1]
				if acc < stride && g < must {
					continue
				}
				acc = 0
			}
			if fixed+c.stepTokens(g, len(c.steps)) <= fit {
				keep = g
				break
			}
		}
		// No grid point fits (the grid is coarse where single steps are
		// large): the first step after which it fits.
		for g := firstStep + 1; keep < 0 && g <= must; g++ {
			if fixed+c.stepTokens(g, len(c.steps)) <= fit {
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
	moved := e.storeCut(ctx, rq, cutKey, keep)
	from, rest := c.steps[firstStep].first, c.steps[keep].first
	if rest == from {
		if !rq.shrunk {
			return nil, nil
		}
		// The digests inside the newest steps were enough: nothing more
		// is omitted after the prefix.
		if len(prefix) == 0 {
			return digestsOnly(rq)
		}
		return rebuild(rq, prefix, from)
	}
	if standIn {
		// Summaries of what the cut omits in place of the marker.
		extractive := rq.extractiveSummaries
		if len(prefix) > 0 {
			rq.extractiveSummaries = true
		}
		note, text, err := e.cutSummary(ctx, rq, b, r, firstStep, keep)
		rq.extractiveSummaries = extractive
		if err != nil {
			return nil, err
		}
		if note != nil && len(prefix) > 0 {
			return rebuild(rq, append(append([][]byte{}, prefix...), note), rest)
		}
		if note != nil {
			// Counted for a new cut, or when its summaries were read.
			if moved || held >= 0 {
				if tok := e.counter.Text(rq.limits.Encoding, text); moved || tok != held {
					e.storeNote(ctx, rq, cutKey, keep, tok)
				}
			}
			return rebuild(rq, [][]byte{note}, rest)
		}
	}
	// The marker names the received items it replaces (not digests made
	// of them): its id stays while the cut does.
	oc := rq.received()
	id := oc.hashMessages(from, rest)
	e.storeOriginals(ctx, rq, id, from, rest)
	text := fmt.Sprintf("[condense-proxy: %d earlier messages were omitted here to fit the context window. Originals: GET /v1/condense/originals/%s]", rest-from, id)
	text += e.relevantBlock(ctx, rq, id, rest, "")
	marker := rq.codec.Note(text)
	rq.changes = append(rq.changes, Change{Kind: ChangeWindow, ID: id, From: from, To: rest,
		TokensBefore: oc.tokens(from, rest), TokensAfter: e.counter.Text(rq.limits.Encoding, string(marker)), Text: text})
	inserted := append(append([][]byte{}, prefix...), marker)
	return rebuild(rq, inserted, rest)
}

// cutKey names where a conversation's window cut is remembered: per
// caller, conversation and kind of window (after a summary or not).
func (rq *job) cutKey(afterSummary bool) string {
	if afterSummary {
		return rq.stateKey("cut:s")
	}
	return rq.stateKey("cut:w")
}

// storedCut returns the step where the conversation's previous window cut
// was, when it is still a step boundary of this request, holding the
// same item, between firstStep and must; -1 otherwise.
func (e *Engine) storedCut(ctx context.Context, rq *job, key string, firstStep, must int) int {
	v, ok := e.getState(ctx, key)
	if !ok {
		return -1
	}
	idxS, hash, ok := strings.Cut(string(v), ":")
	idx, err := strconv.Atoi(idxS)
	c := rq.conv
	// The item at the cut as received: a digest made of it later (the
	// frontier passing it) does not move the cut.
	if !ok || err != nil || idx < 0 || idx >= c.len() || hash != rq.received().hashMessages(idx, idx+1) {
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
// requests, and not when it is already there), and reports whether it
// was not.
func (e *Engine) storeCut(ctx context.Context, rq *job, key string, keep int) bool {
	if !rq.keeps() {
		return false
	}
	v := rq.cutValue(keep)
	if old, ok := e.getState(ctx, key); ok && string(old) == v {
		return false
	}
	e.setCache(ctx, key, []byte(v))
	return true
}

// cutValue is what a cut at step keep is remembered by: its item's
// index and hash as received.
func (rq *job) cutValue(keep int) string {
	idx := rq.conv.steps[keep].first
	return strconv.Itoa(idx) + ":" + rq.received().hashMessages(idx, idx+1)
}

// storeNote remembers the tokens of the summaries auto's cut at step keep
// carries, beside the cut (key is the cut's): read only when the request
// is over the limit with the summaries' budget (storedNote).
func (e *Engine) storeNote(ctx context.Context, rq *job, key string, keep, tokens int) {
	if rq.keeps() {
		e.setCache(ctx, key+":note", []byte(rq.cutValue(keep)+":"+strconv.Itoa(tokens)))
	}
}

// storedNote returns the tokens storeNote remembered for the cut at step
// keep, or -1 when it remembered none for that cut.
func (e *Engine) storedNote(ctx context.Context, rq *job, key string, keep int) int {
	v, ok := e.getState(ctx, key+":note")
	if !ok {
		return -1
	}
	at := rq.cutValue(keep) + ":"
	tok, ok := strings.CutPrefix(string(v), at)
	n, err := strconv.Atoi(tok)
	if !ok || err != nil || n < 0 {
		return -1
	}
	return n
}

// shrinkNewest digests the largest tool outputs inside steps [must, end),
// largest first, until need tokens are freed, then windows the result.
// Every call keeps its result: only a result's text is replaced; the
// steps' own texts (the user's prompts, the assistant's answers) are never
// digested (selective's Pick takes tool outputs only). It returns nil when
// nothing could be digested.
func (e *Engine) shrinkNewest(ctx context.Context, rq *job, r *Report, prefix [][]byte, firstStep, must, need int) ([]byte, error) {
	c := rq.conv
	msgs := selective.Messages(c.req)
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
	res, err := e.digest(ctx, rq, selective.Request{
		Body: rq.in.Body, Messages: msgs, Codec: selectiveCodec(rq), Encoding: rq.limits.Encoding, Need: need, Pick: pick, Scope: rq.req.Scope, CacheOnly: rq.req.CountOnly,
		Keep: func(id string, original func() []byte) { e.keepOriginal(ctx, rq, id, original) },
	})
	if err != nil || res.Digested == 0 {
		return nil, err
	}
	vr, err := e.countOut(rq, res.Body)
	if err != nil {
		return nil, fmt.Errorf("counting shrunk request: %w", err)
	}
	// The window is planned on the digested copy; what it forwards is
	// written from the request as received (sub.base), in one pass.
	// auto's cut keeps its summaries there too (summarizeCut).
	sub := rq.overDigests(vr, res.Patches)
	sub.shrunk, sub.degraded = true, rq.degraded
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
	rq.adopt(sub)
	rq.degraded = sub.degraded
	rq.countedOut, rq.out = sub.countedOut, sub.out
	addDegraded(r, fmt.Sprintf("newest steps over budget; %d of their tool outputs digested", res.Digested))
	return out, nil
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
	if rq.cutSummarized {
		r.Applied = AppliedFull
	}
	return out, nil
}
