package condense

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/selective"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

var anthropic = prices{read: 0.1, write: 1.25, ttl: 5 * time.Minute}

// TestPlanFoldsIsCheapest: the plan costs no more than any other stride
// the simulation could choose, and a cut that must happen anyway goes
// deep: a shallow one re-writes more of the request and comes back sooner.
func TestPlanFoldsIsCheapest(t *testing.T) {
	for _, h := range []float64{4, 30, 300} {
		for _, per := range []float64{0, 1.3, 5} {
			c := foldCase{limit: 96000, floor: 20000, fixed: 2000, growth: 1200, perToken: per, minStride: 12000, horizon: h}
			p := anthropic.planFolds(c)
			best := anthropic.foldCost(c, p.Limit, p.Stride)
			for s := c.minStride; s <= c.limit-c.floor; s += 1000 {
				if cost := anthropic.foldCost(c, c.limit, s); cost < best*0.98 { // the plan searches a grid of 17 strides
					t.Errorf("horizon %g, summarizer %g: stride %d costs %.0f, below the plan's %d at %.0f", h, per, s, cost, p.Stride, best)
					break
				}
			}
			if h == 300 && p.Stride < 60000 {
				t.Errorf("horizon %g, summarizer %g: a long session cuts only %d deep of the %d possible", h, per, p.Stride, c.limit-c.floor)
			}
		}
	}
}

// TestPlanFoldsLowLimit: allowed to, a plan for a long conversation folds
// before the threshold, and never below the least limit it is given.
func TestPlanFoldsLowLimit(t *testing.T) {
	c := foldCase{limit: 96000, floor: 20000, fixed: 2000, growth: 1200, perToken: 1.3, minStride: 12000, horizon: 400}
	if p := anthropic.planFolds(c); p.Limit != c.limit {
		t.Errorf("without lowLimit the limit moved to %d", p.Limit)
	}
	c.lowLimit = true
	p := anthropic.planFolds(c)
	if p.Limit >= c.limit {
		t.Errorf("a long conversation is not kept smaller: limit %d", p.Limit)
	}
	if got, low := anthropic.foldCost(c, p.Limit, p.Stride), anthropic.foldCost(c, c.limit, anthropic.planFolds(foldCase{limit: 96000, floor: 20000, fixed: 2000, growth: 1200, perToken: 1.3, minStride: 12000, horizon: 400}).Stride); got > low {
		t.Errorf("the plan's cost %.0f is above the threshold plan's %.0f", got, low)
	}
	c.minLimit = 64000
	if p := anthropic.planFolds(c); p.Limit < c.minLimit {
		t.Errorf("limit %d under the least %d", p.Limit, c.minLimit)
	}
}

// TestFrontierStride: the square-root rule, wider when busts cost more
// relative to reads.
func TestFrontierStride(t *testing.T) {
	a := anthropic.frontierStride(8000, 1200)
	o := prices{read: 0.5, write: 1}.frontierStride(8000, 1200)
	if a < 10000 || a > 20000 {
		t.Errorf("Anthropic prices: frontier stride %d, want about 15k", a)
	}
	if o >= a {
		t.Errorf("OpenAI-style prices (cheap busts) stride %d, not below Anthropic's %d", o, a)
	}
}

func TestPricesDefaults(t *testing.T) {
	p := pricesOf(ModelLimits{})
	if p.read != 0.1 || p.write != 1.25 || p.ttl != 5*time.Minute {
		t.Errorf("defaults %+v", p)
	}
	if p.output != 5 {
		t.Errorf("default output price %g, want 5 (Anthropic's)", p.output)
	}
	if p := pricesOf(ModelLimits{OutputPrice: -1}); p.output != 5 {
		t.Errorf("negative output price: %g, want the default 5", p.output)
	}
	p = pricesOf(ModelLimits{CacheRead: 0.5, CacheWrite: 1, CacheTTL: time.Hour, OutputPrice: 8})
	if p.read != 0.5 || p.write != 1 || p.ttl != time.Hour || p.output != 8 {
		t.Errorf("given prices not kept: %+v", p)
	}
}

// TestSummaryPriceFollowsTheModel: the planner prices a summary at the
// output price of the model that writes it — Gemini's and GPT-5's 8×
// above gpt-4o's 4× —, and a summary_model's input and output at its
// prices relative to the request's model's input price: one at a third
// of the input price costs less per token than the request's own model.
func TestSummaryPriceFollowsTheModel(t *testing.T) {
	limits := map[string]ModelLimits{
		"gpt-4o":         {InputPrice: 2.5, OutputPrice: 4},
		"gemini-2.5-pro": {InputPrice: 1.25, OutputPrice: 8},
		"gpt-5":          {InputPrice: 1.25, OutputPrice: 8},
		"claude":         {InputPrice: 3},                 // no output price: 5
		"small":          {InputPrice: 1, OutputPrice: 5}, // a third of claude's input price
		"unpriced":       {OutputPrice: 4},                // no input price: taken as the request's
	}
	models := ModelsFunc(func(m string) ModelLimits {
		l := limits[m]
		l.Window, l.Threshold, l.Encoding, l.SafetyFactor = 200_000, 0.8, tokenizer.O200kBase, 1
		return l
	})
	engine := func(summaryModel string) *Engine {
		return New(Deps{Counter: counter, Models: models, Summarizer: &countingSummarizer{}}, Options{SummaryModel: summaryModel})
	}
	jobOf := func(model string) *job { return &job{reqState: &reqState{model: model, limits: models.Limits(model)}} }
	const summary, chunk = 1000, 12000
	per := func(e *Engine, model string) float64 { return e.summaryPerToken(jobOf(model), summary, chunk) }
	e := engine("")
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	for model, out := range map[string]float64{"gpt-4o": 4, "gemini-2.5-pro": 8, "gpt-5": 8, "claude": 5} {
		if in, o := e.summaryPrices(jobOf(model)); in != 1 || o != out {
			t.Errorf("%s summarizing itself: in %g out %g, want 1 and %g", model, in, o, out)
		}
		if got := per(e, model); !near(got, 1+out*summary/chunk) {
			t.Errorf("%s: %g per token, want %g", model, got, 1+out*summary/chunk)
		}
	}
	if g, o := per(e, "gemini-2.5-pro"), per(e, "gpt-4o"); g <= o {
		t.Errorf("Gemini's summaries (%g per token) not dearer than gpt-4o's (%g)", g, o)
	}
	if g, o := per(e, "gpt-5"), per(e, "gpt-4o"); g <= o {
		t.Errorf("GPT-5's summaries (%g per token) not dearer than gpt-4o's (%g)", g, o)
	}
	small := engine("small")
	if in, out := small.summaryPrices(jobOf("claude")); !near(in, 1.0/3) || !near(out, 5.0/3) {
		t.Errorf("summary_model at a third of claude's input price: in %g out %g, want 1/3 and 5/3", in, out)
	}
	if s, own := per(small, "claude"), per(e, "claude"); !near(s, own/3) {
		t.Errorf("summary_model at a third of the input price: %g per token, want a third of %g", s, own)
	}
	if in, out := engine("unpriced").summaryPrices(jobOf("claude")); in != 1 || out != 4 {
		t.Errorf("a summary model without an input price: in %g out %g, want 1 and its 4", in, out)
	}
	if in, out := engine("claude").summaryPrices(jobOf("claude")); in != 1 || out != 5 {
		t.Errorf("summary_model naming the request's model: in %g out %g, want 1 and 5", in, out)
	}
}

// TestBillEstimates: a conversation's second request reads its shared
// prefix from the cache; after the cache's lifetime it is all written;
// the uncondensed counterfactual reads the previous request as received.
func TestBillEstimates(t *testing.T) {
	// The engine's background work reads the clock too: an atomic, so
	// moving it here is no race.
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC).UnixNano())
	e := New(Deps{Counter: counter, Models: ModelsFunc(func(string) ModelLimits {
		return ModelLimits{Window: 1_000_000, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1, CacheTTL: 5 * time.Minute}
	}), Cache: cache.NewMemory(64 << 20), Now: func() time.Time { return time.Unix(0, now.Load()) }}, Options{})
	msgs := session(4, 30)
	send := func(n int) Report {
		res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: body(t, msgs[:n]), Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		return res.Report
	}
	first := send(len(msgs) - 4)
	if first.CacheRead != 0 || first.CacheWrite != first.TokensAfter || first.Bill != 1.25*float64(first.TokensAfter) {
		t.Fatalf("first request: read %d write %d bill %.0f of %d", first.CacheRead, first.CacheWrite, first.Bill, first.TokensAfter)
	}
	now.Add(int64(time.Minute))
	second := send(len(msgs) - 2)
	if second.CacheRead < first.TokensAfter*9/10 || second.CacheRead+second.CacheWrite != second.TokensAfter {
		t.Fatalf("second request within the TTL: read %d write %d (previous %d tokens)", second.CacheRead, second.CacheWrite, first.TokensAfter)
	}
	if second.UncondensedRead != second.CacheRead || second.Bill != second.BillUncondensed {
		t.Errorf("a request forwarded as received: bill %.0f vs uncondensed %.0f", second.Bill, second.BillUncondensed)
	}
	now.Add(int64(6 * time.Minute))
	third := send(len(msgs))
	if third.CacheRead != 0 || third.UncondensedRead != 0 {
		t.Errorf("after the cache's lifetime: read %d (uncondensed %d), want 0", third.CacheRead, third.UncondensedRead)
	}
}

// TestEagerDigests: with selective.eager, old tool outputs are digested
// under the threshold, the newest steps kept verbatim; without it the
// same request passes untouched.
func TestEagerDigests(t *testing.T) {
	sess, _ := corpus.Synthetic(7, 200_000)
	b, err := sess.Request("gpt-4o", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, eager := range []bool{false, true} {
		e := New(Deps{Counter: counter, Models: limits(1_000_000), Cache: cache.NewMemory(64 << 20)},
			Options{SelectiveEnabled: true, SelectiveEager: eager, Selective: selective.Options{KeepRecentToolOutputs: 5}})
		res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeSelective, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		r := res.Report
		if !eager {
			if r.Applied != AppliedNone || !bytes.Equal(res.Body, b) {
				t.Errorf("without eager: applied %s", r.Applied)
			}
			continue
		}
		if r.Applied != AppliedSelective || r.TokensAfter >= r.TokensBefore || len(r.Changes) == 0 {
			t.Fatalf("eager: applied %s, %d → %d tokens, %d changes", r.Applied, r.TokensBefore, r.TokensAfter, len(r.Changes))
		}
		validate(t, res.Body)
		last := r.Changes[len(r.Changes)-1].From
		if last >= len(r.Received)-5 {
			t.Errorf("eager digested item %d of %d: a protected newest output", last, len(r.Received))
		}
	}
}

// TestEagerBriefs: with eager digests, outputs a wide stride behind the
// frontier keep only a brief (what their digest's marker said) — except
// logs, whose failing tests stay — and every output keeps its id.
func TestEagerBriefs(t *testing.T) {
	sess, _ := corpus.Synthetic(3, 900_000)
	b, err := sess.Request("gpt-4o", 0)
	if err != nil {
		t.Fatal(err)
	}
	e := New(Deps{Counter: counter, Models: ModelsFunc(func(string) ModelLimits {
		return ModelLimits{Window: 2_000_000, Threshold: 0.75, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
	}), Cache: cache.NewMemory(64 << 20)}, Options{SelectiveEnabled: true, SelectiveEager: true, MinSavingsTokens: 12000})
	res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeSelective, Scope: "s"})
	if err != nil || res.Report.Applied != AppliedSelective {
		t.Fatalf("err %v, applied %s (%s)", err, res.Report.Applied, res.Report.Reason)
	}
	validate(t, res.Body)
	briefs, logs, firstDigest := 0, 0, -1
	for i, c := range res.Report.Changes {
		switch {
		case strings.HasPrefix(c.Text, "[condense-proxy brief of "):
			briefs++
			if firstDigest >= 0 {
				t.Fatalf("change %d: a brief after a full digest: the brief boundary is not behind the digests", i)
			}
			if strings.Contains(c.Text, "\n") || !strings.Contains(c.Text, "/v1/condense/originals/"+c.ID) {
				t.Fatalf("brief %q", c.Text)
			}
		case strings.Contains(c.Text, " — log,"):
			logs++
			if !strings.Contains(c.Text, "\n") {
				t.Fatalf("a log was briefed: %q", c.Text)
			}
		default:
			if firstDigest < 0 {
				firstDigest = i
			}
		}
	}
	if briefs == 0 || firstDigest < 0 {
		t.Fatalf("%d briefs, first full digest at %d of %d changes", briefs, firstDigest, len(res.Report.Changes))
	}
}

// TestEagerFrontierMovesRarely: with selective.eager a conversation under
// the threshold moves its digest frontier — re-writing the cached tail
// after it — by the cost model's stride, not every other request: each
// move must carry several requests' growth of newly aged outputs.
func TestEagerFrontierMovesRarely(t *testing.T) {
	sess, _ := corpus.Synthetic(5, 300_000)
	e := New(Deps{Counter: counter, Models: ModelsFunc(func(string) ModelLimits {
		return ModelLimits{Window: 128_000, Threshold: 0.75, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
	}), Cache: cache.NewMemory(64 << 20)}, Options{SelectiveEnabled: true, SelectiveEager: true, Selective: selective.Options{KeepRecentToolOutputs: 3}})
	prev := 0 // tokens the previous request forwarded
	requests, moves := 0, 0
	for _, n := range sess.TurnEnds() {
		b, err := sess.Request("gpt-4o", n)
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeSelective, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Report.TokensBefore > 96_000 {
			break // over the threshold: not eager's stride alone
		}
		if prev > 0 {
			requests++
			// The cache serves the previous request as a prefix unless
			// an edit moved into it.
			if res.Report.CacheRead < prev*97/100 {
				moves++
			}
		}
		prev = res.Report.TokensAfter
	}
	if requests < 30 {
		t.Fatalf("only %d requests under the threshold", requests)
	}
	t.Logf("the digest frontier moved on %d of %d requests", moves, requests)
	if moves == 0 || moves*4 > requests {
		t.Errorf("the digest frontier moved on %d of %d requests, want some and at most a quarter", moves, requests)
	}
}

// TestAutoCosts: priced over the requests to come, digests that remove
// little of the request (and so re-write its prefix again soon) cost more
// than a fold that removes much; digests that remove as much as the fold,
// with no summaries to pay, cost less.
func TestAutoCosts(t *testing.T) {
	base := autoCase{in: 100_000, limit: 96_000, growth: 1_000, horizon: 80, tail: 8_000,
		folded: 40_000, foldKept: 3_000, summaries: 60_000, perToken: 1.3}
	little := base
	little.digested, little.digestKept = 90_000, 3_000
	if f, d := anthropic.autoFoldsCost(little), anthropic.autoDigestsCost(little); f >= d {
		t.Errorf("digests removing a tenth: folds %.0f, digests %.0f; want folds cheaper", f, d)
	}
	much := base
	much.digested, much.digestKept = 40_000, 3_000
	if f, d := anthropic.autoFoldsCost(much), anthropic.autoDigestsCost(much); d >= f {
		t.Errorf("digests removing as much as the fold: folds %.0f, digests %.0f; want digests cheaper", f, d)
	}
}

// TestAutoCostsHaveNoCliff: a fold's dry run a few tokens larger moves
// the later folds of auto's simulation by a request at most, and the
// price by a small part of a fold's — never by a whole fold, as when a
// fold on the horizon's last request counted whole and one a request
// later not at all (20 tokens flipped auto's choice on a 1× session at
// 32k).
func TestAutoCostsHaveNoCliff(t *testing.T) {
	a := autoCase{in: 25_000, limit: 24_000, growth: 400, horizon: 33, tail: 4_000,
		folded: 10_000, foldKept: 150, summaries: 15_000, perToken: 1.3}
	prev := anthropic.autoFoldsCost(a)
	for d := 1; d <= 2_000; d += 5 { // the first later fold moves from the 35th request to the 30th
		b := a
		b.folded = a.folded + d
		cost := anthropic.autoFoldsCost(b)
		if step := math.Abs(cost - prev); step > 0.03*prev {
			t.Fatalf("a dry run %d tokens larger moves the price from %.0f to %.0f (%.0f%%)", d, prev, cost, 100*step/prev)
		}
		prev = cost
	}
}

// TestDigestsPay: the digests' first edit pays by itself when what it
// removes, read until the cut has to come, outweighs re-writing what
// follows it. Digests that remove a tenth of a request from near its head
// make room for a few requests only: they do not pay. Where the room lasts
// the horizon, or they remove half the request, they do; so do digests
// whose first edit is far from the head (little to re-write).
func TestDigestsPay(t *testing.T) {
	base := autoCase{in: 100_000, limit: 96_000, growth: 1_000, horizon: 80, tail: 8_000}
	little := base
	little.digested, little.digestKept = 90_000, 3_000
	if r := anthropic.digestsRunway(little); r >= 10 {
		t.Errorf("digests removing a tenth last %.0f requests; want a few", r)
	}
	if anthropic.digestsPay(little) {
		t.Error("digests removing a tenth from the head pay")
	}
	long := little
	long.horizon = 5
	if !anthropic.digestsPay(long) {
		t.Error("digests whose room lasts the horizon do not pay")
	}
	half := base
	half.digested, half.digestKept = 50_000, 3_000
	if !anthropic.digestsPay(half) {
		t.Error("digests removing half the request do not pay")
	}
	late := little
	late.digestKept = 89_000
	if !anthropic.digestsPay(late) {
		t.Error("digests re-writing only the newest steps do not pay")
	}
}

// TestFrontierMovesWhenItPaysOrMust: over the threshold, selective's
// digest frontier stays where the conversation's first condensation put
// it unless a move paid when it became possible (the cost model's test of
// an edit of cached history, over half the usual horizon) or the request,
// digested as before, would not fit the threshold. A conversation whose
// later outputs are small beside the agent's own text never moves it
// while it fits (it used to follow its grid, a move every stride: a bust
// of the tail for a saving that did not repay it); one with large outputs
// still moves it before it must, as the cost model prices those moves.
func TestFrontierMovesWhenItPaysOrMust(t *testing.T) {
	// Large outputs first, then steps of the agent's text with small
	// outputs.
	small := readingSteps(60, func(i int) (string, string) {
		if i < 10 {
			return strings.Repeat(fmt.Sprintf("Step %d: reading the handlers. ", i), 10), strings.Repeat(listing(i), 8)
		}
		return agentText(i, 140), listing(i)
	})
	large, _ := corpus.Synthetic(5, 600_000)
	for _, tc := range []struct {
		name     string
		window   int
		requests func() [][]byte
		// paid: whether moves made while the request fits are expected
		paid bool
	}{
		{"small later outputs", 64_000, func() [][]byte {
			var out [][]byte
			for n := 4; n <= len(small); n += 2 {
				out = append(out, body(t, small[:n]))
			}
			return out
		}, false},
		{"large outputs", 128_000, func() [][]byte {
			var out [][]byte
			for _, n := range large.TurnEnds() {
				b, err := large.Request("gpt-4o", n)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, b)
			}
			return out
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Deps{Counter: counter, Models: ModelsFunc(func(string) ModelLimits {
				return ModelLimits{Window: tc.window, Threshold: 0.75, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
			}), Cache: cache.NewMemory(64 << 20)}, Options{SelectiveEnabled: true, Selective: selective.Options{KeepRecentToolOutputs: 3}})
			trigger := tc.window * 3 / 4
			prevDigests, prevSaved := 0, 0
			condensed, stayed, paid, forced := 0, 0, 0, 0
			for _, b := range tc.requests() {
				res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeSelective, Scope: "s"})
				if err != nil {
					t.Fatal(err)
				}
				r := res.Report
				if r.TokensBefore <= trigger {
					continue
				}
				if r.Applied != AppliedSelective {
					break // the window: no longer digests alone
				}
				digests := 0
				for _, c := range r.Changes {
					if c.Kind == ChangeDigest {
						digests++
					}
				}
				if condensed++; condensed > 1 {
					// The previous request's digests, made again here,
					// would have saved what they saved there.
					fitsAsBefore := r.TokensBefore-prevSaved <= trigger
					switch {
					case digests != prevDigests && fitsAsBefore:
						paid++
						if !tc.paid {
							t.Errorf("request of %d tokens: the frontier moved (%d → %d digests) although the previous digests left %d tokens, under the threshold",
								r.TokensBefore, prevDigests, digests, r.TokensBefore-prevSaved)
						}
					case digests != prevDigests:
						forced++
					case !fitsAsBefore:
						t.Errorf("request of %d tokens forwarded at %d, over the threshold, with the frontier unmoved", r.TokensBefore, r.TokensAfter)
					default:
						stayed++
					}
				}
				prevDigests, prevSaved = digests, r.TokensBefore-r.TokensAfter
			}
			t.Logf("%d requests condensed by digests alone: the frontier stayed on %d, moved on %d before it had to, on %d when it had to", condensed, stayed, paid, forced)
			if stayed < 10 || tc.paid && paid == 0 || !tc.paid && forced == 0 {
				t.Fatalf("the session tests nothing")
			}
		})
	}
}

// readingSteps is a chat conversation of n steps, each the agent's text
// and a read_file call, then the call's output: step(i) gives both.
func readingSteps(n int, step func(i int) (say, out string)) []map[string]any {
	msgs := []map[string]any{{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix the parser."}}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("c%d", i)
		say, out := step(i)
		msgs = append(msgs, map[string]any{"role": "assistant", "content": say, "tool_calls": []map[string]any{{"id": id, "type": "function",
			"function": map[string]any{"name": "read_file", "arguments": fmt.Sprintf(`{"path":"f%d.go"}`, i)}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": out})
	}
	return msgs
}

// agentText is the agent's own text at step i: its sentence n times.
func agentText(i, n int) string {
	return strings.Repeat(fmt.Sprintf("Step %d: reasoning about the handlers and what to change next. ", i), n)
}

// TestFirstFoldReachesThePlannedDepth: at a small window the request that
// crosses the threshold holds one complete chunk outside its newest steps.
// A fold that stopped there left the request well above the depth the
// cost model planned, to bust again a few requests later. The first fold
// closes its last chunk where the plan wants it, and the requests after it
// replay it byte for byte.
func TestFirstFoldReachesThePlannedDepth(t *testing.T) {
	msgs := readingSteps(80, func(i int) (string, string) { return agentText(i, 12), listing(i) })
	e := newEngine(32000, nil, Options{Summarizer: "extractive"})
	var prev []json.RawMessage
	folds, replayed := 0, 0
	for n := 4; n <= len(msgs); n += 2 {
		b := body(t, msgs[:n])
		res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeFull, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		r := res.Report
		if r.Applied != AppliedFull {
			if folds > 0 {
				t.Fatalf("request of %d tokens after the first fold: applied %q", r.TokensBefore, r.Applied)
			}
			continue
		}
		var fwd struct{ Messages []json.RawMessage }
		if err := json.Unmarshal(res.Body, &fwd); err != nil {
			t.Fatal(err)
		}
		if folds++; folds == 1 {
			conv, err := parseBody(b)
			if err != nil {
				t.Fatal(err)
			}
			complete := 0 // what the complete chunks outside the newest steps hold
			for _, ch := range chunkSteps(conv.steps, 12000, 0) {
				if ch.b <= len(conv.steps)-3 {
					complete += conv.stepTokens(ch.a, ch.b)
				}
			}
			summarized := 0
			for _, c := range r.Changes {
				if c.Kind == ChangeSummary && c.Level == 1 {
					summarized += c.TokensBefore
				}
			}
			t.Logf("first fold at %d tokens: %d summarized, the complete chunks hold %d; forwarded %d", r.TokensBefore, summarized, complete, r.TokensAfter)
			if summarized <= complete {
				t.Fatalf("the first fold summarized %d tokens, no more than the complete chunks (%d)", summarized, complete)
			}
		} else if extends(fwd.Messages, prev) {
			replayed++
		} else {
			break // the next fold
		}
		prev = fwd.Messages
	}
	t.Logf("%d requests replayed the first fold", replayed)
	if folds == 0 || replayed < 3 {
		t.Fatalf("%d folds, %d requests replaying the first fold", folds, replayed)
	}
}

// extends reports whether next begins with every message of prev, byte for
// byte, and has more.
func extends(next, prev []json.RawMessage) bool {
	if len(next) <= len(prev) {
		return false
	}
	for i, m := range prev {
		if !bytes.Equal(next[i], m) {
			return false
		}
	}
	return true
}
