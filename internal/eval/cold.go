package eval

import (
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/replay"
)

// Cold turns (condense/cold.go) over idle gaps: the replay sends its
// requests back to back, so the proxy's engine never sees an idle gap.
// The cold-turn arm replays a chat session again with the engine's clock
// moved by the gaps keep-alive's estimate draws (keepalive.go: the same
// gaps, before the same requests), one second between the others: after a
// gap longer than the cache's lifetime a request over the threshold is
// condensed to the target. Both arms — the replay whose engine does not
// see the gaps (every request forwarded as today) and the cold-turn one —
// are priced with the gaps: a request after a gap longer than the cache's
// lifetime writes its whole prompt again.

// idleGaps returns the idle gap before each replayed request of sess (0:
// none), drawn as keepAliveRow draws them: from a seed of the session's
// name, in the order of the requests that follow a turn-ending answer
// (the first request has none).
func idleGaps(sess *corpus.Session, every int) []time.Duration {
	h := fnv.New64a()
	h.Write([]byte(sess.Name))
	rng := rand.New(rand.NewPCG(h.Sum64(), 22))
	idle := idleBefore(sess, every)
	gaps := make([]time.Duration, len(idle))
	for i, ok := range idle {
		if i > 0 && ok {
			gaps[i] = drawGap(rng)
		}
	}
	return gaps
}

// idleBill is the Anthropic-style bill (p) of reqs with gaps before them,
// the summarizer's calls of res included: a request after a gap longer
// than the cache's lifetime (kaTTL) writes its whole prompt; the others
// read their prefix shared with the request before them. It returns the
// bill and the gaps longer than the lifetime.
func idleBill(res *replay.Result, gaps []time.Duration, p Pricing) (bill float64, cold int) {
	for i, r := range res.Requests {
		if i < len(gaps) && gaps[i] > kaTTL {
			bill += p.Fresh * float64(r.FwdCounted)
			cold++
			continue
		}
		bill += p.requestBill(r.FwdCounted, r.CachedTokens)
	}
	return bill + summarizerBill(res, p), cold
}

// replayClock is the engine's clock in the cold-turn arm: before each
// replayed request (replay.Options.Before) it moves a second, and the
// request's idle gap more.
type replayClock struct {
	mu   sync.Mutex
	now  time.Time
	gaps []time.Duration
	next int // the replayed request the next Before call is for
}

// coldClockStart is when the cold-turn arm's clock starts.
var coldClockStart = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

func newReplayClock(gaps []time.Duration) *replayClock {
	return &replayClock{now: coldClockStart, gaps: gaps}
}

// Now is the engine's clock.
func (c *replayClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// before moves the clock to the next replayed request (replay.Run calls
// Before once per request it sends, whatever its index).
func (c *replayClock) before(int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Second)
	if c.next < len(c.gaps) {
		c.now = c.now.Add(c.gaps[c.next])
	}
	c.next++
}

// idleRow sets row's bill with the idle gaps (gaps) of blind, the replay
// whose engine did not see them; mode off's bill in the cold-turn arm is
// the same (it forwards every request as received either way), every
// other mode's is not known (-1) until coldArm sets it.
func idleRow(row *Row, blind *replay.Result, gaps []time.Duration) {
	row.billIdle, row.ColdGaps = idleBill(blind, gaps, Pricings[0])
	row.billCold = -1
	if row.Mode == "off" {
		row.billCold = row.billIdle
	}
}

// coldArm sets row's cold-turn fields from cold, the cold-turn arm's
// replay.
func coldArm(row *Row, cold *replay.Result, gaps []time.Duration) {
	row.billCold, _ = idleBill(cold, gaps, Pricings[0])
	row.ColdTurns = 0
	for _, r := range cold.Requests {
		if r.Cold {
			row.ColdTurns++
		}
	}
	row.ColdFactsSeen, row.ColdFactsKept, row.ColdFactsByKind = cold.FactsSeen, cold.FactsKept, cold.FactsByKind
}
