package condense

import (
	"context"
	"maps"
	"sort"
	"strconv"
	"strings"
	"time"
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
	// decisionAutoCut marks an auto conversation that takes the digests
	// and the cut from here on (decide.go's takeCut): it once needed
	// summaries, or its fold would have moved.
	decisionAutoCut = "autocut"
)

// decisionNames are every decision a conversation's record holds.
var decisionNames = []string{decisionFold, decisionFoldLong, decisionFoldLongLimit, decisionFoldBreak, decisionWindow,
	decisionCutLong, decisionCutLongLimit, decisionFrontier, decisionFrontierFirst, decisionCondensed, decisionAuto,
	decisionAutoFoldEnd, decisionWindowFirst, decisionAutoCut}

// decisionKey names one decision of a conversation as the version before
// the record kept it, a key of its own: read while a conversation has no
// record yet, so one condensed before an upgrade keeps its grids.
func (rq *job) decisionKey(name string) string {
	if name == decisionAutoCut {
		return rq.stateKey("auto") // its value was "full"
	}
	return rq.stateKey("plan:" + name)
}

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

// Swapper is an optional capability of the cache: compare-and-set across
// replicas (cache.Memory, cache.Redis, cache.Layered). old nil: the key
// must be absent.
type Swapper interface {
	Swap(ctx context.Context, key string, old, value []byte, ttl time.Duration) (current []byte, swapped bool, err error)
}

// decisionRecord is a conversation's frozen decisions as its record in
// the cache holds them: one key per caller and conversation, every
// decision in it, written with compare-and-set so that, of replicas
// deciding at once, the first to write wins each decision and none is
// lost. A job reads it once; its sub-jobs share it.
type decisionRecord struct {
	loaded bool
	raw    []byte // as read or last written; nil: absent
	values map[string]int
}

// recordKey names the conversation's decision record.
func (rq *job) recordKey() string { return rq.stateKey("plan") }

// record returns the conversation's decision record, read at the job's
// first need of it.
func (e *Engine) record(ctx context.Context, rq *job) *decisionRecord {
	if rq.plan == nil {
		rq.plan = &decisionRecord{}
	}
	p := rq.plan
	if !p.loaded && e.cache != nil {
		p.loaded = true
		if raw, ok := e.getState(ctx, rq.recordKey()); ok {
			p.raw, p.values = raw, decodeDecisions(raw)
		}
	}
	return p
}

// encodeDecisions writes values as a record: "1" (its version), then
// name=value for each, sorted, separated by ';'.
func encodeDecisions(values map[string]int) []byte {
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	b := []byte("1")
	for _, n := range names {
		b = append(b, ';')
		b = append(b, n...)
		b = append(b, '=')
		b = strconv.AppendInt(b, int64(values[n]), 10)
	}
	return b
}

// decodeDecisions reads a record (nil: of a version it does not know:
// taken as holding nothing, and written over).
func decodeDecisions(raw []byte) map[string]int {
	fields := strings.Split(string(raw), ";")
	if fields[0] != "1" {
		return nil
	}
	values := map[string]int{}
	for _, f := range fields[1:] {
		n, v, ok := strings.Cut(f, "=")
		if x, err := strconv.Atoi(v); ok && err == nil && x > 0 {
			values[n] = x
		}
	}
	return values
}

// decided returns the conversation's decision name if it is made.
func (e *Engine) decided(ctx context.Context, rq *job, name string) (int, bool) {
	if v, ok := rq.decisions[name]; ok {
		return v, true
	}
	p := e.record(ctx, rq)
	v, ok := p.values[name]
	if !ok && p.raw == nil {
		v, ok = e.legacyDecision(ctx, rq, name)
	}
	if !ok {
		return 0, false
	}
	if rq.decisions == nil {
		rq.decisions = map[string]int{}
	}
	rq.decisions[name] = v
	return v, true
}

// legacyDecision reads name from its own key, as the version before the
// record wrote it.
func (e *Engine) legacyDecision(ctx context.Context, rq *job, name string) (int, bool) {
	b, ok := e.getCache(ctx, rq.decisionKey(name))
	if !ok {
		return 0, false
	}
	if name == decisionAutoCut {
		return 1, true
	}
	v, err := strconv.Atoi(string(b))
	return v, err == nil && v > 0
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
		v = e.storeDecision(ctx, rq, name, v)
	}
	if rq.decisions == nil {
		rq.decisions = map[string]int{}
	}
	rq.decisions[name] = v
	return v
}

// storeDecision adds name=v to the conversation's record and returns the
// value the record holds for name: v, or another replica's, written
// first. A record made here takes in what the version before it kept
// under keys of their own. Without compare-and-set in the cache, or when
// the cache fails, the decision is the job's own.
func (e *Engine) storeDecision(ctx context.Context, rq *job, name string, v int) int {
	sw, ok := e.cache.(Swapper)
	if !ok {
		return v
	}
	p := e.record(ctx, rq)
	for range 8 {
		next := maps.Clone(p.values)
		if next == nil {
			next = map[string]int{}
			if p.raw == nil {
				for _, n := range decisionNames {
					if x, ok := e.legacyDecision(ctx, rq, n); ok {
						next[n] = x
					}
				}
			}
		}
		if stored, ok := next[name]; ok {
			p.values = next
			return stored
		}
		next[name] = v
		raw := encodeDecisions(next)
		cur, swapped, err := sw.Swap(context.WithoutCancel(ctx), rq.recordKey(), p.raw, raw, e.opts.OriginalsTTL)
		if err != nil {
			e.log.Warn("a conversation's decision could not be stored; this request goes on with its own", "decision", name, "err", err)
			return v
		}
		if swapped {
			p.raw, p.values = raw, next
			return v
		}
		p.raw, p.values = cur, decodeDecisions(cur)
	}
	return v
}
