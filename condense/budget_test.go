package condense

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// countingSummarizer counts its calls and records their inputs.
type countingSummarizer struct {
	calls atomic.Int32
	mu    sync.Mutex
	ins   []SummaryInput
}

func (c *countingSummarizer) Summarize(ctx context.Context, in SummaryInput) (string, error) {
	c.calls.Add(1)
	c.mu.Lock()
	c.ins = append(c.ins, in)
	c.mu.Unlock()
	return "## Task and intent\n- summary " + textHash(in.Text+in.Previous), nil
}

// TestCallBudget: a request whose plan needs more summaries than
// max_summarizer_calls makes no call at all — not in the request, not
// behind it — and says why; one that needs a few more than the budget
// folds fewer chunks within it; the report counts exactly the calls made.
func TestCallBudget(t *testing.T) {
	cases := []struct {
		name      string
		steps     int
		budget    int
		wantCalls func(n int) bool
		wantSaid  bool // the report says the budget was reached (DegradedCallBudget)
	}{
		{"giant request: no call", 400, 16, func(n int) bool { return n == 0 }, true},
		{"just over: a shallower fold within the budget", 18, 7, func(n int) bool { return n > 0 && n <= 7 }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sum := &countingSummarizer{}
			e := New(Deps{Counter: counter, Models: limits(32000), Cache: cache.NewMemory(256 << 20), Summarizer: sum},
				Options{ChunkTokens: 4000, MaxSummarizerCalls: tc.budget})
			res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: body(t, session(3, tc.steps)), Scope: "s", Mode: ModeFull})
			if err != nil {
				t.Fatal(err)
			}
			e.Close(context.Background())
			got := int(sum.calls.Load())
			if !tc.wantCalls(got) || res.Report.Calls != got {
				t.Fatalf("%d summarizer calls, report says %d (budget %d): %+v", got, res.Report.Calls, tc.budget, res.Report.Reason)
			}
			if res.Report.DegradedBy(DegradedCallBudget) != tc.wantSaid {
				t.Errorf("degraded %v (%q), want the call budget said: %v", res.Report.DegradedKinds, res.Report.Degraded, tc.wantSaid)
			}
			if res.Report.Applied != AppliedFull || res.Report.TokensAfter > res.Report.Window {
				t.Errorf("applied %s, %d tokens after (window %d)", res.Report.Applied, res.Report.TokensAfter, res.Report.Window)
			}
		})
	}
}

// TestSummaryCallsFitTheSummaryModel: with a summary model of a small
// window (gpt-4's 8k), every summarizer call — its prompt, the previous
// summary, the text and the answer's budget — fits that window.
func TestSummaryCallsFitTheSummaryModel(t *testing.T) {
	const small = 8192
	models := ModelsFunc(func(model string) ModelLimits {
		if model == "gpt-4" {
			return ModelLimits{Window: small, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
		}
		return ModelLimits{Window: 64000, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
	})
	sum := &countingSummarizer{}
	e := New(Deps{Counter: counter, Models: models, Cache: cache.NewMemory(256 << 20), Summarizer: sum},
		Options{SummaryModel: "gpt-4", ChunkTokens: 12000, MaxSummarizerCalls: 1000})
	res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: body(t, session(5, 150)), Scope: "s", Mode: ModeFull})
	if err != nil || res.Report.Applied != AppliedFull {
		t.Fatalf("err %v, report %+v", err, res.Report.Reason)
	}
	e.Close(context.Background())
	if len(sum.ins) == 0 {
		t.Fatal("no summarizer call")
	}
	for i, in := range sum.ins {
		n := counter.Text(tokenizer.O200kBase, in.Prompt) + counter.Text(tokenizer.O200kBase, UserPrompt(in)) + in.MaxTokens
		if n > small {
			t.Errorf("call %d: %d tokens with its answer, over the summary model's %d", i, n, small)
		}
	}
}

// TestSummariesKeyedByThePrompt: summaries written under one prompt are
// not served to an engine with another (a changed prompt_file).
func TestSummariesKeyedByThePrompt(t *testing.T) {
	shared := cache.NewMemory(256 << 20)
	b := body(t, session(9, 120))
	run := func(prompt string) int32 {
		sum := &countingSummarizer{}
		e := New(Deps{Counter: counter, Models: limits(32000), Cache: shared, Summarizer: sum},
			Options{ChunkTokens: 4000, MaxSummarizerCalls: 1000, Prompt: prompt})
		if _, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "s", Mode: ModeFull}); err != nil {
			t.Fatal(err)
		}
		e.Close(context.Background())
		return sum.calls.Load()
	}
	if n := run("prompt one"); n == 0 {
		t.Fatal("first engine made no call")
	}
	if n := run("prompt one"); n != 0 {
		t.Errorf("the same prompt called the summarizer %d times again", n)
	}
	if n := run("prompt two"); n == 0 {
		t.Error("a changed prompt was served the old prompt's summaries")
	}
}

// TestCutMiddleKeepsRunes: text cut for the summarizer stays valid UTF-8.
func TestCutMiddleKeepsRunes(t *testing.T) {
	s := strings.Repeat("é漢🙂", 4000)
	for _, keep := range []int{1, 7, 100, 1001, 5000} {
		out := cutMiddle(s, keep)
		if !isValidUTF8(out) {
			t.Fatalf("keep %d: invalid UTF-8", keep)
		}
	}
}

func isValidUTF8(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// TestCloseCancelsBackgroundWork: background work (summaries prepared
// ahead) is drained by Close, and cancelled when Close's context ends
// first: the summarizer call sees its context end.
func TestCloseCancelsBackgroundWork(t *testing.T) {
	sum := &blockingSummarizer{release: make(chan struct{}), started: make(chan struct{}, 1)}
	e := newEngine(32000, sum, Options{ChunkTokens: 4000, PrepareThreshold: 0.3})
	// Under the threshold (0.8), over the prepare threshold: summaries
	// are written in the background.
	msgs := session(3, 9)
	res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: body(t, msgs), Scope: "s", Mode: ModeFull})
	if err != nil || res.Report.Applied != AppliedNone || res.Report.TokensBefore <= 32000*3/10 {
		t.Fatalf("setup: %v, applied %s, %d tokens", err, res.Report.Applied, res.Report.TokensBefore)
	}
	<-sum.started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.Close(ctx); err == nil {
		t.Fatal("Close returned before the background work ended")
	}
	// The call's context ends; nothing else releases it.
	wait, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := e.Close(wait); err != nil {
		close(sum.release)
		t.Fatalf("the cancelled background work did not end: %v", err)
	}
	if sum.cancelled.Load() == 0 {
		t.Error("the background summarizer call was not cancelled")
	}
}

// messages records the messages of the log records it gets.
type messages struct {
	mu  sync.Mutex
	got []string
}

func (m *messages) Enabled(context.Context, slog.Level) bool { return true }
func (m *messages) Handle(_ context.Context, r slog.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.got = append(m.got, r.Message)
	return nil
}
func (m *messages) WithAttrs([]slog.Attr) slog.Handler { return m }
func (m *messages) WithGroup(string) slog.Handler      { return m }

func (m *messages) count(msg string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, g := range m.got {
		if g == msg {
			n++
		}
	}
	return n
}

// TestPrepareOnce: summaries prepared ahead are not prepared again for the
// same conversation at the same point (the steady state of a session near
// its next fold), unless the last pass had to stand an extractive summary
// in for a failed call; a conversation that grows by a chunk is prepared
// again.
func TestPrepareOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sum       Summarizer
		wantTwice bool
	}{
		{"summaries written", &countingSummarizer{}, false},
		{"summarizer failing", &failing{mode: "error"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &messages{}
			e := New(Deps{Counter: counter, Models: limits(32000), Cache: cache.NewMemory(64 << 20),
				Summarizer: tc.sum, Logger: slog.New(logs)}, Options{ChunkTokens: 4000, PrepareThreshold: 0.3, MaxSummarizerCalls: 100})
			defer e.Close(context.Background())
			send := func(msgs []map[string]any) {
				t.Helper()
				res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: body(t, msgs), Scope: "s", Mode: ModeFull})
				if err != nil || res.Report.Applied != AppliedNone || res.Report.TokensBefore <= 32000*3/10 {
					t.Fatalf("setup: %v, applied %s, %d tokens", err, res.Report.Applied, res.Report.TokensBefore)
				}
				e.bg.Wait()
			}
			msgs := session(3, 9)
			send(msgs)
			if n := logs.count("summaries prepared ahead"); n != 1 {
				t.Fatalf("first request: prepared %d times", n)
			}
			send(msgs)
			want := 1
			if tc.wantTwice {
				want = 2
			}
			if n := logs.count("summaries prepared ahead"); n != want {
				t.Errorf("the same request again: prepared %d times in all, want %d", n, want)
			}
			if tc.wantTwice {
				return
			}
			// Grown until one more chunk is outside the recent turns.
			for k := 10; k < 40; k++ {
				e.bg.Wait()
				longer := session(3, k)
				res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: body(t, longer), Scope: "s", Mode: ModeFull, CountOnly: true})
				if err != nil || res.Report.TokensBefore > 32000*8/10 {
					break
				}
				send(longer)
				if logs.count("summaries prepared ahead") > 1 {
					return
				}
			}
			t.Error("a conversation grown by chunks under the threshold was not prepared again")
		})
	}
}

// TestModelTarget: a model's own target (ModelLimits.Target, what the
// registry's threshold by window gives it) is the budgets' target over
// Options.Target; unset, Options.Target is.
func TestModelTarget(t *testing.T) {
	for _, tc := range []struct {
		model, engine float64
		want          int
	}{
		{0, 0.5, 50000},
		{0.375, 0.5, 37500},
		{0.25, 0.6, 25000},
	} {
		e := New(Deps{Counter: counter, Models: limits(100000), Cache: cache.NewMemory(1 << 20)}, Options{Target: tc.engine})
		rq := &job{reqState: &reqState{limits: ModelLimits{Window: 100000, Threshold: 0.8, Target: tc.model, SafetyFactor: 1}}}
		if b := e.budgets(rq); b.target != tc.want || b.trigger != 80000 {
			t.Errorf("model target %g, engine %g: target %d, trigger %d; want %d, 80000", tc.model, tc.engine, b.target, b.trigger, tc.want)
		}
	}
}
