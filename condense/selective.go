package condense

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/condense-proxy/condense-proxy/selective"
	"github.com/condense-proxy/condense-proxy/view"
)

// AppliedSelective is reported when only tool outputs were digested.
const AppliedSelective = "selective"

// selective digests old tool outputs: every one the digest frontier has
// passed — the outputs older than the newest keep_recent_tool_outputs,
// back to the frontier's grid point — in one edit. Once one digest busts
// the provider's prompt cache at its position, every edit after it rides
// on the same bust for free, so digesting them all at once busts once and
// leaves the request as small as selective condensing can make it; later
// requests then add a digest only when the frontier moves a whole stride
// (the cost model's, plan.go), re-writing only the tail after it. fits
// reports that the result is at or under the limit; out is nil when
// nothing was digested.
func (e *Engine) selective(ctx context.Context, rq *job, b budgets, r *Report) (out []byte, fits bool, err error) {
	points := e.frontierPoints(ctx, rq, toolOutputsOf(rq.conv.req), b)
	if selectiveCodec(rq) == nil || e.sel.Idle(rq.conv.req, e.eagerMinTokens(rq)) {
		// No output to digest at any point: the frontier goes as far as
		// it may, as it would with nothing digested at each point, and
		// no message list is made.
		rq.frontier = points[len(points)-1]
		return nil, rq.in.Total <= b.limit, nil
	}
	msgs := selective.Messages(rq.conv.req)
	var summarize func(context.Context, selective.Input) (string, error)
	if e.opts.SelectiveSummarizer == "llm" && e.summarizer != nil {
		summarize = func(ctx context.Context, in selective.Input) (string, error) {
			return e.digestWithLLM(ctx, rq, in)
		}
	}
	apply := func(protect int) (selective.Result, error) {
		sr := e.digestRequest(ctx, rq, msgs)
		sr.Need, sr.MinTokens, sr.ProtectFrom, sr.BriefBefore, sr.Summarize = math.MaxInt32, e.eagerMinTokens(rq), protect, e.briefBefore(rq, msgs), summarize
		return e.digest(ctx, rq, sr)
	}
	// The frontier: the first of its possible points at which the
	// request fits the limit (the frontier moves when it must, as full
	// mode's fold does: a move re-writes what follows the old frontier),
	// else the last.
	var res selective.Result
	for i, point := range points {
		rq.frontier = point
		if res, err = apply(e.protectIndex(rq, msgs, point)); err != nil || i == len(points)-1 {
			break
		}
		if res.Digested+res.Cleared == 0 {
			continue
		}
		if after, err := e.countOut(rq, res.Body); err != nil || after.Total <= b.limit {
			break
		}
	}
	if err != nil {
		return nil, false, fmt.Errorf("selective condensing: %w", err)
	}
	if res.Digested+res.Cleared == 0 {
		return nil, rq.in.Total <= b.limit, nil
	}
	rq.addDigestChanges(res.Made)
	e.rememberDigests(ctx, rq, res.Made)
	after, err := e.countOut(rq, res.Body)
	if err != nil {
		return nil, false, fmt.Errorf("counting selectively condensed request: %w", err)
	}
	limit := b.limit
	addReason(r, fmt.Sprintf("; %d tool outputs digested", res.Digested), PathDigests)
	if res.Cleared > 0 {
		addReason(r, fmt.Sprintf(", %d tool inputs shortened", res.Cleared), PathInputsShortened)
	}
	if after.Total <= limit {
		r.Applied = AppliedSelective
		return res.Body, true, nil
	}
	return res.Body, false, nil
}

// eagerMinTokens is the smallest output digested when digests start from
// the first request (selective.eager): two fifths of
// min_tool_output_tokens (200 by default), since every later request of
// the conversation reads what it saves; 0 otherwise (the option's).
func (e *Engine) eagerMinTokens(rq *job) int {
	if !e.opts.SelectiveEager {
		return 0
	}
	return max(e.sel.MinTokens()*2/5, 100)
}

// briefRatio: with eager digests, outputs that are not logs lose their
// digest for a brief (what its marker line says) once they are this many
// frontier strides behind the frontier; the brief boundary moves on a
// grid that many strides wide. 1 was the cheapest of 1, 2, 3, 6 and 12 on
// the bill suite (BENCHMARKS.md) once the frontier's stride is bounded by
// the threshold's gap rather than a fiftieth of the window: a brief then
// rides on the frontier's own bust, one stride behind it.
const briefRatio = 1

// briefBefore returns the index in msgs before which outputs get briefs
// (selective.eager), 0 for none: the point of a grid briefRatio frontier
// strides wide, at least one such stride behind the frontier.
func (e *Engine) briefBefore(rq *job, msgs []selective.Message) int {
	front := rq.frontier
	if !e.opts.SelectiveEager || front <= 0 {
		return 0
	}
	stride := briefRatio * rq.decisions[decisionFrontier]
	if e.opts.MinSavingsTokens > 0 {
		stride = briefRatio * e.opts.MinSavingsTokens
	}
	if stride <= 0 {
		return 0
	}
	grid := rq.gridTokens()
	tokens := 0
	for _, t := range grid[:front] {
		tokens += t
	}
	limit := tokens - stride // at least one wide stride behind
	point, acc, total := 0, 0, 0
	for i, t := range grid[:front] {
		total += t
		if acc += t; acc >= stride {
			if total > limit {
				break
			}
			point, acc = i+1, 0
		}
	}
	if point == 0 {
		return 0
	}
	return msgIndex(msgs, rq.conv.steps[point].first, 0)
}

// frontierPoints returns where the digest frontier may stand, in the
// order selective tries them: the step before which outputs may be
// digested — the outputs older than the newest keep_recent_tool_outputs,
// back to a point of the frontier's grid before them. Outputs then become
// candidates a frontier stride at a time rather than one per turn, so the
// digests change in few steps, each re-writing only the tail after it.
// With eager digests under the threshold the frontier is the last grid
// point. Over it, the first condensation of
// the conversation takes the last grid point — every digest there rides
// on the same bust — and that point is frozen (decisionFrontierFirst);
// later requests may move on to any grid point after it, the first that
// fits. The points of the grid never move as the conversation grows, so
// neither does a frontier that fits.
func (e *Engine) frontierPoints(ctx context.Context, rq *job, outs []toolOutput, b budgets) []int {
	keep := e.sel.KeepRecent()
	if keep <= 0 {
		return []int{len(rq.conv.steps)}
	}
	item := -1 // the item of the keep-th newest output
	if len(outs) >= keep {
		item = outs[len(outs)-keep].item
	}
	if item < 0 {
		return []int{0} // fewer outputs than protected: none is a candidate
	}
	c := rq.conv
	step := len(c.steps)
	for i, s := range c.steps {
		if s.first <= item && item < s.end {
			step = i
			break
		}
	}
	grid := rq.gridTokens()
	tail := 0
	for _, t := range grid[step:] {
		tail += t
	}
	points := gridPoints(grid[:step], e.frontierStrideOf(ctx, rq, b, tail))
	if len(points) == 0 {
		return []int{0}
	}
	if e.opts.SelectiveEager && !rq.over {
		return points[len(points)-1:]
	}
	first := e.decide(ctx, rq, decisionFrontierFirst, func() int { return points[len(points)-1] + 1 }) - 1
	if rq.cold {
		// A cold turn digests all it may, on a bust that costs nothing
		// now; the warm turns after it never move the frontier back.
		last := points[len(points)-1]
		e.keepColdFloor(ctx, rq, coldFrontier, last)
		return []int{last}
	}
	first = max(first, e.coldFloor(ctx, rq, coldFrontier))
	first = e.paidPoint(rq, outs, points, first, e.sel.MinTokens())
	for i, p := range points {
		if p >= first {
			return points[i:]
		}
	}
	return points[len(points)-1:]
}

// protectIndex returns the index in msgs from which no output is
// digested when the frontier stands at step point.
func (e *Engine) protectIndex(rq *job, msgs []selective.Message, point int) int {
	if point >= len(rq.conv.steps) {
		return len(msgs)
	}
	return msgIndex(msgs, rq.conv.steps[point].first, len(msgs))
}

// msgIndex returns the index of the first of msgs at or after item item,
// none when there is none.
func msgIndex(msgs []selective.Message, item, none int) int {
	for i, m := range msgs {
		if m.Item >= item {
			return i
		}
	}
	return none
}

// paidPoint returns the last of the grid points after from whose move
// paid when it became possible — when the keep_recent_tool_outputs-th
// output after it arrived: the tokens its digests remove (outputs of at
// least least tokens), read on every request expected to follow then,
// outweigh re-writing what follows the previous frontier (the cost
// model's test of an edit of cached history). Each point's test reads
// only the conversation as it was then, so the frontier is the same on
// every later request and replica, and it never moves back. Over the
// threshold the frontier moves at least that far from the first
// condensation's, over the usual horizon, as the cost model's other plans
// expect (half of it moved the frontier too rarely on the corpus:
// sessions that lasted billed up to 0.035 more, BENCHMARKS.md).
func (e *Engine) paidPoint(rq *job, tools []toolOutput, points []int, from, least int) int {
	c := rq.conv
	grid := rq.gridTokens()
	p := pricesOf(rq.limits)
	keep := max(e.sel.KeepRecent(), 1)
	outs := make([]int, len(c.steps))       // tool outputs per step
	digestible := make([]int, len(c.steps)) // tokens of those a digest may shrink
	si := 0
	for _, o := range tools {
		for si < len(c.steps) && o.item >= c.steps[si].end {
			si++
		}
		if si == len(c.steps) {
			break
		}
		outs[si]++
		if o.tokens >= least && !o.frozen {
			digestible[si] += o.tokens
		}
	}
	frontier := from
	for _, g := range points { // the steps before g may be digested
		if g <= from {
			continue
		}
		at, n := len(c.steps), 0
		for s := g; s < len(c.steps); s++ {
			if n += outs[s]; n >= keep {
				at = s + 1
				break
			}
		}
		saved, tail := 0, 0
		for s := frontier; s < g; s++ {
			saved += digestible[s]
		}
		for s := frontier; s < at; s++ {
			tail += grid[s]
		}
		removed := digestShare * float64(saved)
		if removed*p.read*horizon(at) > (p.write-p.read)*max(float64(tail)-removed, 0) {
			frontier = g
		}
	}
	return frontier
}

// toolOutput is one of a request's tool outputs: a tool message of
// selective.Messages, without the rest of the list.
type toolOutput struct {
	item, tokens int
	frozen       bool
}

// toolOutputsOf returns r's tool outputs, in order: the outputs of the
// items whose first output is not their own text, as selective.Messages
// lists them.
func toolOutputsOf(r *view.Request) []toolOutput {
	var out []toolOutput
	for i := range r.Items {
		it := &r.Items[i]
		if len(it.Outputs) == 0 || it.Outputs[0].Own {
			continue
		}
		for _, o := range it.Outputs {
			out = append(out, toolOutput{item: i, tokens: o.Tokens, frozen: o.Frozen || it.Frozen})
		}
	}
	return out
}

// gridPoints returns the frontier's grid points in grid (tokens per
// step): the step indexes after every stride tokens, the steps before
// each one whole.
func gridPoints(grid []int, stride int) []int {
	var out []int
	acc := 0
	for i, t := range grid {
		if acc += t; acc >= stride {
			out, acc = append(out, i+1), 0
		}
	}
	return out
}

// digestShare is about how much of a large output its digest removes
// (the planner's estimate before the digests are made).
const digestShare = 0.75

// truncateBody windows the request as received or, digested, the body
// its digests made (rq.digestBody). The window over digests is planned on the
// digested copy — its counts decide the cut — by a job whose base is rq:
// what it forwards is written from the request as received in one
// splice, the digests of the items it keeps as patches (spliced).
func (e *Engine) truncateBody(ctx context.Context, rq *job, digested bool, b budgets, r *Report) ([]byte, error) {
	if digested {
		body := rq.digestBody
		if len(body) == 0 {
			return nil, errors.New("windowing digests none were made of")
		}
		vr, err := e.countOut(rq, body)
		if err != nil {
			return nil, fmt.Errorf("counting digested request: %w", err)
		}
		parsePatched(rq, vr, rq.digestPatches, body)
		sub := rq.overDigests(vr, rq.digestPatches)
		if err := e.parse(sub); err != nil {
			return nil, err
		}
		out, err := e.truncate(ctx, sub, e.budgets(sub), r)
		rq.adopt(sub)
		rq.degraded = append(rq.degraded, sub.degraded...)
		if out != nil {
			rq.counted = sub.counted
		}
		return out, err
	}
	return e.truncate(ctx, rq, b, r)
}

// overDigests returns a job that plans rq's window over in, a digested
// copy of rq's request (patches: its digests as edits of the items as
// received): rq is its base, it shares rq's reqState (the request, its
// decisions and what its summaries cost) and starts from rq's changes.
// rq.adopt takes back what it made.
func (rq *job) overDigests(in *view.Request, patches []view.Patch) *job {
	return &job{reqState: rq.reqState, in: in, changes: rq.changes, orig: rq.received(), grid: rq.gridTokens(), frontier: rq.frontier,
		base: rq, patches: patches}
}

// adopt takes back from sub (rq.overDigests) the changes it made, and
// whether its cut got summaries.
func (rq *job) adopt(sub *job) {
	rq.changes, rq.cutSummarized = sub.changes, sub.cutSummarized
}

// selectiveCodec is the request's codec as package selective needs it
// (nil: its outputs are not digested).
func selectiveCodec(rq *job) selective.Codec {
	c, _ := rq.codec.(selective.Codec)
	return c
}

// digestPrompt asks the summarizer for the digest of one tool output.
const digestPrompt = `You are the condense-proxy summarizer. A coding agent's old tool output is being replaced by a digest. Keep what the agent may need later: for code, the path, the structure (declarations with line numbers) and anything that looks wrong; for logs, pass/fail counts, every failing test, every error with its location, the exit status; for searches, the files and the first matches. Exact names, paths and numbers; no commentary. At most 300 words.`

// digestWithLLM asks the summarizer for one output's digest: one call per
// output shared by concurrent requests (and replicas), within the
// summarizer's timeout, concurrency bound and per-caller failure back-off.
func (e *Engine) digestWithLLM(ctx context.Context, rq *job, in selective.Input) (string, error) {
	model := e.summaryModel(rq)
	if e.suspended(ctx, rq, model) {
		return "", fmt.Errorf("summarizer recently failing")
	}
	if rq.waitOver() {
		return "", errStoppedWaiting
	}
	if d := e.spendable(rq); d.why != "" {
		return "", errors.New(d.why)
	}
	text := cutMiddle(in.Content, e.opts.DigestInputBytes)
	key := "digllm:" + rq.req.Scope + ":" + model + ":" + e.digestHash + ":" + in.Key
	return e.shared(ctx, rq, key, e.fitSummaryInput(SummaryInput{
		Model: model, Prompt: digestPrompt, Level: 1, MaxTokens: e.opts.DigestMaxTokens, Credentials: rq.req.Credentials, Codec: rq.codec,
		Text: fmt.Sprintf("Tool %s called with %s. Its output:\n%s", in.Tool, in.Args, text),
	}), func(s string) string { return s })
}
