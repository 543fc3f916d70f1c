package condense

import (
	"context"
	"errors"
	"fmt"

	"github.com/condense-proxy/condense-proxy/selective"
	"github.com/condense-proxy/condense-proxy/view"
)

// Agents that compact themselves.
//
// Near the end of its window a coding agent asks the model to summarize
// the conversation so far (Claude Code, Codex with a custom provider, Roo
// Code, Cline, opencode, qwen-code, OpenHands), or asks the upstream to
// compact it (a Responses compaction_trigger), then replaces its history
// by the summary. Whatever the proxy summarized or digested away in that
// request never reaches the agent's summary, and after the compaction it
// is gone for good. So the codecs mark such a request (view.Request's
// Compaction, from its last user message only) and the engine:
//
//   - forwards it byte for byte when it fits the model's window, even over
//     the threshold (mode, force and max_messages do not change that);
//   - when it does not fit, digests its tool outputs, oldest first, until
//     it fits — never a summary (a summary of what the agent is about to
//     summarize) and never a window cut —, and says so in the report's
//     Degraded; a request that even then does not fit is forwarded
//     digested as far as it goes;
//   - forwards a request the codec marked untouchable too
//     (compaction_trigger: the upstream compacts) as received;
//   - records it in the prefix bookkeeping like any forwarded request, and
//     keeps it per caller, so the agent's next request — a new history
//     starting with the summary, another conversation by its head — is
//     compared with it rather than counted as a conversation never seen.

// agentCompaction handles an agent's own compaction request (rq.in has
// Compaction set): res is filled in, and the request forwarded is
// returned scanned, for the prefix bookkeeping.
func (e *Engine) agentCompaction(ctx context.Context, rq *job, mode string, res *Result) (*view.Request, error) {
	r := &res.Report
	in := rq.in
	r.AgentCompaction = in.Compaction
	observe := e.observe
	if rq.req.CountOnly {
		observe = func(string, string, int) {}
	}
	what := "agent compaction (" + in.Compaction + ")"
	overWindow := r.TokensBefore > r.Window
	switch {
	case mode == ModeOff:
		r.Reason = what + "; mode off"
		r.Path = []string{PathAgentCompaction, PathModeOff}
		return in, nil
	case in.Untouchable != "":
		r.Reason = what + "; " + in.Untouchable + "; forwarded unchanged"
		r.Path = []string{PathAgentCompaction, PathUntouchable, PathForwardedUnchanged}
		if overWindow {
			addDegraded(r, DegradedCompactionKept, what+" over the context window: "+in.Untouchable+"; forwarded unchanged")
		}
		observe(mode, "agent_compaction", 0)
		return in, nil
	case !overWindow:
		r.Reason = what + " within the context window; forwarded unchanged"
		r.Path = []string{PathAgentCompaction, PathWithinWindow, PathForwardedUnchanged}
		observe(mode, "agent_compaction", 0)
		return in, nil
	}
	r.Reason = what + " over the context window"
	r.Path = []string{PathAgentCompaction, PathOverWindow}
	c, err := e.compact(ctx, rq, r)
	var kept *keptError
	if errors.As(err, &kept) {
		addReason(r, "; "+kept.why+"; forwarded unchanged", kept.step, PathForwardedUnchanged)
		if kept.nothing {
			addDegraded(r, DegradedCompactionKept, what+" over the context window and nothing to digest or cut; forwarded unchanged")
		} else {
			addDegraded(r, DegradedCompactionKept, what+" over the context window; forwarded unchanged")
		}
		observe(mode, kept.outcome, 0)
		return in, nil
	}
	if err != nil {
		return in, err
	}
	reportCompaction(rq, r, what, c)
	res.Body, res.Headers = c.body, c.headers
	observe(mode, "condensed", r.TokensBefore-r.TokensAfter)
	return c.after, nil
}

// keptError says why an agent compaction request over the window is
// forwarded as received: why ends the report's Reason (step its Path),
// outcome is observed; nothing: there was no tool output to digest and
// no step to cut.
type keptError struct {
	why, outcome, step string
	nothing            bool
}

func (k *keptError) Error() string { return k.why }

// compacted is an agent compaction request digested, and cut when
// digests alone left it over the window.
type compacted struct {
	body     []byte
	headers  []view.Header
	after    *view.Request // body, scanned
	tokens   int           // after's, the safety factor applied
	digested int           // tool outputs digested
	cut      bool          // the oldest steps were cut
}

// compact digests the tool outputs of an agent compaction request over
// the window, oldest first; when digests alone do not bring it within the
// window, the oldest steps are cut, with an extractive stand-in of what
// they held (the task, decisions, error lines, paths, recall ids) —
// never a request the upstream must refuse. A *keptError says why the
// request goes as received instead; any other error is the context's.
func (e *Engine) compact(ctx context.Context, rq *job, r *Report) (compacted, error) {
	if err := e.parse(rq); err != nil {
		return compacted{}, &keptError{why: err.Error(), outcome: "invalid", step: PathInvalid}
	}
	r.Received = shapes(rq.in)
	out, n, err := e.digestAll(ctx, rq, e.budgets(rq).window)
	if err != nil {
		if ctx.Err() != nil {
			return compacted{}, ctx.Err()
		}
		return compacted{}, &keptError{why: err.Error(), outcome: "failed", step: PathFailed}
	}
	afterTokens := r.TokensBefore
	if out != nil {
		after, err := e.countOut(rq, out)
		if err != nil {
			return compacted{}, &keptError{why: "digested body did not re-count", outcome: "failed", step: PathFailed}
		}
		afterTokens = scale(after.Total, rq.limits.SafetyFactor)
	}
	cut := false
	if afterTokens > r.Window {
		c, err := e.compactionCut(ctx, rq, out != nil, r)
		if err != nil && ctx.Err() != nil {
			return compacted{}, ctx.Err()
		}
		if err == nil && c != nil {
			out, cut = c, true
		}
	}
	if out == nil {
		return compacted{}, &keptError{why: "no tool output to digest and no step to cut", outcome: "unchanged", step: PathNothingCondensed, nothing: true}
	}
	return e.finishCompaction(rq, r, compacted{body: out, digested: n, cut: cut})
}

// finishCompaction counts c.body, which must be smaller than the request
// as received, and has the codec finish it (view.Finisher).
func (e *Engine) finishCompaction(rq *job, r *Report, c compacted) (compacted, error) {
	after, err := e.countOut(rq, c.body)
	if err != nil {
		return c, &keptError{why: "condensed body did not re-count", outcome: "failed", step: PathFailed}
	}
	c.after, c.tokens = after, scale(after.Total, rq.limits.SafetyFactor)
	if c.tokens >= r.TokensBefore {
		return c, &keptError{why: "digests did not shrink the request", outcome: "unchanged", step: PathNotShrunk}
	}
	if f, ok := rq.codec.(view.Finisher); ok {
		body, hs, err := f.Finish(rq.in, c.body)
		if err != nil {
			return c, &keptError{why: err.Error(), outcome: "failed", step: PathFailed}
		}
		c.body, c.headers = body, hs
	}
	return c, nil
}

// reportCompaction reports c, the agent compaction request what
// forwarded condensed.
func reportCompaction(rq *job, r *Report, what string, c compacted) {
	why := fmt.Sprintf("%s over the context window: %d tool outputs digested, no summaries", what, c.digested)
	r.Applied = AppliedSelective
	if c.cut {
		why = fmt.Sprintf("%s over the context window: %d tool outputs digested and the oldest steps cut, an extractive stand-in in their place", what, c.digested)
		r.Applied = AppliedFull
	}
	if c.tokens > r.Window {
		why += "; still over the window"
	}
	addDegraded(r, DegradedCompactionDigested, why)
	addReason(r, fmt.Sprintf("; %d tool outputs digested", c.digested), PathDigests)
	if c.cut {
		addReason(r, "; the oldest steps cut", PathCut)
	}
	r.TokensAfter = c.tokens
	r.Changes = rq.changes
	if c.after.Parsed || rq.codec.Parse(c.after) == nil {
		r.Forwarded = shapes(c.after)
	}
}

// compactionCut cuts the oldest steps of an agent compaction request
// that its digests (digested: any made) left over the window, as auto's
// cut does — the conversation's cut where it has one, the threshold as
// the limit — with extractive summaries of what it omits in its place: a
// summary the summarizer wrote of what the agent is about to summarize
// would cost a call for the same words. Nil when there is nothing to cut.
func (e *Engine) compactionCut(ctx context.Context, rq *job, digested bool, r *Report) ([]byte, error) {
	rq.over, rq.summarizeCut, rq.extractiveSummaries = true, true, true
	return e.truncateBody(ctx, rq, digested, e.budgets(rq), r)
}

// digestAll digests the request's tool outputs, oldest first, until it is
// within limit tokens (raw counts, like the budgets) or none is left. It
// returns the digested body (nil when nothing was digested) and how many
// outputs were digested.
func (e *Engine) digestAll(ctx context.Context, rq *job, limit int) ([]byte, int, error) {
	msgs := selective.Messages(rq.conv.req)
	var pick []int
	for i, m := range msgs {
		if m.Role == view.RoleTool {
			pick = append(pick, i)
		}
	}
	sr := e.digestRequest(ctx, rq, msgs)
	sr.Need, sr.Pick = rq.in.Total-limit, pick
	res, err := e.digest(ctx, rq, sr)
	if err != nil {
		return nil, 0, fmt.Errorf("digesting tool outputs: %w", err)
	}
	if res.Digested == 0 {
		return nil, 0, nil
	}
	rq.addDigestChanges(res.Made)
	return res.Body, res.Digested, nil
}

// recordPrefix describes fwd, the request forwarded (received: its raw
// tokens as the agent sent it), for its conversation's prefix record and
// returns the request before it (false: none known) and store, which
// keeps cur — the conversation's totals carried over — as its latest. A
// request of a conversation never seen, from a caller whose agent just
// compacted itself, is compared with that compaction request instead: the
// agent's new history keeps its system prompt and tools, and its prompt
// cache.
func (e *Engine) recordPrefix(ctx context.Context, scope string, r *Report, fwd *view.Request, received int, spent float64) (cur, prev prefixEntry, ok bool, store func(prefixEntry)) {
	cur = summarizeForPrefix(fwd)
	cur.at, cur.received = e.now(), received
	cur.spent = spent
	key := scope + "\x00" + r.Conversation
	prev, ok = e.prefixOf(ctx, key)
	if ok {
		cur.billed, cur.spent = prev.billed, prev.spent+spent
		cur.condensed = prev.condensed
	}
	cur.condensed = cur.condensed || r.condensedNow()
	store = func(c prefixEntry) {
		e.putPrefix(ctx, key, c)
		if r.AgentCompaction != "" {
			e.putPrefix(ctx, compactionKey(scope), c)
		}
	}
	if !ok && r.AgentCompaction == "" {
		prev, ok = e.takePrefix(ctx, compactionKey(scope))
	}
	return cur, prev, ok, store
}

// compactionKey names the caller's last agent compaction request
// forwarded, kept until the caller's next request of a new conversation
// takes it.
func compactionKey(scope string) string { return scope + "\x00compaction" }
