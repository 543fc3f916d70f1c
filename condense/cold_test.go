package condense

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/redistest"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// coldTTL is the cache lifetime of the cold-turn tests' model: a few
// seconds of the engines' injected clock.
const coldTTL = 5 * time.Second

// coldWindow is their model's window, coldTarget the share of it
// condensing aims for: far enough under the threshold (0.8) that today's
// engine forwards requests over it between its moves.
const (
	coldWindow = 48_000
	coldTarget = 0.3
)

func coldModels() Models {
	return ModelsFunc(func(string) ModelLimits {
		return ModelLimits{Window: coldWindow, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1, CacheTTL: coldTTL}
	})
}

// coldEngine is an engine of the cold-turn tests on c, with clock now.
func coldEngine(c Cache, now func() time.Time) *Engine {
	return New(Deps{Counter: counter, Models: coldModels(), Cache: c, Summarizer: &countingSummarizer{}, Now: now},
		Options{SelectiveEnabled: true, MaxSummarizerCalls: 100, AutoLLMShare: 0.5, Target: coldTarget})
}

// coldSession is the chat session the cold-turn tests replay: about three
// times their window.
func coldSession(t *testing.T) (req func(k int) []byte, turns int) {
	return coldSessionOf(t, 41)
}

// coldSessionOf is a session like coldSession's, of another seed.
func coldSessionOf(t *testing.T, seed int64) (req func(k int) []byte, turns int) {
	sess, _ := corpus.Synthetic(seed, 500_000)
	ends := sess.TurnEnds()
	return func(k int) []byte {
		b, err := sess.Request("gpt-4o", ends[k])
		if err != nil {
			t.Fatal(err)
		}
		return b
	}, len(ends)
}

// coldRun sends the session's first n requests, of the caller scope, to the engine that pick
// names, one second of the clock apart, and gaps[k] more before request
// k; before, if set, is called before each request.
func coldRun(t *testing.T, scope, mode string, req func(int) []byte, n int, gaps map[int]time.Duration, pick func(k int) *Engine, clock *time.Time, before func(k int)) []Result {
	var out []Result
	for k := 0; k < n; k++ {
		*clock = clock.Add(time.Second + gaps[k])
		if before != nil {
			before(k)
		}
		e := pick(k)
		res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: req(k), Mode: mode, Scope: scope})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		out = append(out, res)
	}
	return out
}

// coldAt returns the request the gap goes before: a request over the
// threshold of a conversation condensed twice already, cut or folded
// (cut: true) or only digested (false), that today's engine forwards well
// over the target, keeping its prefix — as it does on the three requests
// after it (the cut or the fold holds there).
func coldAt(t *testing.T, warm []Result, target int, cut bool) int {
	condensed := 0
	holds := func(k int) bool {
		return warm[k].Report.Applied != AppliedNone && messagesPrefix(warm[k-1].Body, warm[k].Body)
	}
	for k, r := range warm {
		if r.Report.Applied == AppliedNone {
			continue
		}
		if condensed++; condensed > 2 && r.Report.TokensAfter > target*11/10 && k+4 < len(warm) && cutOrFolded(r.Report) == cut &&
			holds(k) && holds(k+1) && holds(k+2) && holds(k+3) {
			return k
		}
	}
	t.Fatalf("no request forwarded over the target (cut or folded: %v): the premise does not hold", cut)
	return -1
}

// cutOrFolded reports whether r's request omits steps (a cut or a fold),
// not only digests.
func cutOrFolded(r Report) bool {
	for _, c := range r.Changes {
		if c.Kind != ChangeDigest {
			return true
		}
	}
	return false
}

// messagesPrefix reports whether the forwarded messages of prev lead
// those of cur, byte for byte.
func messagesPrefix(prev, cur []byte) bool {
	p, c := gjson.GetBytes(prev, "messages").Array(), gjson.GetBytes(cur, "messages").Array()
	if len(p) == 0 || len(p) > len(c) {
		return false
	}
	for i := range p {
		if p[i].Raw != c[i].Raw {
			return false
		}
	}
	outside := func(b []byte) []byte {
		m := gjson.GetBytes(b, "messages")
		return append(append([]byte{}, b[:m.Index]...), b[m.Index+len(m.Raw):]...)
	}
	return bytes.Equal(outside(prev), outside(cur))
}

// TestColdTurn: with a model whose cache lives a few seconds, requests
// over the threshold a second apart are condensed as today (the bytes of
// an engine that never sees a gap), and one under it after a gap goes as
// received; after a gap longer than the cache's lifetime, the next request
// of the conversation cut or folded is condensed to the target — deeper
// than today's engine condenses it — and the warm requests after it keep
// its forwarded messages as their prefix, byte for byte. In every mode.
func TestColdTurn(t *testing.T) {
	req, turns := coldSession(t)
	target := int(coldWindow * coldTarget)
	for _, mode := range []string{ModeAuto, ModeFull, ModeSelective, ModeTruncate} {
		t.Run(mode, func(t *testing.T) {
			clock := time.Unix(1_700_000_000, 0)
			now := func() time.Time { return clock }
			ref := coldEngine(cache.NewMemory(256<<20), now)
			warm := coldRun(t, "s", mode, req, turns, nil, func(int) *Engine { return ref }, &clock, nil)
			j := coldAt(t, warm, target, true)
			// A gap before a request under the threshold too: it goes as
			// received all the same.
			under := 1
			if warm[under].Report.TokensBefore > warm[under].Report.Trigger {
				t.Fatal("request 1 is over the threshold: the premise does not hold")
			}
			clock = time.Unix(1_700_000_000, 0)
			e := coldEngine(cache.NewMemory(256<<20), now)
			gaps := map[int]time.Duration{under: coldTTL, j: coldTTL}
			got := coldRun(t, "s", mode, req, j+4, gaps, func(int) *Engine { return e }, &clock, nil)
			for k := 0; k < j; k++ {
				if !bytes.Equal(got[k].Body, warm[k].Body) || got[k].Report.Cold {
					t.Fatalf("request %d: forwarded other bytes than an engine that never saw a gap (cold %v)", k, got[k].Report.Cold)
				}
			}
			if !bytes.Equal(got[under].Body, req(under)) {
				t.Fatalf("request %d, under the threshold after a gap, was not forwarded as received", under)
			}
			c := got[j].Report
			t.Logf("request %d after the gap: %d tokens received, %d forwarded (%s: %q); without the gap %d", j, c.TokensBefore, c.TokensAfter, c.Applied, c.Reason, warm[j].Report.TokensAfter)
			if !c.Cold || c.TokensAfter > target {
				t.Fatalf("request %d after the gap: cold %v, %d tokens forwarded, over the target %d (without the gap: %d); %s: %q",
					j, c.Cold, c.TokensAfter, target, warm[j].Report.TokensAfter, c.Applied, c.Reason)
			}
			for k := j + 1; k < len(got); k++ {
				r := got[k].Report
				if r.Cold || r.Applied == AppliedNone {
					t.Fatalf("warm request %d after the cold one: cold %v, applied %s", k, r.Cold, r.Applied)
				}
				if !messagesPrefix(got[k-1].Body, got[k].Body) {
					t.Fatalf("warm request %d does not keep the forwarded messages of request %d as its prefix (%d → %d tokens; %q)",
						k, k-1, got[k-1].Report.TokensAfter, r.TokensAfter, r.Reason)
				}
			}
		})
	}
}

// TestColdTurnStartsNoCut: in auto, a cold turn of a conversation that
// only digests, its digests within the threshold, keeps to its digests —
// as far as they go, no step omitted — and the warm requests after it
// keep its prefix.
func TestColdTurnStartsNoCut(t *testing.T) {
	req, turns := coldSession(t)
	clock := time.Unix(1_700_000_000, 0)
	now := func() time.Time { return clock }
	ref := coldEngine(cache.NewMemory(256<<20), now)
	warm := coldRun(t, "s", ModeAuto, req, turns, nil, func(int) *Engine { return ref }, &clock, nil)
	j := coldAt(t, warm, int(coldWindow*coldTarget), false)
	clock = time.Unix(1_700_000_000, 0)
	e := coldEngine(cache.NewMemory(256<<20), now)
	got := coldRun(t, "s", ModeAuto, req, j+4, map[int]time.Duration{j: coldTTL}, func(int) *Engine { return e }, &clock, nil)
	c := got[j].Report
	if !c.Cold || cutOrFolded(c) || c.TokensAfter > warm[j].Report.TokensAfter {
		t.Fatalf("request %d after the gap: cold %v, cut or folded %v, %d tokens forwarded (without the gap %d); %q",
			j, c.Cold, cutOrFolded(c), c.TokensAfter, warm[j].Report.TokensAfter, c.Reason)
	}
	for k := j + 1; k < len(got); k++ {
		if r := got[k].Report; r.Cold || cutOrFolded(r) || !messagesPrefix(got[k-1].Body, got[k].Body) {
			t.Fatalf("warm request %d after the cold one: cold %v, cut or folded %v, prefix kept %v (%q)",
				k, r.Cold, cutOrFolded(r), messagesPrefix(got[k-1].Body, got[k].Body), r.Reason)
		}
	}
}

// TestColdTurnAutoFold: auto's one fold of a conversation, on a cold
// turn, stays while the folded request is within the target (the bytes
// of an engine that never saw a gap); over it, the conversation takes the
// digests and the cut from there, down to the target, as when its fold
// would move, and the warm requests after it keep that prefix.
func TestColdTurnAutoFold(t *testing.T) {
	req, turns := coldSessionOf(t, 49)
	// An allowance that pays for the cut's LLM summaries too: auto prices
	// the fold and the cut alike, and folds this conversation (seed 49's:
	// the premise is checked below).
	engine := func(now func() time.Time) *Engine {
		return New(Deps{Counter: counter, Models: coldModels(), Cache: cache.NewMemory(256 << 20), Summarizer: &countingSummarizer{}, Now: now},
			Options{SelectiveEnabled: true, MaxSummarizerCalls: 100, AutoLLMShare: 10})
	}
	target := coldWindow / 2
	clock := time.Unix(1_700_000_000, 0)
	now := func() time.Time { return clock }
	ref := engine(now)
	warm := coldRun(t, "s", ModeAuto, req, turns, nil, func(int) *Engine { return ref }, &clock, nil)
	under, over := -1, -1
	for k, r := range warm {
		if !r.Report.Took(PathAutoFolds) || k+4 >= len(warm) {
			continue
		}
		if r.Report.TokensAfter <= target && under < 0 {
			under = k
		}
		if r.Report.TokensAfter > target && over < 0 {
			over = k
		}
	}
	if under < 0 || over < 0 {
		t.Fatalf("auto's fold forwards no request within the target (%d) or none over it (%d): the premise does not hold", under, over)
	}
	clock = time.Unix(1_700_000_000, 0)
	e := engine(now)
	got := coldRun(t, "s", ModeAuto, req, over+4, map[int]time.Duration{under: coldTTL, over: coldTTL}, func(int) *Engine { return e }, &clock, nil)
	if r := got[under].Report; !r.Cold || !bytes.Equal(got[under].Body, warm[under].Body) {
		t.Fatalf("request %d, folded within the target after a gap: cold %v, forwarded other bytes than without the gap (%q)", under, r.Cold, r.Reason)
	}
	c := got[over].Report
	if !c.Cold || !c.Took(PathAutoSwitch) || c.TokensAfter > target {
		t.Fatalf("request %d, folded over the target after a gap: cold %v, %d tokens forwarded (target %d, without the gap %d); %q",
			over, c.Cold, c.TokensAfter, target, warm[over].Report.TokensAfter, c.Reason)
	}
	for k := over + 1; k < len(got); k++ {
		if r := got[k].Report; r.Cold || !messagesPrefix(got[k-1].Body, got[k].Body) {
			t.Fatalf("warm request %d after the cold one: cold %v, prefix kept %v (%q)", k, r.Cold, messagesPrefix(got[k-1].Body, got[k].Body), r.Reason)
		}
	}
}

// TestColdTurnWarmedByPings: a conversation whose cache a keep-alive ping
// read within its lifetime (Engine.Warmed) is not cold after a gap longer
// than the lifetime: its request is condensed as if there had been none
// — with a cache shared by two engines (the ping told to one, the request
// served by the other) and without a cache. A ping older than the
// lifetime keeps nothing warm.
func TestColdTurnWarmedByPings(t *testing.T) {
	req, turns := coldSession(t)
	clock := time.Unix(1_700_000_000, 0)
	now := func() time.Time { return clock }
	ref := coldEngine(cache.NewMemory(256<<20), now)
	warm := coldRun(t, "s", ModeAuto, req, turns, nil, func(int) *Engine { return ref }, &clock, nil)
	j := coldAt(t, warm, int(coldWindow*coldTarget), true)
	conv := warm[j].Report.Conversation
	for _, tc := range []struct {
		name    string
		engines func() []*Engine
		pinged  time.Duration // before request j
		cold    bool
	}{
		{"shared cache, pinged within the lifetime", func() []*Engine {
			shared := cache.NewMemory(256 << 20)
			return []*Engine{coldEngine(shared, now), coldEngine(shared, now)}
		}, time.Second, false},
		{"no cache, pinged within the lifetime", func() []*Engine { return []*Engine{coldEngine(nil, now)} }, time.Second, false},
		{"pinged before the lifetime", func() []*Engine { return []*Engine{coldEngine(cache.NewMemory(256<<20), now)} }, coldTTL + time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(gaps map[int]time.Duration, before func(pick func(int) *Engine, k int)) []Result {
				clock = time.Unix(1_700_000_000, 0)
				engines := tc.engines()
				pick := func(k int) *Engine { return engines[k%len(engines)] }
				return coldRun(t, "s", ModeAuto, req, j+1, gaps, pick, &clock, func(k int) { before(pick, k) })
			}
			without := run(nil, func(func(int) *Engine, int) {})
			got := run(map[int]time.Duration{j: coldTTL + time.Second}, func(pick func(int) *Engine, k int) {
				if k == j {
					// Told to the engine that serves neither request j
					// nor j − 1 when there are two.
					pick(k+1).Warmed(context.Background(), "s", conv, clock.Add(-tc.pinged))
				}
			})
			r := got[j].Report
			if r.Cold != tc.cold || r.Applied == AppliedNone {
				t.Fatalf("request %d: cold %v, want %v; applied %s (%q)", j, r.Cold, tc.cold, r.Applied, r.Reason)
			}
			if !tc.cold && !bytes.Equal(got[j].Body, without[j].Body) {
				t.Fatalf("request %d, kept warm by a ping, forwarded other bytes than without the gap", j)
			}
		})
	}
}

// TestColdTurnReplicas: two engines that share only the cache, handed the
// requests alternately, take the same cold turn as one engine does — the
// conversation's last use is read from the shared store, never from a
// replica's memory — and forward every request byte for byte as it does.
func TestColdTurnReplicas(t *testing.T) {
	srv := redistest.Start(t)
	req, turns := coldSession(t)
	layered := func() Cache {
		r, err := cache.NewRedis(cache.RedisOptions{URL: srv.URL()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return &cache.Layered{Mem: cache.NewMemory(64 << 20), Redis: r, MemoryTTL: 10 * time.Minute}
	}
	for _, mode := range []string{ModeAuto, ModeFull, ModeSelective, ModeTruncate} {
		t.Run(mode, func(t *testing.T) {
			clock := time.Unix(1_700_000_000, 0)
			now := func() time.Time { return clock }
			ref := coldEngine(cache.NewMemory(256<<20), now)
			warm := coldRun(t, "s", mode, req, turns, nil, func(int) *Engine { return ref }, &clock, nil)
			j := coldAt(t, warm, int(coldWindow*coldTarget), true)
			gaps := map[int]time.Duration{j: coldTTL}
			clock = time.Unix(1_700_000_000, 0)
			alone := coldEngine(cache.NewMemory(256<<20), now)
			one := coldRun(t, "s", mode, req, j+4, gaps, func(int) *Engine { return alone }, &clock, nil)
			// Each run of the test has a scope of its own on the shared
			// Redis.
			scope := fmt.Sprintf("s%d-%s", time.Now().UnixNano(), mode)
			clock = time.Unix(1_700_000_000, 0)
			pair := []*Engine{coldEngine(layered(), now), coldEngine(layered(), now)}
			two := coldRun(t, scope, mode, req, j+4, gaps, func(k int) *Engine { return pair[k%2] }, &clock, nil)
			for k := range one {
				if !bytes.Equal(one[k].Body, two[k].Body) || one[k].Report.Cold != two[k].Report.Cold {
					t.Fatalf("request %d: the pair forwarded other bytes than one engine (cold %v / %v; %q / %q)",
						k, two[k].Report.Cold, one[k].Report.Cold, two[k].Report.Reason, one[k].Report.Reason)
				}
			}
			if !two[j].Report.Cold {
				t.Fatalf("request %d after the gap is not cold", j)
			}
		})
	}
}
