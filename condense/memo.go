package condense

import (
	"context"
	"maps"
	"slices"
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
	decisionCutLong, decisionCutLongLimit, decisionFrontier, decisionFrontierFirst, decisionAuto,
	decisionAutoFoldEnd, decisionWindowFirst, decisionAutoCut}

// The record's other fields: what changes in place as the conversation
// goes on (window.go's cuts and their notes, cold.go's floors).
var stateNames = []string{cutWindow, cutAfterSummary, cutWindow + noteSuffix, cutAfterSummary + noteSuffix,
	"cold:" + coldFrontier, "cold:" + coldFold}

// legacyKey names field name as the version before the record kept it,
// a key of its own: read while a conversation has no record yet, so one
// condensed before an upgrade keeps its grids and cuts.
func (rq *job) legacyKey(name string) string {
	switch {
	case name == decisionAutoCut:
		return rq.stateKey("auto") // its value was "full"
	case strings.HasSuffix(name, noteSuffix):
		return rq.stateKey(strings.TrimSuffix(name, noteSuffix)) + noteSuffix
	case slices.Contains(stateNames, name):
		return rq.stateKey(name)
	}
	return rq.stateKey("plan:" + name)
}

// stateKey names what the engine keeps about the job's conversation
// under kind (its record; before it, each decision and cut): per caller
// and conversation head, and apart for observe mode, whose would-be
// conversation evolves beside the real one.
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

// convRecord is what the engine keeps about one conversation of one
// caller, in one key of the cache: its frozen decisions and the state
// that moves (its cuts, their notes, its cold floors). It is written with
// compare-and-set, so that of replicas writing at once none loses the
// other's fields: a decision is set if absent (the first replica to
// decide wins), a state field is set (the last writer wins, as a key of
// its own was). A job reads it once; its sub-jobs share it.
type convRecord struct {
	loaded bool
	raw    []byte // as read or last written; nil: absent
	values map[string]string
}

// recordKey names the conversation's record.
func (rq *job) recordKey() string { return rq.stateKey("plan") }

// record returns the conversation's record, read at the job's first need
// of it.
func (e *Engine) record(ctx context.Context, rq *job) *convRecord {
	if rq.record == nil {
		rq.record = &convRecord{}
	}
	p := rq.record
	if !p.loaded && e.cache != nil {
		p.loaded = true
		if raw, ok := e.getState(ctx, rq.recordKey()); ok {
			p.raw, p.values = raw, decodeRecord(raw)
		}
	}
	return p
}

// encodeRecord writes values as a record: "1" (its version), then
// name=value for each, sorted, separated by ';' (no value holds one).
func encodeRecord(values map[string]string) []byte {
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
		b = append(b, values[n]...)
	}
	return b
}

// decodeRecord reads a record (nil: of a version it does not know: taken
// as holding nothing, and written over).
func decodeRecord(raw []byte) map[string]string {
	fields := strings.Split(string(raw), ";")
	if fields[0] != "1" {
		return nil
	}
	values := map[string]string{}
	for _, f := range fields[1:] {
		if n, v, ok := strings.Cut(f, "="); ok {
			values[n] = v
		}
	}
	return values
}

// field returns the record's field name: from the record, or, while the
// conversation has none, from the key the version before kept it under.
func (e *Engine) field(ctx context.Context, rq *job, name string) (string, bool) {
	p := e.record(ctx, rq)
	if v, ok := p.values[name]; ok || p.raw != nil || e.cache == nil {
		return v, ok
	}
	b, ok := e.getState(ctx, rq.legacyKey(name))
	return string(b), ok
}

// decided returns the conversation's decision name if it is made.
func (e *Engine) decided(ctx context.Context, rq *job, name string) (int, bool) {
	if v, ok := rq.decisions[name]; ok {
		return v, true
	}
	s, ok := e.field(ctx, rq, name)
	v, ok := decisionValue(name, s, ok)
	if !ok {
		return 0, false
	}
	if rq.decisions == nil {
		rq.decisions = map[string]int{}
	}
	rq.decisions[name] = v
	return v, true
}

// decisionValue reads a decision's field (ok: it is there).
func decisionValue(name, s string, ok bool) (int, bool) {
	if !ok {
		return 0, false
	}
	if name == decisionAutoCut && s == "full" { // as the version before wrote it
		return 1, true
	}
	v, err := strconv.Atoi(s)
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
		s, _ := e.writeField(ctx, rq, name, strconv.Itoa(v), false)
		if stored, ok := decisionValue(name, s, true); ok {
			v = stored
		}
	}
	if rq.decisions == nil {
		rq.decisions = map[string]int{}
	}
	rq.decisions[name] = v
	return v
}

// setField makes value the record's field name (a state field: the last
// writer wins).
func (e *Engine) setField(ctx context.Context, rq *job, name, value string) {
	if e.cache != nil {
		e.writeField(ctx, rq, name, value, true)
	}
}

// writeField writes name=value into the conversation's record —
// overwriting what it holds when replace, else only when it holds
// nothing for name — and returns what the record holds for name
// afterwards. A record made here takes in what the version before kept
// under keys of its own. A cache without compare-and-set keeps each
// field under a key of its own, as the version before did (decisions set
// if absent); when the cache fails, value is returned: the request goes
// on with its own.
func (e *Engine) writeField(ctx context.Context, rq *job, name, value string, replace bool) (string, bool) {
	sw, ok := e.cache.(Swapper)
	if !ok {
		if replace {
			e.setCache(ctx, rq.legacyKey(name), []byte(value))
			return value, true
		}
		return e.addCache(ctx, rq.legacyKey(name), value), true
	}
	p := e.record(ctx, rq)
	for range 8 {
		next := maps.Clone(p.values)
		if next == nil {
			next = map[string]string{}
			if p.raw == nil {
				for _, n := range append(slices.Clone(decisionNames), stateNames...) {
					if b, ok := e.getState(ctx, rq.legacyKey(n)); ok {
						next[n] = string(b)
					}
				}
			}
		}
		if stored, ok := next[name]; ok && (!replace || stored == value) {
			p.values = next
			return stored, true
		}
		next[name] = value
		raw := encodeRecord(next)
		cur, swapped, err := sw.Swap(context.WithoutCancel(ctx), rq.recordKey(), p.raw, raw, e.opts.OriginalsTTL)
		if err != nil {
			e.log.Warn("a conversation's record could not be written; this request goes on with its own", "field", name, "err", err)
			return value, false
		}
		if swapped {
			p.raw, p.values = raw, next
			return value, true
		}
		p.raw, p.values = cur, decodeRecord(cur)
	}
	return value, false
}
