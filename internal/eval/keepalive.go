package eval

import (
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/replay"
)

// Keep-alive over idle gaps (package keepalive, with its defaults): the
// replay sends its requests back to back, but an agent that ends its turn
// waits for its user, and a gap longer than the prompt cache's lifetime
// makes the next request write its whole prompt again. The estimate draws
// a gap before every request that follows a turn-ending answer and prices
// the session with and without keep-alive's pings.
const (
	kaTTL       = 5 * time.Minute // Anthropic's cache
	kaMaxPings  = 2
	kaMinPrefix = 4096
)

// drawGap draws an idle gap as agents' traffic shows them (issue 22): a
// third of the gaps after a turn-ending answer pass 5 minutes, half of
// those by less than 5 minutes more. So: 2/3 between 10 s and 5 min, 1/6
// between 5 and 10 min, 1/6 between 10 min and an hour, uniform within.
func drawGap(r *rand.Rand) time.Duration {
	between := func(a, b time.Duration) time.Duration { return a + time.Duration(r.Int64N(int64(b-a))) }
	switch x := r.IntN(6); {
	case x < 4:
		return between(10*time.Second, 5*time.Minute)
	case x < 5:
		return between(5*time.Minute, 10*time.Minute)
	default:
		return between(10*time.Minute, time.Hour)
	}
}

// idleBefore marks the replayed requests (every every-th of the session's,
// and its last, as replay.Run sends them) that follow an idle gap: the last
// answer they carry ended the agent's turn (no tool calls, a user message
// next).
func idleBefore(s *corpus.Session, every int) []bool {
	ends := s.TurnEnds()
	var out []bool
	for i, n := range ends {
		if i%every != 0 && i != len(ends)-1 {
			continue
		}
		idle := false
		for j := n - 1; j > 0; j-- {
			if m := s.Messages[j]; m.Role == "assistant" {
				idle = len(m.ToolCalls) == 0 && j+1 < len(s.Messages) && s.Messages[j+1].Role == "user"
				break
			}
		}
		out = append(out, idle)
	}
	return out
}

// keepAliveSaving prices reqs under p with a gap (from gap) before each
// request idle marks, without and with keep-alive, and returns the gaps
// and the net saving as a share of the bill without: a request after a
// gap longer than the cache's life writes its whole prompt again; a ping
// re-sends the previous request at the cached price plus one output
// token, at the lifetime less a tenth, at most kaMaxPings times, when it
// costs less than the re-write it saves, and keeps the cache alive for a
// lifetime after it.
func keepAliveSaving(reqs []replay.Request, idle []bool, p Pricing, gap func() time.Duration) (gaps int, saving float64) {
	lead := min(kaTTL/10, 30*time.Second)
	var without, with float64
	for i, r := range reqs {
		base := p.requestBill(r.FwdCounted, r.CachedTokens)
		if i == 0 || i >= len(idle) || !idle[i] {
			without += base
			with += base
			continue
		}
		gaps++
		g := gap()
		rewrite := p.Fresh * float64(r.FwdCounted)
		if g <= kaTTL {
			without += base
		} else {
			without += rewrite
		}
		prompt := float64(reqs[i-1].FwdCounted)
		alive := kaTTL
		if reqs[i-1].FwdCounted >= kaMinPrefix && p.Cached*prompt+p.SummaryOut < (p.Fresh-p.Cached)*prompt {
			for n, t := 0, kaTTL-lead; n < kaMaxPings && t < g; n, t = n+1, t+kaTTL-lead {
				with += p.Cached*prompt + p.SummaryOut // the main model's output price
				alive = t + kaTTL
			}
		}
		if g <= alive {
			with += base
		} else {
			with += rewrite
		}
	}
	if without == 0 {
		return gaps, 0
	}
	return gaps, (without - with) / without
}

// keepAliveRow sets row's keep-alive estimate for a chat replay of sess,
// Anthropic-style, with gaps drawn from a seed of the session's name (the
// same gaps in every mode).
func keepAliveRow(row *Row, res *replay.Result, sess *corpus.Session, every int) {
	h := fnv.New64a()
	h.Write([]byte(sess.Name))
	rng := rand.New(rand.NewPCG(h.Sum64(), 22))
	row.IdleGaps, row.KeepAliveSaving = keepAliveSaving(res.Requests, idleBefore(sess, every), Pricings[0], func() time.Duration { return drawGap(rng) })
}
