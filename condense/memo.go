package condense

import (
	"context"
	"strconv"
)

// Decisions frozen for one conversation of one caller: each is made once,
// by the cost model, when the conversation first needs it, and stored in
// the cache (set-if-absent, so the first replica to decide wins) so every
// later request lays its grids the same way and replays the same edits
// byte for byte.
const (
	// decisionFold: how far the summaries' fold point moves when the
	// condensed request outgrows the threshold (tokens of the
	// conversation as folded). decisionFoldLong and
	// decisionFoldLongLimit: the plan that replaces it once the
	// conversation has shown it is long — the stride, and the limit
	// (below the threshold when that is cheaper) at which it moves.
	decisionFold          = "fold"
	decisionFoldLong      = "foldlong"
	decisionFoldLongLimit = "foldlonglimit"
	// decisionFoldBreak is the step at which a chunk of summaries closes
	// whatever it holds, plus one (1: none), decided at the
	// conversation's first fold (fold.go's breakAt).
	decisionFoldBreak = "foldbreak"
	// decisionWindow is how far the sliding window's cut moves at once
	// (tokens of the conversation as received).
	decisionWindow = "window"
	// decisionCutLong and decisionCutLongLimit: auto's cut (the window
	// with summaries) once the conversation has shown it is long — its
	// stride and the limit at which it moves, as full mode's long plan.
	decisionCutLong      = "cutlong"
	decisionCutLongLimit = "cutlonglimit"
	// decisionFrontier is how far selective condensing's digest frontier
	// moves at once (tokens of the conversation as received).
	decisionFrontier = "frontier"
	// decisionFrontierFirst is the step the digest frontier stood at
	// when the conversation was first condensed over the threshold
	// (plus 1): later requests move it on only when they must.
	decisionFrontierFirst = "frontierfirst"
	// decisionCondensed marks a conversation condensed once (with
	// condense.defer: deferral is over for it).
	decisionCondensed = "condensed"
	// decisionAuto is auto's way for the conversation, chosen at its
	// first condensation: autoDigests or autoFolds (plan.go).
	decisionAuto = "auto"
	// decisionAutoFoldEnd is the step after auto's one fold of the
	// conversation (autoFolds): a request whose fold would end elsewhere
	// switches the conversation to the digests and the cut.
	decisionAutoFoldEnd = "autofoldend"
	// decisionWindowFirst is selective's and auto's way for the
	// conversation, chosen at its first condensation: windowLater (the
	// digests, the window — auto: the cut — when they no longer fit) or
	// windowNow (the window over the digests, on their bust: plan.go's
	// windowNowOf).
	decisionWindowFirst = "windowfirst"
)

// decisionKey names one decision of a conversation.
func (rq *job) decisionKey(name string) string { return rq.stateKey("plan:" + name) }

// stateKey names what the engine keeps about the job's conversation
// under kind (its decisions, its window cut, auto's choice of summaries):
// per caller and conversation head, and apart for observe mode, whose
// would-be conversation evolves beside the real one.
func (rq *job) stateKey(kind string) string {
	ns := ""
	if rq.req.observing {
		ns = "observe/"
	}
	return kind + ":" + ns + rq.req.Scope + ":" + rq.head()
}

// head returns the hash of the conversation's head (system, tools, first
// user message), made once per job: what names the conversation in the
// keys the engine keeps.
func (rq *job) head() string {
	if rq.headHash == "" {
		rq.headHash = rq.conv.hashMessages(0, rq.conv.head)
	}
	return rq.headHash
}

// keeps reports whether the job may write what it decides (not a
// counting request; observe mode writes in its own namespace).
func (rq *job) keeps() bool { return !rq.req.CountOnly || rq.req.observing }

// decided returns the conversation's decision name if it is made.
func (e *Engine) decided(ctx context.Context, rq *job, name string) (int, bool) {
	if v, ok := rq.decisions[name]; ok {
		return v, true
	}
	b, ok := e.getCache(ctx, rq.decisionKey(name))
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(string(b))
	if err != nil || v <= 0 {
		return 0, false
	}
	if rq.decisions == nil {
		rq.decisions = map[string]int{}
	}
	rq.decisions[name] = v
	return v, true
}

// decide returns the conversation's decision name, making it with make
// when it is not made yet and storing it. Counting requests decide the
// same way but keep nothing.
func (e *Engine) decide(ctx context.Context, rq *job, name string, make func() int) int {
	if v, ok := e.decided(ctx, rq, name); ok {
		return v
	}
	v := max(make(), 1)
	if rq.keeps() && e.cache != nil {
		if stored, err := strconv.Atoi(e.addCache(ctx, rq.decisionKey(name), strconv.Itoa(v))); err == nil && stored > 0 {
			v = stored
		}
	}
	if rq.decisions == nil {
		rq.decisions = map[string]int{}
	}
	rq.decisions[name] = v
	return v
}
