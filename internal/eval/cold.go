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
// The cold-turn arms replay a chat session again with the engine's clock
// moved by idle gaps drawn as keep-alive's estimate draws them
// (idleGaps), one second between the other requests: with cold turns on,
// after a gap longer than the cache's lifetime a request over the
// threshold is condensed to the target; with them off
// (condense.cold_turns: false), as any other — its engine sees the gaps
// all the same (its estimates, and so auto's LLM allowance, do). Both
// are priced with the gaps: a request after a gap longer than the cache's
// lifetime writes its whole prompt again.

// idleGaps returns the idle gap before each replayed request of sess (0:
// none), drawn as keep-alive's estimate draws them (drawGap, from a seed
// of the session's name, in the order of the requests), before every
// request that carries a user message after the agent's last step: the
// user came back — after a turn-ending answer (keep-alive's idle points,
// idleBefore), or with a follow-up while the agent worked (the generated
// sessions' only kind: they have no turn-ending answer). Keep-alive's
// pings follow only turn-ending answers, so its estimate keeps to those;
// a cold turn follows any gap. (When a session's user messages all follow
// turn-ending answers, the gaps are keep-alive's.)
func idleGaps(sess *corpus.Session, every int) []time.Duration {
	h := fnv.New64a()
	h.Write([]byte(sess.Name))
	rng := rand.New(rand.NewPCG(h.Sum64(), 22))
	idle := userReturns(sess, every)
	gaps := make([]time.Duration, len(idle))
	for i, ok := range idle {
		if i > 0 && ok {
			gaps[i] = drawGap(rng)
		}
	}
	return gaps
}

// userReturns marks the replayed requests (every every-th of the
// session's, and its last, as replay.Run sends them) whose messages after
// the last assistant message include a user message.
func userReturns(s *corpus.Session, every int) []bool {
	ends := s.TurnEnds()
	var out []bool
	for i, n := range ends {
		if i%every != 0 && i != len(ends)-1 {
			continue
		}
		user := false
		for j := n - 1; j > 0 && s.Messages[j].Role != "assistant"; j-- {
			user = user || s.Messages[j].Role == "user"
		}
		out = append(out, user && i > 0)
	}
	return out
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

// idleRow sets row's bill with the idle gaps (gaps) from res: mode off's
// replay (it forwards every request as received, whatever its engine's
// clock), or another mode's replayed with the engine's clock moved by
// the gaps and cold turns off; and its facts.
func idleRow(row *Row, res *replay.Result, gaps []time.Duration) {
	row.billIdle, row.ColdGaps = idleBill(res, gaps, Pricings[0])
	row.ColdIdleGaps = 0
	for _, g := range gaps {
		if g > 0 {
			row.ColdIdleGaps++
		}
	}
	row.IdleFactsSeen, row.IdleFactsKept, row.IdleFactsByKind = res.FactsSeen, res.FactsKept, res.FactsByKind
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
