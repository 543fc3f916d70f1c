package condense

import (
	"context"
	"encoding/binary"
	"time"
)

// Cold turns. A provider keeps a conversation's prompt cache only while
// it is used: past its lifetime (the model's cache TTL) idle, the next
// request writes its whole prompt again, whatever the proxy forwards.
// Editing cached history costs a re-write only while the cache lives, so
// the turn after such a gap is the cheapest moment to condense deeper. On
// a request over the threshold then, each edit the conversation has makes
// now the move its plan would make later, when the request outgrew the
// threshold, and goes at least to the target: the digest frontier to its
// last point; a cut over the target jumps as the plan's stride takes it
// (limit − stride, or the target when that is higher); full mode's fold
// to the first point of its grid after which the request fits the target;
// auto's one fold, over the target, switches to the digests and the cut,
// as when it would move. The warm requests that follow keep its prefix: each new position
// is a floor they never move back from (the cut's is the cut itself).
// A cold turn starts no kind of edit the conversation's warm plan would
// not: one that only digests keeps to its digests while they fit the
// threshold (a cut would trade the facts of the steps it omits for the
// bill). Moving a cut only to the target, not the plan's depth, was
// measured worse: the plan's next deep move came later (BENCHMARKS.md).
//
// A request is cold when its conversation's last use is older than the
// model's cache TTL by the engine's clock. Its last use is the later of
// the conversation's last request forwarded (its prefix record's time, in
// the shared cache: every replica reads the same) and the last keep-alive
// ping that read its cache (Warmed, also in the shared cache). A
// conversation never seen is not cold (nothing says it was idle), nor is
// a request under the threshold: it goes as received, as always.

// coldReason is what a cold request's reason says.
const coldReason = "; cold: idle past the cache's lifetime, its prefix is written again anyway: its edits make their next move now"

// coldTurn reports whether rq comes after an idle gap longer than the
// model's cache lifetime (scope and conv name the conversation's prefix
// record).
func (e *Engine) coldTurn(ctx context.Context, rq *job, conv string) bool {
	key := rq.req.Scope + "\x00" + conv
	prev, ok := e.prefixOf(ctx, key)
	if !ok {
		return false
	}
	last := prev.at
	if w, ok := e.warmedAt(ctx, key); ok && w.After(last) {
		last = w
	}
	return e.now().Sub(last) >= pricesOf(rq.limits).ttl
}

// warmKey names where the last keep-alive ping that read a conversation's
// cache is kept (key: its prefix record's).
func warmKey(key string) string { return "warm:" + key }

// Warmed records that the provider's cache of the conversation conv of
// the caller scope was read, so refreshed, at at by something other than
// a request the engine condensed: a keep-alive ping (package keepalive).
// The conversation is not cold until the cache's lifetime has passed
// after it. Kept in the shared cache (every replica reads it), under a
// key of its own: a ping never rewrites the prefix record a request of
// the conversation may be writing at the same moment.
func (e *Engine) Warmed(ctx context.Context, scope, conv string, at time.Time) {
	key := scope + "\x00" + conv
	if e.cache == nil {
		e.prefixes.warm(key, at)
		return
	}
	if w, ok := e.warmedAt(ctx, key); ok && !at.After(w) {
		return
	}
	e.cache.Set(context.WithoutCancel(ctx), warmKey(key), binary.AppendVarint(nil, at.UnixNano()), e.prefixTTL())
}

// warmedAt returns when Warmed last recorded the conversation's cache read
// (false: never).
func (e *Engine) warmedAt(ctx context.Context, key string) (time.Time, bool) {
	if e.cache == nil {
		p, ok := e.prefixes.latest(key)
		return p.warm, ok && !p.warm.IsZero()
	}
	v, ok := e.getState(ctx, warmKey(key))
	if !ok {
		return time.Time{}, false
	}
	n, k := binary.Varint(v)
	if k <= 0 || k != len(v) {
		return time.Time{}, false
	}
	return time.Unix(0, n), true
}

// The parts a cold turn moves, each remembered as a floor (coldFloor).
const (
	coldFrontier = "frontier" // the digest frontier's step
	coldFold     = "fold"     // the step after full mode's folded chunks
)

// keepColdFloor remembers that a cold turn moved part to step (kept as
// its item's index and hash as received, as a window cut is).
func (e *Engine) keepColdFloor(ctx context.Context, rq *job, part string, step int) {
	if !rq.keeps() || step <= 0 || step >= len(rq.conv.steps) {
		return
	}
	e.setField(ctx, rq, "cold:"+part, rq.cutValue(step))
}

// coldFloor returns the step the conversation's last cold turn moved part
// to, when it is still a step of this request holding the same item; 0
// otherwise.
func (e *Engine) coldFloor(ctx context.Context, rq *job, part string) int {
	v, ok := e.field(ctx, rq, "cold:"+part)
	if !ok {
		return 0
	}
	return max(rq.stepOfValue(v, 0, len(rq.conv.steps)-1), 0)
}

// overTarget reports whether out, a body rq's condensing made, is over
// the target.
func (e *Engine) overTarget(rq *job, out []byte, b budgets) bool {
	if out == nil {
		return false
	}
	vr, err := e.countOut(rq, out)
	return err == nil && vr.Total > b.target
}
