package condense

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/condense-proxy/condense-proxy/redact"
	"github.com/condense-proxy/condense-proxy/view"
)

// Condense decides and, when needed, condenses req. It returns an error
// only when ctx ends; any other failure yields the original body and a
// report that says why.
func (e *Engine) Condense(ctx context.Context, req Request) (res Result, err error) {
	if h := reportHook; h != nil {
		defer func() { h(&res.Report) }()
	}
	start := e.now()
	if req.Mode == ModeObserve && !req.CountOnly {
		return e.observeRequest(ctx, req, start, false)
	}
	res, fwd, in, err := e.run(ctx, req)
	if res.Report.Arm == ArmHoldout && !req.CountOnly && err == nil && in != nil {
		// The holdout arm: observe mode for this conversation
		// (holdout.go), on the count already made.
		req.scanned = in
		res, err = e.observeRequest(ctx, req, start, true)
		redactReport(&res.Report, req.Credentials)
		return res, err
	}
	if fwd != nil && !req.CountOnly {
		e.bill(ctx, req.Scope, &res.Report, fwd)
	} else if fwd != nil {
		e.recallToolOf(ctx, req.Scope, &res.Report)
	}
	res.Report.Duration = e.now().Sub(start)
	redactReport(&res.Report, req.Credentials)
	return res, err
}

// redactReport removes key-shaped strings and the caller's credentials
// from the report's texts, which go to the log line, the headers and the
// page: a reason may quote an upstream's error, and an error may echo a
// key.
func redactReport(r *Report, creds http.Header) {
	known := credentialValues(creds)
	r.Reason = redact.Secrets(r.Reason, known...)
	r.Degraded = redact.Secrets(r.Degraded, known...)
}

// credentialValues returns the secrets a caller's credential headers hold
// (a Bearer token without its scheme, API key headers as they are).
func credentialValues(h http.Header) []string {
	var out []string
	for name, vals := range h {
		for _, v := range vals {
			if strings.EqualFold(name, "Authorization") {
				if _, tok, ok := strings.Cut(v, " "); ok {
					v = tok
				}
			}
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out
}

// run decides and, when needed, condenses req; fwd is the request to
// forward, scanned (nil when the body was not counted).
func (e *Engine) run(ctx context.Context, req Request) (res Result, fwd, in *view.Request, err error) {
	res = Result{Body: req.Body, Report: Report{Applied: AppliedNone, PrefixReused: -1}}
	vr, lim, err := e.scanFor(req, &res.Report)
	if vr == nil || err != nil {
		return res, nil, nil, err
	}
	observe := e.observe
	if req.CountOnly {
		observe = func(string, string, int) {}
	}
	rq, mode, fwd, err := e.admit(ctx, req, vr, lim, &res, observe)
	if rq == nil || err != nil {
		return res, fwd, vr, err
	}
	fwd, err = e.apply(ctx, rq, mode, &res, observe)
	return res, fwd, vr, err
}

// scanFor scans req (or takes its scan) and fills r with what the scan
// tells; the request is nil when req is not one the engine counts (r's
// reason says why) or could not be counted (the error: the caller
// refuses it).
func (e *Engine) scanFor(req Request, r *Report) (*view.Request, ModelLimits, error) {
	codec := req.Codec
	if codec == nil {
		r.Reason = "no codec for this request; forwarded unchanged"
		r.Path = []string{PathNoCodec, PathForwardedUnchanged}
		return nil, ModelLimits{}, nil
	}
	var lim ModelLimits
	vr, err := req.scanned, error(nil)
	if vr != nil {
		lim = e.models.Limits(vr.Model)
	} else {
		vr, err = codec.Scan(req.Body, func(model string) string {
			lim = e.models.Limits(model)
			return lim.Encoding
		})
	}
	if errors.Is(err, view.ErrNotRequest) {
		r.Reason = "not a " + codec.Format() + " request; forwarded unchanged"
		r.Path = []string{PathNotRequest, PathForwardedUnchanged}
		return nil, lim, nil
	}
	if err != nil {
		// Too many messages: the caller refuses the request.
		return nil, lim, fmt.Errorf("counting tokens: %w", err)
	}
	r.Model = vr.Model
	r.Format = codec.Format()
	r.Counted = true
	r.Messages = len(vr.Items)
	r.Window = lim.Window
	r.TokensBefore = scale(vr.Total, lim.SafetyFactor)
	r.TokensAfter = r.TokensBefore
	r.Trigger = int(float64(lim.Window) * lim.Threshold)
	r.Conversation = conversationID(vr)
	r.safety = lim.SafetyFactor
	r.prices = pricesOf(lim)
	r.Family = lim.Family
	r.InputPrice = lim.InputPrice
	return vr, lim, nil
}

// admit decides whether the scanned request vr is condensed, and in which
// mode: rq is nil when it is forwarded without condensing (fwd: the request
// to forward, scanned; res.Report says why).
func (e *Engine) admit(ctx context.Context, req Request, vr *view.Request, lim ModelLimits, res *Result, observe func(string, string, int)) (rq *job, mode string, fwd *view.Request, err error) {
	r := &res.Report
	mode = req.Mode
	if mode == "" {
		mode = ModeAuto
	}
	if r.Arm = e.armOf(req, mode, r.Conversation); r.Arm == ArmHoldout {
		// Forwarded as received (Condense runs the would-be request on
		// the side; a count-only request counts what goes: this body).
		r.Reason = "holdout arm (condense.holdout_share)"
		r.Path = []string{PathHoldout}
		r.AsReceived = true
		return nil, mode, vr, nil
	}
	over := r.TokensBefore > r.Trigger
	rq = &job{reqState: &reqState{req: req, codec: req.Codec, model: vr.Model, limits: lim, over: over}, in: vr, frontier: -1}
	if vr.Compaction != "" {
		// The agent compacting itself: never summarized (compaction.go).
		rq.frontier = 0
		fwd, err = e.agentCompaction(ctx, rq, mode, res)
		return nil, mode, fwd, err
	}
	if mode == ModeOff || mode == ModeObserve {
		// (observe reaches here only counting: what is forwarded is the
		// request as received)
		r.Reason = "mode " + mode
		r.Path = []string{PathModeOff}
		if mode == ModeObserve {
			r.Path = []string{PathObserve}
		}
		return nil, mode, vr, nil
	}
	tooMany := e.opts.MaxMessages > 0 && r.Messages > e.opts.MaxMessages
	if vr.Untouchable != "" {
		r.Reason = vr.Untouchable + "; forwarded unchanged"
		r.Path = []string{PathUntouchable, PathForwardedUnchanged}
		r.AsReceived = true
		if over || tooMany || req.Force {
			addDegraded(r, DegradedUntouchable, vr.Untouchable+"; not condensed")
		}
		return nil, mode, vr, nil
	}
	eager := e.opts.SelectiveEager && e.opts.SelectiveEnabled && (mode == ModeSelective || mode == ModeAuto)
	rq.eager = !over && !tooMany && !req.Force
	if rq.eager && !eager {
		r.Reason = "under threshold"
		r.Path = []string{PathUnderThreshold}
		if !req.CountOnly && e.prepareAt(lim) < r.TokensBefore && mode == ModeFull {
			e.prepare(rq, e.inPlaceOf(ctx, rq, rq.in, 0, 0))
		}
		return nil, mode, vr, nil
	}
	mode, ok := e.ready(ctx, rq, mode, tooMany, r, observe)
	if !ok {
		return nil, mode, vr, nil
	}
	return rq, mode, vr, nil
}

// ready prepares rq, which is to be condensed, and returns the mode it is
// condensed in: false when it is forwarded as received after all (it does
// not parse).
func (e *Engine) ready(ctx context.Context, rq *job, mode string, tooMany bool, r *Report, observe func(string, string, int)) (string, bool) {
	switch {
	case rq.eager:
		r.Reason, r.Path = "under threshold; eager digests", []string{PathUnderThreshold, PathEagerDigests}
	case rq.over:
		r.Reason, r.Path = "over threshold", []string{PathOverThreshold}
	case tooMany:
		r.Reason, r.Path = "over max_messages", []string{PathOverMaxMessages}
	default:
		r.Reason, r.Path = "forced", []string{PathForced}
	}
	if rq.over && !e.opts.NoColdTurns && e.coldTurn(ctx, rq, r.Conversation) {
		rq.cold = true
		addReason(r, coldReason, PathCold)
	}
	if err := e.parse(rq); err != nil {
		addReason(r, "; "+err.Error()+"; forwarded unchanged", PathInvalid, PathForwardedUnchanged)
		r.AsReceived = true
		observe(mode, "invalid", 0)
		return mode, false
	}
	rq.inplace = e.inPlaceOf(ctx, rq, rq.in, 0, 0)
	if mode == ModeSelective && !e.opts.SelectiveEnabled {
		addDegraded(r, DegradedSelectiveDisabled, "selective condensing is disabled (selective.enabled=false); full condensing used")
		mode = ModeFull
	}
	if mode == ModeAuto && !e.opts.SelectiveEnabled {
		mode = ModeFull
	}
	return mode, true
}

// apply condenses rq in mode and puts in res what is forwarded: the
// condensed body, or the body as received when condensing failed or did
// not shrink it (the headers say exactly what was forwarded: a fallback a
// strategy tried is reported only when its result is forwarded; when the
// original goes, Degraded says why if it is over the window). It returns
// the forwarded request, scanned.
func (e *Engine) apply(ctx context.Context, rq *job, mode string, res *Result, observe func(string, string, int)) (*view.Request, error) {
	r := &res.Report
	r.Received = shapes(rq.in)
	// max_wait: when it is over, the request stops waiting for summaries
	// (it takes extractive ones) but the shared calls go on and cache
	// theirs. Detached from ctx on purpose: the client leaving is not
	// max_wait (it gives the calls up, see flight.do), and stop must not
	// fire for it.
	wait, cancelWait := context.WithTimeout(context.WithoutCancel(ctx), e.opts.MaxWait)
	defer cancelWait()
	rq.stop = wait.Done()
	before, beforeKinds := r.Degraded, r.DegradedKinds
	defer func() { r.Calls, r.SummarizerSpend = rq.calls, rq.spent }()
	unchanged := func(outcome, step, why string) (*view.Request, error) {
		r.Applied, r.Changes, r.Forwarded, r.Summaries, r.Cache = AppliedNone, nil, nil, "", ""
		r.SummariesCached, r.SummariesMade = 0, 0
		r.Degraded, r.DegradedKinds = before, beforeKinds
		addReason(r, "; "+why+"; forwarded unchanged", step, PathForwardedUnchanged)
		r.AsReceived = true
		if r.TokensBefore > r.Window {
			addDegraded(r, DegradedTooLarge, fmt.Sprintf("too large for the context window (%d > %d tokens) and forwarded unchanged: %s", r.TokensBefore, r.Window, why))
		}
		observe(mode, outcome, 0)
		return rq.in, nil
	}
	out, err := e.condense(ctx, rq, mode, r)
	switch {
	case err != nil && ctx.Err() != nil:
		return rq.in, ctx.Err()
	case err != nil:
		return unchanged("failed", PathFailed, err.Error())
	case out == nil && rq.eager:
		// Nothing old enough to digest yet: an ordinary request under
		// the threshold.
		r.Reason, r.Received, r.Degraded = "under threshold", nil, before
		r.Path, r.DegradedKinds = []string{PathUnderThreshold}, beforeKinds
		return rq.in, nil
	case out == nil:
		return unchanged("unchanged", PathNothingCondensed, "nothing condensed")
	}
	after, err := e.countOut(rq, out)
	if err != nil {
		return unchanged("failed", PathFailed, "condensed body did not re-count")
	}
	afterTokens := scale(after.Total, rq.limits.SafetyFactor)
	if afterTokens >= r.TokensBefore {
		return unchanged("unchanged", PathNotShrunk, "condensing did not shrink the request")
	}
	if f, ok := rq.codec.(view.Finisher); ok {
		body, headers, err := f.Finish(rq.in, out)
		if err != nil {
			return unchanged("failed", PathFailed, err.Error())
		}
		out, res.Headers = body, headers
	}
	res.Body = out
	r.TokensAfter = afterTokens
	r.Changes = forwardedChanges(rq.changes)
	r.Forwarded = rq.forwardedShapes(after)
	r.Cold = rq.cold
	observe(r.Applied, "condensed", r.TokensBefore-r.TokensAfter)
	return after, nil
}

// forwardedChanges drops the digests made in items a summary or window
// marker then replaced: they are not forwarded.
func forwardedChanges(changes []Change) []Change {
	var replaced [][2]int
	for _, ch := range changes {
		if ch.Kind != ChangeDigest {
			replaced = append(replaced, [2]int{ch.From, ch.To})
		}
	}
	kept := changes[:0:0]
	for _, ch := range changes {
		inside := false
		for _, s := range replaced {
			if ch.Kind == ChangeDigest && s[0] <= ch.From && ch.From < s[1] {
				inside = true
			}
		}
		if !inside {
			kept = append(kept, ch)
		}
	}
	return kept
}

func (e *Engine) observe(mode, outcome string, saved int) {
	if e.observer != nil {
		e.observer.Condensed(mode, outcome, saved)
	}
}

func (e *Engine) observeSummarizer(d time.Duration, err error) {
	if e.observer != nil {
		e.observer.SummarizerCall(d, err)
	}
}

func (e *Engine) prepareAt(lim ModelLimits) int {
	f := e.opts.PrepareThreshold
	if f <= 0 {
		f = lim.Threshold - 0.1
	}
	return int(float64(lim.Window) * f)
}

// parse splits the request's items into head and steps.
func (e *Engine) parse(rq *job) error {
	conv, err := newConversation(rq.in, rq.codec)
	if err != nil {
		return err
	}
	conv.hashes = &e.hashes
	rq.conv = conv
	rq.overhead = rq.in.Total - conv.tokens(0, conv.len())
	return nil
}

// conversationID identifies a request's conversation by its head (the
// system prompt and the task), with a fast hash: every request pays it.
func conversationID(r *view.Request) string {
	h := xxhash.New()
	for i := 0; i < r.Head; i++ {
		h.WriteString(r.Raw(i))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// forwardedShapes returns the shapes of after, the condensed request: its
// roles from the edit that made it (tally.roles), or — for a body no
// edit of a parsed request made — from a parse of it.
func (rq *job) forwardedShapes(after *view.Request) []ItemShape {
	roles := rq.counted.roles
	if rq.counted.req != after || len(roles) != len(after.Items) {
		if !after.Parsed && rq.codec.Parse(after) != nil {
			return nil
		}
		return shapes(after)
	}
	out := shapes(after)
	for i := range out {
		out[i].Role = roles[i]
	}
	return out
}

// shapes describes a parsed request's items.
func shapes(r *view.Request) []ItemShape {
	out := make([]ItemShape, len(r.Items))
	for i, it := range r.Items {
		out[i] = ItemShape{Role: it.Role, Tokens: it.Tokens}
	}
	return out
}

// condense applies mode and returns the new body, or nil to forward the
// original.
func (e *Engine) condense(ctx context.Context, rq *job, mode string, r *Report) ([]byte, error) {
	b := e.budgets(rq)
	if rq.eager {
		// Under the threshold with selective.eager: the digests the
		// frontier has passed, and nothing else.
		out, _, err := e.selective(ctx, rq, b, r)
		if out != nil && err == nil {
			r.Applied = AppliedSelective
		}
		return out, err
	}
	switch mode {
	case ModeAuto:
		out, sticky, done, err := e.autoFolds(ctx, rq, b, r)
		if done {
			return out, err
		}
		return e.digestsOrCut(ctx, rq, mode, b, r, sticky)
	case ModeSelective:
		return e.digestsOrCut(ctx, rq, mode, b, r, false)
	case ModeFull:
		return e.fullOrWindow(ctx, rq, b, r)
	}
	return e.truncate(ctx, rq, b, r)
}

// autoFolds condenses an auto conversation that folds (its stored
// decision) by its fold: done, unless the fold moves now and the
// conversation takes the digests and the cut from here (sticky, as it is
// when it once needed summaries: flipping between selective and full would
// rewrite the prefix).
func (e *Engine) autoFolds(ctx context.Context, rq *job, b budgets, r *Report) (out []byte, sticky, done bool, err error) {
	if _, sticky = e.decided(ctx, rq, decisionAutoCut); sticky {
		return nil, true, false, nil
	}
	if v, ok := e.decided(ctx, rq, decisionAuto); !ok || v != autoFolds {
		return nil, false, false, nil
	}
	saved, changes, degraded := *r, rq.changes, rq.degraded
	out, switched, err := e.foldOnce(ctx, rq, b, r)
	if !switched && rq.cold && err == nil && e.overTarget(rq, out, b) {
		// A cold turn over the target: the fold's next move now, on a
		// bust that costs nothing — the conversation takes the digests
		// and the cut from here, as when its fold would move (cold.go).
		*r, rq.changes, rq.degraded = saved, changes, degraded
		addReason(r, autoSwitchReason, PathAutoSwitch)
		e.takeCut(ctx, rq)
		switched = true
	}
	if !switched {
		return out, false, true, err
	}
	return nil, true, false, nil
}

// digestsOrCut condenses rq in selective or auto mode: the digests when
// they fit and pay; otherwise selective windows the digested conversation
// and auto cuts it, with summaries of what the cut omits (sticky: the
// conversation already takes the cut).
func (e *Engine) digestsOrCut(ctx context.Context, rq *job, mode string, b budgets, r *Report, sticky bool) ([]byte, error) {
	reason, path := r.Reason, r.Path
	// (the conversation's first condensation over the threshold: its
	// digest frontier is not placed yet)
	_, condensed := e.decided(ctx, rq, decisionFrontierFirst)
	out, fits, err := e.selective(ctx, rq, b, r)
	if err != nil {
		return nil, err
	}
	// The digests would not pay for their bust before the window (auto:
	// the cut) has to come: it comes now, on the same bust (plan.go) — in
	// auto, unless the fold is cheaper still.
	choose := fits && !sticky && out != nil && rq.over // the digests fit: auto's and this choice are open
	windowNow := choose && e.windowNowOf(ctx, rq, b, out, !condensed)
	if mode == ModeAuto && choose && e.autoFoldsOf(ctx, rq, b, out, windowNow) {
		// Folds are cheaper for this conversation (plan.go): the digests
		// are not forwarded — unless another replica's fold of it ends
		// elsewhere already, and the conversation takes them and the cut
		// from here.
		digests, digestReason, digestPath := rq.changes, r.Reason, r.Path
		rq.changes, r.Reason, r.Path, r.Applied = nil, reason, path, ""
		folded, switched, err := e.foldOnce(ctx, rq, b, r)
		if !switched {
			return folded, err
		}
		rq.changes, r.Reason, r.Path, sticky = digests, digestReason, digestPath, true
		addReason(r, autoSwitchReason, PathAutoSwitch)
	}
	if windowNow && !sticky {
		addReason(r, windowNowReason, PathWindowNow)
		fits = false
	}
	if fits && mode == ModeSelective && out != nil && e.windowed(ctx, rq) {
		// A conversation that needed the window keeps it, at its
		// remembered cut: flipping between shapes would rewrite the
		// prefix.
		fits = false
	}
	if fits && !sticky {
		return out, nil
	}
	if mode == ModeSelective {
		return e.windowDigested(ctx, rq, b, r, out, windowNow)
	}
	// auto: the digests are not enough (or would not pay before they
	// were). The sliding window's cut — selective's, deep and rare — with
	// summaries of what it omits in place of its marker.
	if !sticky {
		if !windowNow {
			addReason(r, "; digests not enough for the limit, the oldest steps summarized", PathCut)
		}
		e.takeCut(ctx, rq)
	}
	e.standIns(rq)
	return e.truncateBody(ctx, rq, out != nil, b, r)
}

// windowDigested windows a selective request still over the threshold
// after its digests (digested; nil: none were made).
func (e *Engine) windowDigested(ctx context.Context, rq *job, b budgets, r *Report, digested []byte, windowNow bool) ([]byte, error) {
	// The cut carries auto's stand-ins of what it omits, written without
	// the summarizer (selective calls none): never a bare marker.
	e.standIns(rq)
	rq.extractiveSummaries = true
	w, err := e.truncateBody(ctx, rq, digested != nil, b, r)
	if err == nil && w == nil && digested != nil {
		// The window would omit nothing: the digests made stay.
		r.Applied = AppliedSelective
		return digested, nil
	}
	if w != nil {
		r.Applied = AppliedTruncate // selective's window, its stand-ins extractive
	}
	switch {
	case w != nil && windowNow:
		addDegraded(r, DegradedWindow, "sliding window used on the digests' first bust: the digests alone would not pay for it before the window had to come")
	case w != nil:
		addDegraded(r, DegradedWindow, "selective condensing was not enough; sliding window used")
	}
	return w, err
}

// foldOnce condenses rq by auto's one fold of its conversation: full
// mode's fold, replayed until it would move. From the request where it
// would, the conversation takes the digests and the cut (decisionAutoCut
// is made): switched, and the caller condenses rq so. The
// switch costs no extra bust — the fold's move would have re-written from
// the head too — and the cut, deep and rare, costs less than folding again
// and again (BENCHMARKS.md).
func (e *Engine) foldOnce(ctx context.Context, rq *job, b budgets, r *Report) (out []byte, switched bool, err error) {
	b.foldOnce = true
	out, err = e.fullOrWindow(ctx, rq, b, r)
	if !errors.Is(err, errFoldMoves) {
		if err == nil {
			addReason(r, autoFoldsReason, PathAutoFolds)
		}
		return out, false, err
	}
	rq.changes, r.Applied = nil, ""
	addReason(r, autoSwitchReason, PathAutoSwitch)
	e.takeCut(ctx, rq)
	return nil, true, nil
}

// fullOrWindow condenses rq by full mode's folds, or by the sliding window
// when they cannot reach the target.
func (e *Engine) fullOrWindow(ctx context.Context, rq *job, b budgets, r *Report) ([]byte, error) {
	out, err := e.full(ctx, rq, b, r)
	if err != nil || out != nil {
		return out, err
	}
	addDegraded(r, DegradedWindow, "full condensing could not reach the target; sliding window used")
	return e.truncate(ctx, rq, b, r)
}

// takeCut records that an auto conversation takes the digests and the cut
// from here on (decisionAutoCut): flipping back to folds would rewrite
// its prefix.
func (e *Engine) takeCut(ctx context.Context, rq *job) {
	if rq.keeps() {
		e.decide(ctx, rq, decisionAutoCut, func() int { return 1 })
	}
}

// standIns has rq's window cut carry stand-ins of what it omits in place
// of the marker: summaries, or notes (condense.stand_ins).
func (e *Engine) standIns(rq *job) {
	rq.summarizeCut, rq.notes = true, e.opts.StandIns == StandInNotes
}
