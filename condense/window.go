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
	w := e.frameOf(rq, b, prefix, firstStep)
	if need := w.kept(rq, w.must) - b.limit; need > 0 && !rq.shrunk {
		out, err := e.shrinkNewest(ctx, rq, r, prefix, firstStep, w.must, need)
		if out != nil || err != nil {
			return out, err
		}
	}
	keep, held, err := e.windowCut(ctx, rq, b, &w)
	if err != nil {
		return nil, err
	}
	moved := e.storeCut(ctx, rq, w.key, keep)
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
	if w.standIn {
		return e.standInCut(ctx, rq, b, r, prefix, w, keep, moved, held)
	}
	return e.markerCut(ctx, rq, prefix, from, rest)
}

// windowFrame is what a window's cut is chosen within.
type windowFrame struct {
	firstStep int // the first step the window may omit
	must      int // the first of the newest steps it keeps in any case
	prefixTok int // the tokens of the rendered items before the steps
	// note is the budget of what stands for the omitted steps: auto's
	// cut and a window after a fold's summary carry stand-ins of them
	// (standIn: summaries, cutSummary — extractive after a fold, whose
	// summary was the LLM's work), within the cut summaries' budget; the
	// sliding window of truncate mode, a marker.
	note         int
	standIn      bool
	afterSummary bool   // the window follows a fold's summary (prefix)
	fixed        int    // the tokens kept besides the steps: head, overhead, prefix and note
	key          string // where the conversation's cut is remembered (cutKey)
}

// frameOf returns the frame of a window of rq after prefix from step
// firstStep on (its key is set by windowCut).
func (e *Engine) frameOf(rq *job, b budgets, prefix [][]byte, firstStep int) windowFrame {
	c := rq.conv
	w := windowFrame{firstStep: firstStep, note: markerTokens, afterSummary: len(prefix) > 0}
	w.standIn = rq.summarizeCut || w.afterSummary
	for _, p := range prefix {
		w.prefixTok += e.counter.Text(rq.limits.Encoding, string(p))
	}
	w.must = min(max(firstStep, len(c.steps)-b.keepRecent, 0), len(c.steps)-1)
	base := c.tokens(0, c.head) + b.overhead + w.prefixTok
	if w.standIn {
		// The stand-ins' budget, unless the newest steps need that room
		// to stay verbatim under the limit: then the small one.
		w.note = b.cutSummary
		if base+w.note+c.stepTokens(w.must, len(c.steps)) > b.limit {
			w.note = b.tightCutSummary
		}
	}
	w.fixed = base + w.note
	return w
}

// windowCut chooses the step the window keeps from. The conversation's
// previous cut stays while the request still fits the limit with it: the
// request grows append-only and its prefix stays byte-identical. Past the
// limit, the cut jumps to the first point of a grid laid a stride apart
// from firstStep (on the received request's counts) after which the
// request fits the target: one large step, then append-only again. When
// none fits, the newest steps that must stay, or the last one alone
// (errTooLarge when even that does not fit the window). held is the
// tokens of auto's summaries at a stored cut, when read (-1 otherwise).
func (e *Engine) windowCut(ctx context.Context, rq *job, b budgets, w *windowFrame) (keep, held int, err error) {
	c := rq.conv
	w.key = rq.cutKey(w.afterSummary)
	keep = e.storedCut(ctx, rq, w.key, w.firstStep, w.must)
	plan, planned := e.cutPlanOf(ctx, rq, b, w.prefixTok)
	// The cut moves when the request outgrows the plan's limit with it;
	// on a cold turn, when it is over the target with it: the move the
	// plan would make later, made now, when it busts nothing (cold.go).
	moveAt := plan.Limit
	if rq.cold {
		moveAt = min(moveAt, b.target)
	}
	if keep, held = e.heldCut(ctx, rq, *w, moveAt, keep); keep >= 0 {
		return keep, held, nil
	}
	// The cut jumps to about limit − stride, the depth the cost model
	// chose for the conversation (at least to the target on a cold turn).
	if !planned {
		plan.Stride = e.windowStrideOf(ctx, rq, b, w.prefixTok)
	}
	if keep = w.gridCut(rq, b, plan); keep >= 0 {
		return keep, -1, nil
	}
	last := len(c.steps) - 1
	switch {
	case w.kept(rq, w.must) <= b.window:
		return w.must, -1, nil
	case w.kept(rq, last) <= b.window:
		return last, -1, nil
	}
	return 0, -1, errTooLarge
}

// heldCut returns keep, the stored cut (-1: none), while the request fits
// limit with it. Over that limit with the summaries' budget, auto's cut
// stays while the request fits with the summaries it carries, as written
// — the budget is their bound, not their size —, and held is their
// tokens; -1 otherwise. It returns -1, -1 when the cut must move.
func (e *Engine) heldCut(ctx context.Context, rq *job, w windowFrame, limit, keep int) (int, int) {
	c := rq.conv
	if keep < 0 || w.kept(rq, keep) <= limit {
		return keep, -1
	}
	held := -1
	if rq.summarizeCut && !w.afterSummary {
		held = e.storedNote(ctx, rq, w.key, keep)
	}
	if held < 0 || w.fixed-w.note+held+c.stepTokens(keep, len(c.steps)) > limit {
		return -1, -1
	}
	return keep, held
}

// kept returns the tokens of the request with the window kept from step
// g: the head, overhead, prefix and newest steps, and what stands for
// the omitted steps — nothing when none is (g is the first step).
func (w windowFrame) kept(rq *job, g int) int {
	c := rq.conv
	t := w.fixed + c.stepTokens(g, len(c.steps))
	if g == w.firstStep {
		t -= w.note
	}
	return t
}

// gridCut returns the first point of a grid laid p.Stride apart from
// firstStep (on the received request's counts) after which the request
// fits p.Limit less the stride (and the target, unless it came over the
// threshold on a warm turn); when no grid point fits (the grid is coarse where single
// steps are large), the first step after which it fits; -1 when none.
func (w windowFrame) gridCut(rq *job, b budgets, p foldPlan) int {
	fit := max(p.Limit-p.Stride, 0)
	if !rq.over || rq.cold {
		fit = min(fit, b.target)
	}
	fits := func(g int) bool { return w.kept(rq, g) <= fit }
	grid := rq.gridTokens()
	acc := 0
	for g := w.firstStep; g <= w.must; g++ {
		if g > w.firstStep {
			acc += grid[g-1]
			if acc < p.Stride && g < w.must {
				continue
			}
			acc = 0
		}
		if fits(g) {
			return g
		}
	}
	for g := w.firstStep + 1; g <= w.must; g++ {
		if fits(g) {
			return g
		}
	}
	return -1
}

// standInCut writes the window with summaries of what the cut at step
// keep omits in place of the marker (extractive after a fold's summary),
// and remembers their tokens beside a cut that moved (moved) or whose
// summaries' tokens were read (held ≥ 0) and changed; with a marker
// (markerCut) when there is nothing to summarize.
func (e *Engine) standInCut(ctx context.Context, rq *job, b budgets, r *Report, prefix [][]byte, w windowFrame, keep int, moved bool, held int) ([]byte, error) {
	b.cutSummary = w.note
	from, rest := rq.conv.steps[w.firstStep].first, rq.conv.steps[keep].first
	extractive, notes := rq.extractiveSummaries, rq.notes
	if w.afterSummary {
		rq.extractiveSummaries, rq.notes = true, false
	}
	note, text, err := e.cutSummary(ctx, rq, b, r, w.firstStep, keep)
	rq.extractiveSummaries, rq.notes = extractive, notes
	if err != nil {
		return nil, err
	}
	if note == nil {
		return e.markerCut(ctx, rq, prefix, from, rest)
	}
	if w.afterSummary {
		return rebuild(rq, append(append([][]byte{}, prefix...), note), rest)
	}
	if moved || held >= 0 {
		if tok := e.counter.Text(rq.limits.Encoding, text); moved || tok != held {
			e.storeNote(ctx, rq, w.key, keep, tok)
		}
	}
	return rebuild(rq, [][]byte{note}, rest)
}

// markerCut writes the window with a marker in place of items [from,
// rest). The marker names the received items it replaces (not digests
// made of them): its id stays while the cut does.
func (e *Engine) markerCut(ctx context.Context, rq *job, prefix [][]byte, from, rest int) ([]byte, error) {
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

// The record's fields a window cut is remembered under, by kind of
// window (after a fold's summary or not), and its note's beside it.
const (
	cutWindow       = "cut:w"
	cutAfterSummary = "cut:s"
	noteSuffix      = ":note"
)

// cutKey names the field of the conversation's record its window cut is
// remembered under, by kind of window (after a summary or not).
func (rq *job) cutKey(afterSummary bool) string {
	if afterSummary {
		return cutAfterSummary
	}
	return cutWindow
}

// storedCut returns the step where the conversation's previous window cut
// was, when it is still a step boundary of this request, holding the
// same item, between firstStep and must; -1 otherwise.
func (e *Engine) storedCut(ctx context.Context, rq *job, key string, firstStep, must int) int {
	v, ok := e.field(ctx, rq, key)
	if !ok {
		return -1
	}
	return rq.stepOfValue(v, firstStep+1, must)
}

// stepOfValue returns the step in [from, to] that starts at the item v
// (cutValue) remembers — the same index holding the same item as
// received: a digest made of it later (the frontier passing it) does not
// move it —, or -1.
func (rq *job) stepOfValue(v string, from, to int) int {
	idxS, hash, ok := strings.Cut(v, ":")
	idx, err := strconv.Atoi(idxS)
	c := rq.conv
	if !ok || err != nil || idx < 0 || idx >= c.len() || hash != rq.received().hashMessages(idx, idx+1) {
		return -1
	}
	for g := from; g <= to; g++ {
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
	if old, ok := e.field(ctx, rq, key); ok && old == v {
		return false
	}
	e.setField(ctx, rq, key, v)
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
		e.setField(ctx, rq, key+noteSuffix, rq.cutValue(keep)+":"+strconv.Itoa(tokens))
	}
}

// storedNote returns the tokens storeNote remembered for the cut at step
// keep, or -1 when it remembered none for that cut.
func (e *Engine) storedNote(ctx context.Context, rq *job, key string, keep int) int {
	v, ok := e.field(ctx, rq, key+noteSuffix)
	if !ok {
		return -1
	}
	at := rq.cutValue(keep) + ":"
	tok, ok := strings.CutPrefix(v, at)
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
	sr := e.digestRequest(ctx, rq, msgs)
	sr.Need, sr.Pick = need, pick
	res, err := e.digest(ctx, rq, sr)
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
	parsePatched(rq, vr, res.Patches, res.Body)
	sub := rq.overDigests(vr, res.Patches)
	sub.shrunk, sub.degraded = true, rq.degraded
	if err := e.parse(sub); err != nil {
		return nil, err
	}
	sub.addDigestChanges(res.Made)
	out, err := e.window(ctx, sub, e.budgets(sub), r, prefix, firstStep)
	if err != nil || out == nil {
		return nil, err
	}
	rq.adopt(sub)
	rq.degraded = sub.degraded
	rq.counted = sub.counted
	addDegraded(r, DegradedNewestOverBudget, fmt.Sprintf("newest steps over budget; %d of their tool outputs digested", res.Digested))
	return out, nil
}

// truncate keeps the head, a marker saying what was omitted, and the
// newest steps that fit the target (at least the last one).
func (e *Engine) truncate(ctx context.Context, rq *job, b budgets, r *Report) ([]byte, error) {
	out, err := e.window(ctx, rq, b, r, nil, 0)
	if errors.Is(err, errTooLarge) {
		addDegraded(r, DegradedTooLarge, "request too large to condense: "+errTooLarge.Error())
	}
	if err != nil {
		return nil, err
	}
	if out == nil {
		addReason(r, "; every step is needed verbatim", PathAllVerbatim)
		return nil, nil
	}
	r.Applied = AppliedTruncate
	if rq.cutSummarized {
		r.Applied = AppliedFull
	}
	return out, nil
}
