package condense

import (
	"context"
	"time"
)

// Observe mode: every request goes upstream byte for byte, and the engine
// works out what auto would have forwarded instead — without a summarizer
// call (summaries come from the cache or are extractive stand-ins, as for
// a counting request) and without writing anything the real conversation
// reads: its decisions, window cuts and auto's choices are kept in a
// namespace of their own, so the would-be conversation evolves request
// after request as auto's would. The report says what would have been
// applied (WouldApply, WouldTokensAfter) and prices both requests: the
// one forwarded (Bill, from the conversation's prefix log) and the one
// auto would have forwarded (WouldBill, from a prefix log of its own).
// It is how a team measures the savings on its own traffic before it
// turns condensing on.

// observeRequest handles a request in observe mode, or one of a holdout
// conversation (holdout.go): the mode it asked, not auto, is what it
// would have had.
func (e *Engine) observeRequest(ctx context.Context, req Request, start time.Time, holdout bool) (Result, error) {
	would := req
	if !holdout || would.Mode == "" {
		would.Mode = ModeAuto
	}
	would.CountOnly, would.observing = true, true
	wres, wfwd, in, err := e.run(ctx, would)
	res := Result{Body: req.Body, Report: wres.Report}
	r := &res.Report
	if holdout {
		r.Arm, r.AsReceived = ArmHoldout, true
	}
	if err != nil || in == nil {
		r.Applied, r.TokensAfter = AppliedNone, r.TokensBefore
		r.Duration = e.now().Sub(start)
		return res, err
	}
	r.WouldApply, r.WouldTokensAfter = r.Applied, r.TokensAfter
	r.Applied, r.TokensAfter = AppliedObserve, r.TokensBefore
	if holdout {
		r.Reason = "holdout arm (condense.holdout_share): forwarded as received; " + would.Mode + " would have: " + r.Reason
		r.Path = append([]string{PathHoldout}, r.Path...)
	} else {
		r.Reason = "observe: forwarded as received; auto would have: " + r.Reason
		r.Path = append([]string{PathObserve}, r.Path...)
	}
	r.Changes, r.Forwarded, r.Summaries, r.Cache, r.Degraded = nil, nil, "", "", ""
	r.DegradedKinds = nil
	r.SummariesCached, r.SummariesMade = 0, 0
	e.bill(ctx, req.Scope, r, in)
	cur := summarizeForPrefix(wfwd)
	cur.at, cur.received = e.now(), unscale(r.TokensBefore, r.safety)
	key := req.Scope + "\x00observe\x00" + r.Conversation
	prev, ok := e.prefixOf(ctx, key)
	if ok {
		cur.billed, cur.spent = prev.billed, prev.spent
	}
	e.putPrefix(ctx, key, cur)
	shared := -1
	if ok {
		shared = scale(sharedPrefix(prev, cur), r.safety)
	}
	r.WouldCacheRead, r.WouldCacheWrite, r.WouldBill = r.estimate(cur, prev, ok, shared, r.WouldTokensAfter)
	r.Duration = e.now().Sub(start)
	return res, nil
}
