package condense

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/selective"
)

// reasoning builds a conversation of n steps whose history is mostly the
// agent's own reasoning (about 6,000 tokens a step), with tool outputs
// just large enough to digest: digests remove almost nothing of it.
func reasoning(n int) []map[string]any {
	msgs := []map[string]any{{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix the parser."}}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("c%d", i)
		say := strings.Repeat(fmt.Sprintf("Step %d: reasoning about the handlers and what to change next. ", i), 400)
		msgs = append(msgs, map[string]any{"role": "assistant", "content": say, "tool_calls": []map[string]any{{"id": id, "type": "function",
			"function": map[string]any{"name": "read_file", "arguments": fmt.Sprintf(`{"path":"f%d.go"}`, i)}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": listing(i)})
	}
	return msgs
}

// listing is a tool output of about 600 tokens: a directory listing.
func listing(step int) string {
	var b strings.Builder
	for i := 0; b.Len() < 1150; i++ {
		fmt.Fprintf(&b, "-rw-r--r-- 1 dev dev %5d Nov 26 12:%02d step%d_file%d.txt\n", 100+step*37+i*13, i%60, step, i)
	}
	return b.String()
}

// TestAutoTakesTheCheaperPart: at a conversation's first condensation,
// auto prices its two parts over the requests expected to follow. Where
// digests remove much (large tool outputs), it digests; where they remove
// little (a history of the agent's own reasoning), they would re-write the
// prefix to stay under the threshold a few requests longer, and auto folds
// as full mode does — without a digest in the forwarded request, and
// without calling the summarizer for a summary it does not forward. The
// choice is frozen: the next request of the conversation folds too, even
// when it arrives at an engine that has not decided (another replica).
func TestAutoTakesTheCheaperPart(t *testing.T) {
	sess, _ := corpus.Synthetic(1, 400_000)
	ends := sess.TurnEnds()
	synthetic := func(i int) []byte {
		b, err := sess.Request("gpt-4o", ends[i])
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	msgs := reasoning(40)
	for _, tc := range []struct {
		name        string
		first, next []byte
		folds       bool
	}{
		{"large outputs", synthetic(len(ends) - 2), synthetic(len(ends) - 1), false},
		{"reasoning", body(t, msgs), body(t, append(msgs[:len(msgs):len(msgs)], map[string]any{"role": "user", "content": "go on"})), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shared := cache.NewMemory(64 << 20)
			sum := &countingSummarizer{}
			engine := func(window int) *Engine {
				return New(Deps{Counter: counter, Models: limits(window), Cache: shared, Summarizer: sum},
					Options{SelectiveEnabled: true, MaxSummarizerCalls: 100, ChunkTokens: 4000, SummaryBudgetTokens: 2000})
			}
			probe, err := engine(1_000_000).Condense(context.Background(), Request{Codec: chatCodec, Body: tc.first, Mode: ModeOff, Scope: "p"})
			if err != nil {
				t.Fatal(err)
			}
			window := probe.Report.TokensBefore * 100 / 85 // just over the threshold (0.8)
			run := func(e *Engine, b []byte) Report {
				res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeAuto, Scope: "s"})
				if err != nil {
					t.Fatal(err)
				}
				validate(t, res.Body)
				return res.Report
			}
			r := run(engine(window), tc.first)
			want := AppliedSelective
			if tc.folds {
				want = AppliedFull
			}
			if r.Applied != want {
				t.Fatalf("applied %s, want %s (%s; %d → %d of window %d)", r.Applied, want, r.Reason, r.TokensBefore, r.TokensAfter, window)
			}
			digests := 0
			for _, ch := range r.Changes {
				if ch.Kind == ChangeDigest {
					digests++
				}
			}
			if tc.folds && digests > 0 {
				t.Errorf("folded with %d digests forwarded", digests)
			}
			if !tc.folds && sum.calls.Load() > 0 {
				t.Errorf("digested, and called the summarizer %d times", sum.calls.Load())
			}
			// The next request, at another replica, takes the same part.
			if r := run(engine(window), tc.next); r.Applied != want {
				t.Errorf("next request: applied %s, want %s (%s)", r.Applied, want, r.Reason)
			}
		})
	}
}

// TestAutoCutKeepsLongConversationsSmaller: once a conversation on auto's
// cut (digests, then the window with summaries) has shown it is long, the
// cut moves by a plan made then, as full mode's folds do for long
// conversations: a limit below the threshold when that is cheaper over
// the requests to come, frozen, and every later request kept under it.
func TestAutoCutKeepsLongConversationsSmaller(t *testing.T) {
	sess, _ := corpus.Synthetic(7, 700_000)
	kept := &countingCache{Memory: cache.NewMemory(256 << 20)}
	const window = 32000
	e := New(Deps{Counter: counter, Models: limits(window), Cache: kept, Summarizer: &countingSummarizer{}},
		Options{SelectiveEnabled: true, MaxSummarizerCalls: 1000})
	limit := func() (int, bool) { return kept.decision(decisionCutLongLimit) }
	planned, after, most := 0, 0, 0
	for _, n := range sess.TurnEnds() {
		b, _ := sess.Request("gpt-4o", n)
		_, had := limit()
		res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeAuto, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		l, ok := limit()
		if !ok {
			continue
		}
		planned = l
		if had {
			after++
			most = max(most, res.Report.TokensAfter)
			if res.Report.TokensAfter > l {
				t.Errorf("request of %d messages forwarded %d tokens, over the planned limit %d", n, res.Report.TokensAfter, l)
			}
		}
	}
	trigger := int(0.8 * window)
	if planned == 0 || after < 20 {
		t.Fatalf("auto's cut planned no limit for the long conversation (%d requests after the plan): the session tests nothing", after)
	}
	t.Logf("planned limit %d (threshold %d), %d requests after the plan, the largest %d tokens", planned, trigger, after, most)
	if planned >= trigger {
		t.Errorf("planned limit %d, not below the threshold %d: the conversation is not kept smaller", planned, trigger)
	}
}

// TestAutoFoldsOnce: a conversation auto folds is folded once. The fold is
// replayed, the same summaries in the same place, until it would move;
// that request takes the digests and the cut instead (one re-write from
// the head, as the fold's move would have been), and so does every later
// one, at any replica. Nothing is summarized ahead for a next fold that
// never comes: every summarizer call is one a forwarded request waited
// for. (Sixteen recent turns kept verbatim keep the folded request large
// enough that it nears its limit, where full mode would prepare its next
// fold, before the fold moves.)
func TestAutoFoldsOnce(t *testing.T) {
	msgs := reasoning(64)
	at := func(n int) []byte { return body(t, msgs[:2+2*n]) }
	shared := cache.NewMemory(64 << 20)
	sum := &countingSummarizer{}
	engineOver := func(c Cache, window int) *Engine {
		return New(Deps{Counter: counter, Models: limits(window), Cache: c, Summarizer: sum},
			Options{SelectiveEnabled: true, MaxSummarizerCalls: 100, ChunkTokens: 4000, SummaryBudgetTokens: 2000, KeepRecentTurns: 16})
	}
	engine := func(window int) *Engine { return engineOver(shared, window) }
	ctx := context.Background()
	probe, err := engine(1_000_000).Condense(ctx, Request{Codec: chatCodec, Body: at(40), Mode: ModeOff, Scope: "p"})
	if err != nil {
		t.Fatal(err)
	}
	window := probe.Report.TokensBefore * 100 / 85 // just over the threshold (0.8)
	// The conversation's choice is the fold (which part auto takes is
	// TestAutoTakesTheCheaperPart's; here the cut on the digests' bust is
	// priced a little below it).
	seedAutoFolds(t, shared, func(c Cache) *Engine { return engineOver(c, window) }, at(40))
	var engines []*Engine
	foreground, folds, switched := 0, 0, -1
	var fold []Change
	for n := 40; n <= 64; n++ {
		// Every request at a new engine (another replica): what auto
		// does is in the shared cache, not in a process.
		e := engine(window)
		engines = append(engines, e)
		res, err := e.Condense(ctx, Request{Codec: chatCodec, Body: at(n), Mode: ModeAuto, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		validate(t, res.Body)
		r := res.Report
		foreground += r.Calls
		switch {
		case r.Took(PathAutoSwitch):
			if switched >= 0 {
				t.Errorf("request of %d steps switched again (first at %d)", n, switched)
			}
			switched = n
		case r.Took(PathAutoFolds):
			if switched >= 0 {
				t.Errorf("request of %d steps folded after the switch at %d steps (%s)", n, switched, r.Reason)
			}
			if r.Applied != AppliedFull {
				t.Fatalf("request of %d steps: applied %s, want full (%s)", n, r.Applied, r.Reason)
			}
			summaries := r.Changes[:0:0]
			for _, ch := range r.Changes {
				if ch.Kind == ChangeSummary {
					summaries = append(summaries, ch)
				}
			}
			if folds++; folds == 1 {
				fold = summaries
			} else if fmt.Sprint(summaries) != fmt.Sprint(fold) {
				t.Errorf("request of %d steps folded differently from the first fold:\n got %v\nwant %v", n, summaries, fold)
			}
		case n == 40:
			t.Fatalf("the first request did not fold (%s): the conversation tests nothing", r.Reason)
		case switched < 0:
			t.Errorf("request of %d steps, before the switch, neither folded nor switched: %s", n, r.Reason)
		}
	}
	if folds < 2 || switched < 0 {
		t.Fatalf("%d requests folded, switch at %d steps: the fold never moved", folds, switched)
	}
	for _, e := range engines {
		if err := e.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := int(sum.calls.Load()); got != foreground {
		t.Errorf("the summarizer was called %d times, %d of them by requests: %d summaries written that no request forwarded", got, foreground, got-foreground)
	}
	t.Logf("folded %d requests, switched at %d steps, %d summarizer calls", folds, switched, foreground)
}

// TestAutoFoldsOnceAfterAnotherReplica: a conversation whose first
// condensation decides to fold, where another replica's fold of it ends
// elsewhere already (stored first, set-if-absent), takes the digests and
// the cut at once, as a request past the fold would — not a failure, not
// the request forwarded unchanged.
func TestAutoFoldsOnceAfterAnotherReplica(t *testing.T) {
	msgs := reasoning(40)
	first := body(t, msgs)
	ctx := context.Background()
	engine := func(c Cache, window int) *Engine {
		return New(Deps{Counter: counter, Models: limits(window), Cache: c, Summarizer: &countingSummarizer{}},
			Options{SelectiveEnabled: true, MaxSummarizerCalls: 100, ChunkTokens: 4000, SummaryBudgetTokens: 2000})
	}
	probe, err := engine(cache.NewMemory(1<<20), 1_000_000).Condense(ctx, Request{Codec: chatCodec, Body: first, Mode: ModeOff, Scope: "p"})
	if err != nil {
		t.Fatal(err)
	}
	window := probe.Report.TokensBefore * 100 / 85 // just over the threshold (0.8)
	// The key auto's fold end is kept under, from a run of its own.
	seen := &countingCache{Memory: cache.NewMemory(64 << 20)}
	seedAutoFolds(t, seen.Memory, func(c Cache) *Engine { return engine(c, window) }, first)
	r, err := engine(seen, window).Condense(ctx, Request{Codec: chatCodec, Body: first, Mode: ModeAuto, Scope: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Report.Took(PathAutoFolds) {
		t.Fatalf("the conversation does not fold (%s): the test tests nothing", r.Report.Reason)
	}
	key := seen.recordKey()
	if _, ok := seen.decision(decisionAutoFoldEnd); !ok {
		t.Fatal("no fold end kept")
	}
	other := cache.NewMemory(64 << 20)
	seedAutoFolds(t, other, func(c Cache) *Engine { return engine(c, window) }, first)
	setDecision(other, key, decisionAutoFoldEnd, 1) // another replica's fold, ending at step 1
	res, err := engine(other, window).Condense(ctx, Request{Codec: chatCodec, Body: first, Mode: ModeAuto, Scope: "s"})
	if err != nil {
		t.Fatal(err)
	}
	validate(t, res.Body)
	if rep := res.Report; rep.Applied == AppliedNone || !rep.Took(PathAutoSwitch) || rep.TokensAfter > int(0.8*float64(window)) {
		t.Errorf("applied %s, %d → %d tokens (%s): want the digests and the cut under the threshold", rep.Applied, rep.TokensBefore, rep.TokensAfter, rep.Reason)
	}
}

// seedAutoFolds stores in c, as another replica would have, auto's choice
// of the fold for the conversation of first (scope "s"): the key from a
// run of an engine newEngine makes over a cache of its own, the value
// autoFolds.
func seedAutoFolds(t *testing.T, c Cache, newEngine func(Cache) *Engine, first []byte) {
	t.Helper()
	ctx := context.Background()
	seen := &countingCache{Memory: cache.NewMemory(64 << 20)}
	if _, err := newEngine(seen).Condense(ctx, Request{Codec: chatCodec, Body: first, Mode: ModeAuto, Scope: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := seen.decision(decisionAuto); !ok {
		t.Fatal("auto's choice not kept")
	}
	setDecision(c, seen.recordKey(), decisionAuto, autoFolds)
}

// oldOutput builds a conversation of n steps: one large output first,
// then steps of the agent's reasoning with small outputs. Digesting the
// old output re-writes everything after it to make room for a few
// requests only.
func oldOutput(n int) []map[string]any { return oldOutputSteps(n, 60) }

// oldOutputSteps is oldOutput with steps of reps sentences of reasoning.
func oldOutputSteps(n, reps int) []map[string]any {
	msgs := []map[string]any{{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Read the files."}}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("c%d", i)
		out, say := "ok", strings.Repeat(fmt.Sprintf("Step %d: reasoning about the handlers and what to change next. ", i), reps)
		if i == 0 {
			out, say = bigFile(12000), "Reading."
		}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": say, "tool_calls": []map[string]any{{"id": id, "type": "function",
			"function": map[string]any{"name": "read_file", "arguments": `{"path":"a.go"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": out})
	}
	return msgs
}

// TestWindowOnTheDigestsBust: at a conversation's first condensation,
// digests that would not pay for their re-write before the window has to
// come anyway (they make room for a few requests) do not go alone: the
// window comes on their bust in selective mode — in auto, the cut with
// summaries on their bust or the fold, the cheaper — and the next
// requests grow on it append-only, with no second bust. Where digests make room for long (large outputs),
// they go alone, and so do they with selective.digests_first.
func TestWindowOnTheDigestsBust(t *testing.T) {
	msgs := oldOutput(60)
	at := func(n int) []byte { return body(t, msgs[:2+2*n]) }
	ctx := context.Background()
	probe, err := New(Deps{Counter: counter, Models: limits(1_000_000)}, Options{}).Condense(ctx, Request{Codec: chatCodec, Body: at(40), Mode: ModeOff})
	if err != nil {
		t.Fatal(err)
	}
	window := probe.Report.TokensBefore * 100 / 81 // the 40th step crosses the threshold (0.8)
	for _, mode := range []string{ModeSelective, ModeAuto} {
		t.Run(mode, func(t *testing.T) {
			e := New(Deps{Counter: counter, Models: limits(window), Cache: cache.NewMemory(64 << 20), Summarizer: &countingSummarizer{}},
				Options{SelectiveEnabled: true, MaxSummarizerCalls: 100, ChunkTokens: 4000, SummaryBudgetTokens: 2000,
					Selective: selective.Options{KeepRecentToolOutputs: 3}})
			prev := 0
			for n := 40; n <= 46; n++ {
				res, err := e.Condense(ctx, Request{Codec: chatCodec, Body: at(n), Mode: mode, Scope: "s"})
				if err != nil {
					t.Fatal(err)
				}
				validate(t, res.Body)
				r := res.Report
				if n == 40 {
					// auto: the cut on the digests' bust, or the fold when
					// that is cheaper still — never the digests alone.
					windowed := r.Applied == AppliedTruncate && r.Took(PathWindowNow)
					if mode == ModeAuto {
						windowed = r.Applied == AppliedFull && (r.Took(PathWindowNow) || r.Took(PathAutoFolds))
					}
					if !windowed {
						t.Fatalf("first condensation: applied %s (%s), want the window on the digests' bust", r.Applied, r.Reason)
					}
					if r.TokensAfter > r.TokensBefore/2 {
						t.Errorf("the window kept %d of %d tokens", r.TokensAfter, r.TokensBefore)
					}
				} else if r.PrefixReused < prev {
					t.Errorf("request of %d steps re-used %d tokens of the previous %d: a second bust", n, r.PrefixReused, prev)
				}
				prev = r.TokensAfter
			}
		})
	}
	t.Run("digests first", func(t *testing.T) {
		// selective.digests_first: the digests go alone.
		e := New(Deps{Counter: counter, Models: limits(window), Cache: cache.NewMemory(64 << 20)},
			Options{SelectiveEnabled: true, DigestsFirst: true, Selective: selective.Options{KeepRecentToolOutputs: 3}})
		res, err := e.Condense(ctx, Request{Codec: chatCodec, Body: at(40), Mode: ModeSelective, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		if r := res.Report; r.Applied != AppliedSelective {
			t.Errorf("applied %s (%s), want the digests alone", r.Applied, r.Reason)
		}
	})
	t.Run("large outputs", func(t *testing.T) {
		sess, _ := corpus.Synthetic(1, 400_000)
		ends := sess.TurnEnds()
		b, err := sess.Request("gpt-4o", ends[len(ends)-2])
		if err != nil {
			t.Fatal(err)
		}
		probe, err := New(Deps{Counter: counter, Models: limits(1_000_000)}, Options{}).Condense(ctx, Request{Codec: chatCodec, Body: b, Mode: ModeOff})
		if err != nil {
			t.Fatal(err)
		}
		e := New(Deps{Counter: counter, Models: limits(probe.Report.TokensBefore * 100 / 85), Cache: cache.NewMemory(64 << 20)},
			Options{SelectiveEnabled: true})
		res, err := e.Condense(ctx, Request{Codec: chatCodec, Body: b, Mode: ModeSelective, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		if r := res.Report; r.Applied != AppliedSelective {
			t.Errorf("applied %s (%s), want the digests alone", r.Applied, r.Reason)
		}
	})
}

// TestAutoCutStaysWhileItsNoteFits: auto's cut, like the window's, stays
// while the request fits the limit with it, its summaries counted at
// what they hold — not at their budget, which would move the cut, and
// bust the cache, while the request still fits. Its summaries (a few
// chunks, 100 tokens each at most) hold far less than their budget, and a
// step (~400 tokens) less than the difference: a cut moved by the budget
// moves at least one request early.
func TestAutoCutStaysWhileItsNoteFits(t *testing.T) {
	msgs := oldOutputSteps(200, 25)
	at := func(n int) []byte { return body(t, msgs[:2+2*n]) }
	ctx := context.Background()
	probe, err := New(Deps{Counter: counter, Models: limits(1_000_000)}, Options{}).Condense(ctx, Request{Codec: chatCodec, Body: at(60), Mode: ModeOff})
	if err != nil {
		t.Fatal(err)
	}
	window := probe.Report.TokensBefore * 100 / 81
	limit := window * 8 / 10
	e := New(Deps{Counter: counter, Models: limits(window), Cache: cache.NewMemory(64 << 20), Summarizer: &countingSummarizer{}},
		Options{SelectiveEnabled: true, MaxSummarizerCalls: 100, ChunkTokens: 16000, SummaryBudgetTokens: 2000, SummaryMaxTokens: 100,
			Selective: selective.Options{KeepRecentToolOutputs: 3}})
	var prev Report
	moves := 0
	for n := 60; n <= 200; n++ {
		res, err := e.Condense(ctx, Request{Codec: chatCodec, Body: at(n), Mode: ModeAuto, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		r := res.Report
		// The cut (not auto's fold, whose plan may lower its limit)
		// moved: kept, the request would have been over the limit (a few
		// tokens' leeway for counting the request in parts).
		cut := prev.Applied == AppliedFull && !prev.Took(PathAutoFolds)
		if cut && r.PrefixReused < prev.TokensAfter {
			moves++
			if held := prev.TokensAfter + r.TokensBefore - prev.TokensBefore; held < limit-20 {
				t.Errorf("request of %d steps: the cut moved though the request kept on it would hold %d tokens, under the limit of %d", n, held, limit)
			}
			break
		}
		prev = r
	}
	if moves == 0 {
		t.Fatal("the cut never moved: the test's premise does not hold")
	}
}

// TestAutoCutSummarizesWhenTheNewestStepsShrink: when the newest steps
// alone are over the limit, the window digests inside them first and
// then cuts; auto's cut keeps its summaries of what it omits there too,
// not a bare marker.
func TestAutoCutSummarizesWhenTheNewestStepsShrink(t *testing.T) {
	msgs := []map[string]any{{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Read the files."}}
	for i := 0; i < 10; i++ {
		id := fmt.Sprintf("c%d", i)
		msgs = append(msgs, map[string]any{"role": "assistant", "content": fmt.Sprintf("Reading file %d.", i), "tool_calls": []map[string]any{{"id": id, "type": "function",
			"function": map[string]any{"name": "read_file", "arguments": fmt.Sprintf(`{"path":"f%d.go"}`, i)}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": bigFile(12000)})
	}
	ctx := context.Background()
	b := body(t, msgs)
	probe, err := New(Deps{Counter: counter, Models: limits(1_000_000)}, Options{}).Condense(ctx, Request{Codec: chatCodec, Body: b, Mode: ModeOff})
	if err != nil {
		t.Fatal(err)
	}
	// The newest three steps (each a tenth of the request) are over the
	// limit: 0.8 of a window a third of the request.
	e := New(Deps{Counter: counter, Models: limits(probe.Report.TokensBefore / 3), Cache: cache.NewMemory(64 << 20), Summarizer: &countingSummarizer{}},
		Options{SelectiveEnabled: true, MaxSummarizerCalls: 100, Selective: selective.Options{KeepRecentToolOutputs: 3}})
	res, err := e.Condense(ctx, Request{Codec: chatCodec, Body: b, Mode: ModeAuto, Scope: "s"})
	if err != nil {
		t.Fatal(err)
	}
	validate(t, res.Body)
	r := res.Report
	if !r.DegradedBy(DegradedNewestOverBudget) {
		t.Fatalf("the newest steps were not digested (%s; %v): the test's premise does not hold", r.Reason, r.DegradedKinds)
	}
	if r.Applied != AppliedFull || r.Summaries == "" || !strings.Contains(string(res.Body), "conversation-summary") {
		t.Errorf("applied %s, summaries %q: auto's cut forwarded without its summaries (%s)", r.Applied, r.Summaries, r.Reason)
	}
}

// TestSelectiveWindowKeepsTheFacts: when selective's digests are not
// enough and its sliding window cuts, what the cut omits is summarized
// (extractively: selective calls no summarizer) in place of a bare
// marker — the error lines the omitted steps' commands printed, the
// paths they touched and an id to recall them stay in the request —,
// and the report still says the window was used.
func TestSelectiveWindowKeepsTheFacts(t *testing.T) {
	msgs := []map[string]any{{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix the build."}}
	for i := 0; i < 60; i++ {
		id := fmt.Sprintf("c%d", i)
		msgs = append(msgs, map[string]any{"role": "assistant", "content": strings.Repeat(fmt.Sprintf("Step %d: thinking about what the build needs next. ", i), 30),
			"tool_calls": []map[string]any{{"id": id, "type": "function", "function": map[string]any{"name": "run", "arguments": fmt.Sprintf(`{"path":"pkg/mod%d/file.go"}`, i)}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": fmt.Sprintf("pkg/mod%d/file.go:12: error: undefined: handler%d\nexit status 1", i, i)})
	}
	b := body(t, msgs)
	probe, err := New(Deps{Counter: counter, Models: limits(1_000_000)}, Options{}).Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeOff})
	if err != nil {
		t.Fatal(err)
	}
	e := New(Deps{Counter: counter, Models: limits(probe.Report.TokensBefore * 100 / 110), Cache: cache.NewMemory(64 << 20), Summarizer: &countingSummarizer{}},
		Options{SelectiveEnabled: true})
	res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeSelective, Scope: "s"})
	if err != nil {
		t.Fatal(err)
	}
	validate(t, res.Body)
	r := res.Report
	if r.Applied != AppliedTruncate || !r.DegradedBy(DegradedWindow) || r.Calls != 0 {
		t.Fatalf("applied %s, degraded %q, %d summarizer calls: want selective's window, said, with no call", r.Applied, r.Degraded, r.Calls)
	}
	omitted := 0
	for _, c := range r.Changes {
		if c.Kind == ChangeWindow {
			t.Fatalf("a bare marker stands for steps %d–%d: %s", c.From, c.To, c.Text)
		}
		if c.Kind == ChangeSummary && c.From == 2 {
			omitted = c.To
		}
	}
	if omitted == 0 {
		t.Fatalf("no summary of the first omitted steps: %+v", r.Changes)
	}
	out := string(res.Body)
	for _, want := range []string{"error: undefined: handler0", "pkg/mod0/file.go", "GET /v1/condense/originals/"} {
		if !strings.Contains(out, want) {
			t.Errorf("the forwarded request lost %q of the omitted steps", want)
		}
	}
}
