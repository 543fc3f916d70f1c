package condense

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
)

// reasoning builds a conversation of n steps whose history is mostly the
// agent's own reasoning, with tool outputs just large enough to digest:
// digests remove little of it.
func reasoning(n int) []map[string]any {
	msgs := []map[string]any{{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix the parser."}}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("c%d", i)
		say := strings.Repeat(fmt.Sprintf("Step %d: reasoning about the handlers and what to change next. ", i), 150)
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
