package condense

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/selective"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

var counter = tokenizer.New(tokenizer.Options{})

func limits(window int) Models {
	return ModelsFunc(func(string) ModelLimits {
		return ModelLimits{Window: window, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
	})
}

// session builds a synthetic coding session of n steps with tool calls
// (some parallel), seeded.
func session(seed int64, n int) []map[string]any {
	rng := rand.New(rand.NewSource(seed))
	msgs := []map[string]any{
		{"role": "system", "content": "You are a coding agent."},
		{"role": "user", "content": "Fix the failing test TestParseDuration in pkg/timeparse."},
	}
	for i := 0; i < n; i++ {
		if rng.Intn(10) == 0 {
			msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("follow-up %d: also keep the API stable", i)})
			continue
		}
		calls := 1 + rng.Intn(2)
		var tcs []map[string]any
		for c := 0; c < calls; c++ {
			tcs = append(tcs, map[string]any{"id": fmt.Sprintf("call_%d_%d", i, c), "type": "function",
				"function": map[string]any{"name": "bash", "arguments": fmt.Sprintf(`{"command":"cat pkg/file%d.go"}`, rng.Intn(50))}})
		}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": fmt.Sprintf("Step %d: looking at the code.", i), "tool_calls": tcs})
		for c := 0; c < calls; c++ {
			var b strings.Builder
			lines := 20 + rng.Intn(100)
			for l := 0; l < lines; l++ {
				fmt.Fprintf(&b, "%d\tfunc f%d(x int) int { return x * %d } // step %d\n", l, l, rng.Intn(1000), i)
			}
			if rng.Intn(5) == 0 {
				b.WriteString("--- FAIL: TestParseDuration (0.00s)\n")
			}
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": fmt.Sprintf("call_%d_%d", i, c), "content": b.String()})
		}
	}
	return msgs
}

func body(t testing.TB, msgs []map[string]any) []byte {
	b, err := json.Marshal(map[string]any{"model": "gpt-4o", "messages": msgs, "temperature": 0})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func validate(t testing.TB, b []byte) {
	t.Helper()
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatalf("condensed body is not JSON: %v", err)
	}
	if err := fakeupstream.Validate(req.Messages); err != nil {
		t.Fatalf("condensed conversation rejected: %v", err)
	}
}

// newEngine builds an engine for the tests. Their sessions are many times
// the window, so they get a summarizer call budget that never binds
// unless they set one (TestCallBudget tests the budget).
func newEngine(window int, sum Summarizer, opts Options) *Engine {
	if opts.MaxSummarizerCalls == 0 {
		opts.MaxSummarizerCalls = 1000
	}
	return New(Deps{Counter: counter, Models: limits(window), Cache: cache.NewMemory(256 << 20), Summarizer: sum}, opts)
}

func TestChunkBoundariesStableAsSessionGrows(t *testing.T) {
	for seed := int64(1); seed <= 8; seed++ {
		msgs := session(seed, 80)
		var prev []chunk
		for k := 10; k <= len(msgs); k += 7 {
			b := body(t, msgs[:k])
			conv, err := parseBody(b)
			if err != nil {
				// a prefix may cut between a call and its answers; skip those
				continue
			}
			chunks := chunkSteps(conv.steps, 3000, 0)
			for i := range prev {
				if i >= len(chunks) || chunks[i] != prev[i] {
					t.Fatalf("seed %d: chunk %d moved from %v to %v when the session grew to %d messages", seed, i, prev[i], chunks, k)
				}
			}
			prev = chunks
		}
	}
}

func TestParseRejectsBrokenPairs(t *testing.T) {
	tests := map[string]string{
		"orphan tool":     `[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"a","content":"y"}]`,
		"unanswered call": `[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"z"}]`,
		"unknown role":    `[{"role":"user","content":"x"},{"role":"robot","content":"y"}]`,
	}
	for name, msgs := range tests {
		if _, err := parseBody([]byte(`{"messages":` + msgs + `}`)); !errors.Is(err, errInvalid) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestPlanKeepsPairsHeadAndTail(t *testing.T) {
	msgs := session(3, 120)
	b := body(t, msgs)
	e := newEngine(128000, nil, Options{Summarizer: "extractive"})
	res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "s"})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Report
	if r.Applied != AppliedFull {
		t.Fatalf("applied %q (%s)", r.Applied, r.Reason)
	}
	validate(t, res.Body)
	out := gjson.GetBytes(res.Body, "messages").Array()
	in := gjson.GetBytes(b, "messages").Array()
	if out[0].Raw != in[0].Raw || out[1].Raw != in[1].Raw {
		t.Error("head not verbatim")
	}
	if !strings.HasPrefix(out[2].Get("content").Str, "<conversation-summary") {
		t.Errorf("message 2 is not the summary: %.80s", out[2].Raw)
	}
	// The last keep_recent_turns steps are verbatim and in place.
	for i := 1; i <= 7; i++ {
		if out[len(out)-i].Raw != in[len(in)-i].Raw {
			t.Fatalf("tail message -%d changed", i)
		}
	}
	if r.TokensAfter > r.Trigger || r.TokensAfter >= r.TokensBefore {
		t.Errorf("tokens %d -> %d, threshold %d", r.TokensBefore, r.TokensAfter, r.Trigger)
	}
	if r.Degraded != "" {
		t.Errorf("degraded: %s", r.Degraded)
	}
	if gjson.GetBytes(res.Body, "temperature").Raw != "0" {
		t.Error("other fields lost")
	}
	if !regexp.MustCompile(`^l\d=\d+(,l\d=\d+)*$`).MatchString(r.Summaries) {
		t.Errorf("summaries header %q", r.Summaries)
	}
}

func TestHierarchyBoundsSummaries(t *testing.T) {
	msgs := session(4, 250)
	e := newEngine(64000, nil, Options{Summarizer: "extractive", ChunkTokens: 1500, SummaryBudgetTokens: 2000})
	res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: body(t, msgs), Scope: "s"})
	if err != nil {
		t.Fatal(err)
	}
	validate(t, res.Body)
	if !strings.Contains(res.Report.Summaries, "l2=") {
		t.Fatalf("no level-2 summaries: %q (%s)", res.Report.Summaries, res.Report.Reason)
	}
}

func TestTruncateMode(t *testing.T) {
	msgs := session(5, 60)
	b := body(t, msgs)
	e := newEngine(16000, nil, Options{Summarizer: "extractive"})
	res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeTruncate, Force: true, Scope: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Applied != AppliedTruncate {
		t.Fatalf("applied %q (%s)", res.Report.Applied, res.Report.Reason)
	}
	validate(t, res.Body)
	out := gjson.GetBytes(res.Body, "messages").Array()
	marker := out[2].Get("content").Str
	if !strings.Contains(marker, "earlier messages were omitted") {
		t.Fatalf("no marker: %s", marker)
	}
	id := marker[strings.LastIndex(marker, "/")+1 : len(marker)-1]
	orig, ok := e.Originals(context.Background(), "s", id)
	if !ok || !gjson.ValidBytes(orig) || len(gjson.ParseBytes(orig).Array()) == 0 {
		t.Fatalf("originals for %s: %v", id, ok)
	}
	if _, ok := e.Originals(context.Background(), "other-caller", id); ok {
		t.Fatal("originals served to another scope")
	}
}

func TestUnderThresholdUntouched(t *testing.T) {
	b := body(t, session(6, 5))
	e := newEngine(128000, nil, Options{})
	res, _ := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b})
	if &res.Body[0] != &b[0] || res.Report.Applied != AppliedNone {
		t.Fatal("under-threshold body not returned as is")
	}
}

func TestTooLargeForwardedUnchanged(t *testing.T) {
	msgs := []map[string]any{{"role": "user", "content": strings.Repeat("word ", 30000)}, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}}
	b := body(t, msgs)
	e := newEngine(8000, nil, Options{})
	res, _ := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b})
	if res.Report.Applied != AppliedNone || string(res.Body) != string(b) || !res.Report.DegradedBy(DegradedTooLarge) {
		t.Fatalf("report %+v", res.Report)
	}
}

type failing struct {
	mode  string
	calls atomic.Int32
}

func (f *failing) Summarize(ctx context.Context, in SummaryInput) (string, error) {
	f.calls.Add(1)
	switch f.mode {
	case "error":
		return "", errors.New("summarizer answered 500")
	case "timeout":
		<-ctx.Done()
		return "", ctx.Err()
	case "empty":
		return "  ", nil
	}
	return "ok", nil
}

// TestSummarizerFailuresFallBack: a failed summarizer gives extractive
// summaries, is not called again within the back-off and is called again
// after it — by the engine's clock (a fake one here, the back-off an hour
// of it), never the wall's: a loaded machine that takes longer than the
// back-off for a request does not end it, and the mark the cache keeps
// for the replicas ends when the clock says.
func TestSummarizerFailuresFallBack(t *testing.T) {
	for _, mode := range []string{"error", "timeout", "empty"} {
		t.Run(mode, func(t *testing.T) {
			f := &failing{mode: mode}
			var clock atomic.Int64
			clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
			now := func() time.Time { return time.Unix(0, clock.Load()) }
			e := New(Deps{Counter: counter, Models: limits(16000), Cache: cache.NewMemory(256 << 20), Summarizer: f, Now: now},
				Options{ChunkTokens: 2000, SummaryBudgetTokens: 2000, SummaryTimeout: 50 * time.Millisecond, MaxSummarizerCalls: 1000, NegativeTTL: time.Hour})
			b := body(t, session(7, 50))
			res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "s"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Report.Applied == AppliedNone || !res.Report.DegradedBy(DegradedSummarizerFailed) {
				t.Fatalf("report %+v", res.Report)
			}
			validate(t, res.Body)
			// Background work the request started (summaries prepared
			// ahead) finishes first: a loaded machine may run it after
			// the request returns.
			e.Close(context.Background())
			first := f.calls.Load()
			// The failing summarizer is not retried on the next request.
			e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "s"})
			if f.calls.Load() != first {
				t.Errorf("summarizer called again within the negative-cache window (%d -> %d)", first, f.calls.Load())
			}
			// Nor at its last instant; once it has passed, it is.
			clock.Add(int64(time.Hour) - 1)
			e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "s"})
			e.Close(context.Background())
			if f.calls.Load() != first {
				t.Errorf("summarizer called again at the back-off's last instant (%d -> %d)", first, f.calls.Load())
			}
			clock.Add(1)
			e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "s"})
			e.Close(context.Background())
			if f.calls.Load() == first {
				t.Errorf("summarizer not called again once the back-off (an hour by the engine's clock) had passed")
			}
		})
	}
}

func TestSingleflight(t *testing.T) {
	var calls atomic.Int32
	slow := SummarizerFunc(func(ctx context.Context, in SummaryInput) (string, error) {
		calls.Add(1)
		time.Sleep(20 * time.Millisecond)
		return "summary of " + textHash(in.Text), nil
	})
	e := newEngine(32000, slow, Options{ChunkTokens: 4000})
	b := body(t, session(8, 120))
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "s"})
		}()
	}
	wg.Wait()
	e.Close(context.Background())
	res, _ := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "s"})
	if res.Report.Cache != "hit" {
		t.Errorf("cache %q after warm-up", res.Report.Cache)
	}
	// Every distinct summary (level 1 chunks and their folds) was asked
	// for once, however many requests needed it at the same time.
	distinct := 0
	for _, part := range strings.Split(res.Report.Summaries, ",") {
		var level, n int
		if _, err := fmt.Sscanf(part, "l%d=%d", &level, &n); err != nil {
			t.Fatalf("summaries %q: %v", res.Report.Summaries, err)
		}
		distinct += n
	}
	if distinct == 0 {
		t.Fatal("nothing summarized")
	}
	// Folded summaries replaced groups of lower ones that were summarized
	// too; count the calls against an engine that summarized alone (its
	// summaries prepared ahead in the background included).
	var soloCalls atomic.Int32
	solo := newEngine(32000, SummarizerFunc(func(ctx context.Context, in SummaryInput) (string, error) {
		soloCalls.Add(1)
		return "summary of " + textHash(in.Text), nil
	}), Options{ChunkTokens: 4000})
	solo.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "s"})
	solo.Close(context.Background())
	if got, want := int(calls.Load()), int(soloCalls.Load()); got != want {
		t.Errorf("%d summarizer calls for 6 concurrent requests, %d for one alone: concurrent requests duplicated work", got, want)
	}
}

// blockingSummarizer answers when released; it counts calls and the
// contexts it saw cancelled.
type blockingSummarizer struct {
	release   chan struct{}
	started   chan struct{}
	calls     atomic.Int32
	cancelled atomic.Int32
	fail      func(in SummaryInput) error
}

func (b *blockingSummarizer) Summarize(ctx context.Context, in SummaryInput) (string, error) {
	b.calls.Add(1)
	if b.fail != nil {
		if err := b.fail(in); err != nil {
			return "", err
		}
	}
	select {
	case b.started <- struct{}{}:
	default:
	}
	select {
	case <-b.release:
		return "## Task and intent\n- summary of " + textHash(in.Text), nil
	case <-ctx.Done():
		b.cancelled.Add(1)
		return "", ctx.Err()
	}
}

func TestSharedSummaryOutlivesTheFirstClient(t *testing.T) {
	sum := &blockingSummarizer{release: make(chan struct{}), started: make(chan struct{}, 1)}
	e := newEngine(32000, sum, Options{ChunkTokens: 4000, SummarizerConcurrency: 1})
	b := body(t, session(8, 120))
	first, leave := context.WithCancel(context.Background())
	firstDone := make(chan error, 1)
	go func() {
		_, err := e.Condense(first, Request{Codec: chatCodec, Body: b, Scope: "s", Mode: ModeFull})
		firstDone <- err
	}()
	<-sum.started
	second := make(chan Result, 1)
	go func() {
		res, _ := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "s", Mode: ModeFull})
		second <- res
	}()
	for waiting(&e.flight, firstKey(e)) < 2 {
		time.Sleep(time.Millisecond)
	}
	leave()
	if err := <-firstDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("first request: %v", err)
	}
	close(sum.release)
	res := <-second
	if res.Report.Degraded != "" || res.Report.Applied != AppliedFull {
		t.Fatalf("second request after the first left: %+v", res.Report)
	}
	if n := sum.cancelled.Load(); n != 0 {
		t.Errorf("%d summarizer calls cancelled by the client that left", n)
	}
	if e.backingOff(&job{reqState: &reqState{req: Request{Codec: chatCodec, Scope: "s"}}}, "gpt-4o") {
		t.Error("a client leaving counted as a summarizer failure")
	}
}

// firstKey is the flight key of the only call in flight.
func firstKey(e *Engine) string {
	e.flight.mu.Lock()
	defer e.flight.mu.Unlock()
	for k := range e.flight.calls {
		return k
	}
	return ""
}

func TestBackOffIsPerCallerAndModel(t *testing.T) {
	var calls atomic.Int32
	sum := SummarizerFunc(func(ctx context.Context, in SummaryInput) (string, error) {
		calls.Add(1)
		if in.Credentials.Get("Authorization") == "Bearer bad" {
			return "", errors.New("401 invalid key")
		}
		return "## Task and intent\n- summary " + textHash(in.Text), nil
	})
	e := newEngine(32000, sum, Options{ChunkTokens: 4000, NegativeTTL: time.Hour})
	b := body(t, session(8, 120))
	bad, _ := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "bad", Mode: ModeFull, Credentials: http.Header{"Authorization": {"Bearer bad"}}})
	if !bad.Report.DegradedBy(DegradedSummarizerFailed) {
		t.Fatalf("bad key: %+v", bad.Report)
	}
	before := calls.Load()
	again, _ := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "bad", Mode: ModeFull, Credentials: http.Header{"Authorization": {"Bearer bad"}}})
	if calls.Load() != before || !again.Report.DegradedBy(DegradedSummarizerSuspended) {
		t.Fatalf("the failing caller was not backed off: %d more calls, %+v", calls.Load()-before, again.Report)
	}
	good, _ := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "good", Mode: ModeFull, Credentials: http.Header{"Authorization": {"Bearer good"}}})
	if good.Report.Degraded != "" || calls.Load() == before {
		t.Fatalf("another caller was degraded by the first one's failures: %+v", good.Report)
	}
}

func TestSlotWaitIsNotAFailure(t *testing.T) {
	sum := &blockingSummarizer{release: make(chan struct{}), started: make(chan struct{}, 1)}
	e := newEngine(32000, sum, Options{ChunkTokens: 4000, SummarizerConcurrency: 1, SummaryTimeout: 50 * time.Millisecond, MaxWait: time.Minute})
	// Hold the only slot.
	e.summarizeSem <- struct{}{}
	b := body(t, session(8, 120))
	res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "s", Mode: ModeFull})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Report.DegradedBy(DegradedBusy) {
		t.Fatalf("degraded %v (%q), want the summarizer busy", res.Report.DegradedKinds, res.Report.Degraded)
	}
	if e.backingOff(&job{reqState: &reqState{req: Request{Codec: chatCodec, Scope: "s"}}}, "gpt-4o") {
		t.Fatal("waiting for a slot counted as a summarizer failure")
	}
	if sum.calls.Load() != 0 {
		t.Fatalf("%d calls made without a slot", sum.calls.Load())
	}
	<-e.summarizeSem
}

func TestMaxWaitGoesOnWithWhatIsReady(t *testing.T) {
	sum := &blockingSummarizer{release: make(chan struct{}), started: make(chan struct{}, 1)}
	e := newEngine(32000, sum, Options{ChunkTokens: 4000, MaxWait: 20 * time.Millisecond})
	b := body(t, session(8, 120))
	res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "s", Mode: ModeFull})
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Applied != AppliedFull || !res.Report.DegradedBy(DegradedMaxWait) {
		t.Fatalf("report %+v, want full condensing degraded by max_wait", res.Report)
	}
	validate(t, res.Body)
	// The call started goes on and lands in the cache.
	close(sum.release)
	e.Close(context.Background())
	if sum.cancelled.Load() != 0 {
		t.Fatal("the summarizer call was cancelled when the request stopped waiting")
	}
	if e.backingOff(&job{reqState: &reqState{req: Request{Codec: chatCodec, Scope: "s"}}}, "gpt-4o") {
		t.Fatal("max_wait counted as a summarizer failure")
	}
	calls := sum.calls.Load()
	next, _ := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "s", Mode: ModeFull})
	if next.Report.Cache == "miss" || next.Report.Cache == "" {
		t.Errorf("the late summary was not cached: cache %q", next.Report.Cache)
	}
	_ = calls
}

// parseBody scans and parses a chat body as the engine does.
func parseBody(body []byte) (*conversation, error) {
	codec := chat.New(counter)
	r, err := codec.Scan(body, func(string) string { return tokenizer.O200kBase })
	if err != nil {
		return nil, err
	}
	return newConversation(r, codec)
}

func TestSelectiveLLMDigests(t *testing.T) {
	var calls atomic.Int32
	var fail atomic.Bool
	sum := SummarizerFunc(func(ctx context.Context, in SummaryInput) (string, error) {
		calls.Add(1)
		if fail.Load() {
			return "", errors.New("down")
		}
		if !strings.Contains(in.Prompt, "tool output") {
			return "", errors.New("not a digest prompt")
		}
		return "failing: TestPlanted (digest by the LLM)", nil
	})
	e := newEngine(128000, sum, Options{SelectiveEnabled: true, SelectiveSummarizer: "llm"})
	sess, _ := corpus.Synthetic(33, 420_000)
	b, _ := sess.Request("gpt-4o", 0)
	res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeSelective, Scope: "s"})
	if err != nil {
		t.Fatal(err)
	}
	validate(t, res.Body)
	if res.Report.Applied == AppliedNone || !strings.Contains(string(res.Body), "LLM digest") {
		t.Fatalf("no LLM digest in the condensed body (%+v)", res.Report)
	}
	first := calls.Load()
	if first == 0 || res.Report.Calls == 0 {
		t.Fatal("the summarizer was not asked for digests")
	}
	again, _ := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeSelective, Scope: "s"})
	if calls.Load() != first || string(again.Body) != string(res.Body) {
		t.Errorf("digests not reused: %d more calls, same body %v", calls.Load()-first, string(again.Body) == string(res.Body))
	}
	// A failing summarizer: the deterministic digests, and the request
	// still goes.
	fail.Store(true)
	e2 := newEngine(128000, sum, Options{SelectiveEnabled: true, SelectiveSummarizer: "llm", NegativeTTL: time.Nanosecond})
	res2, err := e2.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeSelective, Scope: "s"})
	if err != nil || res2.Report.Applied == AppliedNone || strings.Contains(string(res2.Body), "LLM digest") || !strings.Contains(string(res2.Body), "condense-proxy digest") {
		t.Fatalf("fallback: err %v report %+v", err, res2.Report)
	}
	// The fallback digests were not kept as if they were the LLM's: once
	// the summarizer is back, the next request gets LLM digests.
	fail.Store(false)
	res3, err := e2.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeSelective, Scope: "s"})
	if err != nil || !strings.Contains(string(res3.Body), "LLM digest") {
		t.Fatalf("after the summarizer recovered: err %v, LLM digests %v", err, strings.Contains(string(res3.Body), "LLM digest"))
	}
}

// TestSelectiveCountsWithTheModelsEncoding: digests are counted with the
// encoding of the request's model, as its items are — cl100k_base here,
// not o200k_base whatever the model.
func TestSelectiveCountsWithTheModelsEncoding(t *testing.T) {
	models := ModelsFunc(func(string) ModelLimits {
		return ModelLimits{Window: 128000, Threshold: 0.8, Encoding: tokenizer.CL100kBase, SafetyFactor: 1}
	})
	e := New(Deps{Counter: counter, Models: models, Cache: cache.NewMemory(64 << 20)}, Options{SelectiveEnabled: true})
	sess, _ := corpus.Synthetic(33, 420_000)
	b, _ := sess.Request("gpt-4", 0)
	res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeSelective, Scope: "s"})
	if err != nil {
		t.Fatal(err)
	}
	digests, differ := 0, 0
	for _, c := range res.Report.Changes {
		if c.Kind != ChangeDigest {
			continue
		}
		digests++
		want := counter.Text(tokenizer.CL100kBase, c.Text)
		if c.TokensAfter != want {
			t.Errorf("digest %s: %d tokens after, %d with cl100k_base", c.ID, c.TokensAfter, want)
		}
		if want != counter.Text(tokenizer.O200kBase, c.Text) {
			differ++
		}
	}
	if digests == 0 || differ == 0 {
		t.Fatalf("%d digests, %d counted differently by the two encodings: nothing tested", digests, differ)
	}
}

func TestLLMDigestsSharedAcrossRequests(t *testing.T) {
	sum := &blockingSummarizer{release: make(chan struct{}), started: make(chan struct{}, 1)}
	e := newEngine(128000, sum, Options{SelectiveEnabled: true, SelectiveSummarizer: "llm"})
	sess, _ := corpus.Synthetic(33, 420_000)
	b, _ := sess.Request("gpt-4o", 0)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeSelective, Scope: "s"})
		}()
	}
	<-sum.started
	for waiting(&e.flight, firstKey(e)) < 4 {
		time.Sleep(time.Millisecond)
	}
	close(sum.release)
	wg.Wait()
	solo := &blockingSummarizer{release: make(chan struct{}), started: make(chan struct{}, 1)}
	close(solo.release)
	one := newEngine(128000, solo, Options{SelectiveEnabled: true, SelectiveSummarizer: "llm"})
	one.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeSelective, Scope: "s"})
	if got, want := sum.calls.Load(), solo.calls.Load(); got != want || want == 0 {
		t.Errorf("4 concurrent requests made %d digest calls; one alone makes %d", got, want)
	}
}

func TestCountOnlyHasNoSideEffects(t *testing.T) {
	var calls atomic.Int32
	sum := SummarizerFunc(func(ctx context.Context, in SummaryInput) (string, error) {
		calls.Add(1)
		return "## Task and intent\n- canned", nil
	})
	mem := cache.NewMemory(256 << 20)
	e := New(Deps{Counter: counter, Models: limits(32000), Cache: mem, Summarizer: sum}, Options{MaxSummarizerCalls: 1000})
	b := body(t, session(5, 150))
	for _, mode := range []string{ModeFull, ModeAuto, ModeSelective, ModeTruncate} {
		res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: mode, Scope: "s", CountOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Report.Applied == AppliedNone || res.Report.TokensAfter >= res.Report.TokensBefore {
			t.Fatalf("%s: count-only request not condensed: %+v", mode, res.Report)
		}
		validate(t, res.Body)
	}
	e.Close(context.Background())
	if n := calls.Load(); n != 0 {
		t.Errorf("counting made %d summarizer calls", n)
	}
	if n := mem.Bytes(); n != 0 {
		t.Errorf("counting wrote %d bytes to the cache", n)
	}
	// The same request for real: the summarizer is called, and a count
	// made afterwards equals what was forwarded.
	res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeFull, Scope: "s"})
	if err != nil || calls.Load() == 0 {
		t.Fatalf("real request: err %v, %d summarizer calls", err, calls.Load())
	}
	count, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeFull, Scope: "s", CountOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if count.Report.TokensAfter != res.Report.TokensAfter || !bytes.Equal(count.Body, res.Body) {
		t.Errorf("count after the real request: %d tokens, forwarded %d", count.Report.TokensAfter, res.Report.TokensAfter)
	}
}

// countingCache counts writes.
type countingCache struct {
	*cache.Memory
	sets atomic.Int32
	keys sync.Map
}

func (c *countingCache) Set(ctx context.Context, key string, v []byte, ttl time.Duration) {
	c.sets.Add(1)
	c.keys.Store(key, true)
	c.Memory.Set(ctx, key, v, ttl)
}

// Add records the key of a set-if-absent write (decisions), uncounted.
func (c *countingCache) Add(ctx context.Context, key string, v []byte, ttl time.Duration) ([]byte, bool) {
	c.keys.Store(key, true)
	return c.Memory.Add(ctx, key, v, ttl)
}

// Swap records the key of a compare-and-set write (the decision
// record), uncounted.
func (c *countingCache) Swap(ctx context.Context, key string, old, v []byte, ttl time.Duration) ([]byte, bool, error) {
	c.keys.Store(key, true)
	return c.Memory.Swap(ctx, key, old, v, ttl)
}

// recordKey returns the key of the conversation's decision record
// ("plan:…"), "" when none was written.
func (c *countingCache) recordKey() string {
	key := ""
	c.keys.Range(func(k, _ any) bool {
		// plan:<scope>:<head>, not a decision under a key of its own as
		// the version before kept it (plan:<name>:<scope>:<head>).
		if s := k.(string); strings.HasPrefix(s, "plan:") && strings.Count(s, ":") == 2 {
			key = s
		}
		return key == ""
	})
	return key
}

// decision returns the decision name the conversation's record holds.
func (c *countingCache) decision(name string) (int, bool) {
	k := c.recordKey()
	if k == "" {
		return 0, false
	}
	raw, _ := c.Get(context.Background(), k)
	s, ok := decodeRecord(raw)[name]
	return decisionValue(name, s, ok)
}

// setDecision makes the record under key in c hold name=v, as another
// replica's decision would.
func setDecision(c Cache, key, name string, v int) {
	ctx := context.Background()
	raw, _ := c.Get(ctx, key)
	values := decodeRecord(raw)
	if values == nil {
		values = map[string]string{}
	}
	values[name] = strconv.Itoa(v)
	c.Set(ctx, key, encodeRecord(values), time.Hour)
}

func TestOriginalsWrittenOnceApartFromSummaries(t *testing.T) {
	summaries := &countingCache{Memory: cache.NewMemory(64 << 20)}
	originals := &countingCache{Memory: cache.NewMemory(64 << 20)}
	e := New(Deps{Counter: counter, Models: limits(32000), Cache: summaries, Originals: originals}, Options{Summarizer: "extractive", SelectiveEnabled: true})
	b := body(t, session(5, 150))
	for _, mode := range []string{ModeSelective, ModeFull, ModeTruncate} {
		first, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: mode, Scope: "s"})
		if err != nil || len(first.Report.Changes) == 0 {
			t.Fatalf("%s: err %v, %d changes", mode, err, len(first.Report.Changes))
		}
		writes := originals.sets.Load()
		if writes == 0 {
			t.Fatalf("%s: no original written", mode)
		}
		again, _ := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: mode, Scope: "s"})
		if !bytes.Equal(again.Body, first.Body) {
			t.Fatalf("%s: the same request condensed differently", mode)
		}
		if n := originals.sets.Load(); n != writes {
			t.Errorf("%s: the same request rewrote %d originals", mode, n-writes)
		}
		for _, c := range first.Report.Changes {
			if _, ok := e.Originals(context.Background(), "s", c.ID); !ok {
				t.Errorf("%s: original %s (%s) not retrievable", mode, c.ID, c.Kind)
			}
			if _, ok := e.Originals(context.Background(), "other", c.ID); ok {
				t.Errorf("%s: original %s readable by another scope", mode, c.ID)
			}
		}
	}
	summaries.keys.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), "orig:") {
			t.Errorf("original %s written to the summaries' cache", k)
		}
		return true
	})
}

// bigFile is a file read of about n characters, with a planted line.
func bigFile(n int) string {
	var b strings.Builder
	for i := 1; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%6d\tfunc handler%d(w http.ResponseWriter, r *http.Request) { serve(w, r, %d) }\n", i, i, i)
	}
	return b.String()
}

func TestNewestStepIsNeverDropped(t *testing.T) {
	readCall := func(id string) map[string]any {
		return map[string]any{"role": "assistant", "content": "Reading the server.", "tool_calls": []map[string]any{{"id": id, "type": "function",
			"function": map[string]any{"name": "read_file", "arguments": `{"path":"server/handlers.go"}`}}}}
	}
	older := session(4, 30)
	cases := map[string][]map[string]any{
		// The request ends with the result of a 130,000-character read.
		"newest step is the read": append(append([]map[string]any{}, older...), readCall("read1"),
			map[string]any{"role": "tool", "tool_call_id": "read1", "content": bigFile(130000)}),
		// The read is followed by a small step.
		"read one step back": append(append([]map[string]any{}, older...), readCall("read1"),
			map[string]any{"role": "tool", "tool_call_id": "read1", "content": bigFile(130000)},
			map[string]any{"role": "assistant", "content": "Checking git.", "tool_calls": []map[string]any{{"id": "git1", "type": "function",
				"function": map[string]any{"name": "bash", "arguments": `{"command":"git status"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "git1", "content": "nothing to commit"}),
		// An agent that pastes tool results into user messages.
		"pasted result in a user message": append(append([]map[string]any{}, older...),
			map[string]any{"role": "assistant", "content": "<read_file><path>server/handlers.go</path></read_file>"},
			map[string]any{"role": "user", "content": "[read_file for 'server/handlers.go'] Result:\n" + bigFile(130000)}),
	}
	for name, msgs := range cases {
		for _, mode := range []string{ModeAuto, ModeFull, ModeSelective, ModeTruncate} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				mem := cache.NewMemory(64 << 20)
				e := New(Deps{Counter: counter, Models: limits(32000), Cache: mem}, Options{Summarizer: "extractive", SelectiveEnabled: true, ChunkTokens: 4000})
				b := body(t, msgs)
				res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: mode, Scope: "s"})
				if err != nil {
					t.Fatal(err)
				}
				r := res.Report
				if r.Applied == AppliedNone || r.TokensAfter > r.Window {
					t.Fatalf("not brought within the window: %+v", r)
				}
				validate(t, res.Body)
				out := string(res.Body)
				for _, want := range []string{`"Reading the server."`, `<read_file><path>`} {
					if strings.Contains(string(b), want) && !strings.Contains(out, want) {
						t.Errorf("the newest steps lost %s", want)
					}
				}
				if !strings.Contains(out, "condense-proxy digest of") {
					t.Fatal("the large result was not digested")
				}
				// The last message is still the last one, and the digest's
				// original is retrievable.
				var digests int
				for _, c := range r.Changes {
					if c.Kind == ChangeDigest {
						digests++
						if _, ok := e.Originals(context.Background(), "s", c.ID); !ok {
							t.Errorf("original of digest %s not kept", c.ID)
						}
					}
				}
				if digests == 0 {
					t.Error("no digest reported in the changes")
				}
				if !r.DegradedBy(DegradedNewestOverBudget) {
					t.Errorf("degraded %v (%q) does not say the newest steps were shrunk", r.DegradedKinds, r.Degraded)
				}
			})
		}
	}
}

func TestNewestStepThatCannotFitIsForwarded(t *testing.T) {
	msgs := append(session(4, 10), map[string]any{"role": "assistant", "content": "Reading.", "tool_calls": []map[string]any{{"id": "r", "type": "function",
		"function": map[string]any{"name": "read_file", "arguments": `{"path":"a.go"}`}}}},
		map[string]any{"role": "tool", "tool_call_id": "r", "content": bigFile(130000)})
	e := New(Deps{Counter: counter, Models: limits(32000), Cache: cache.NewMemory(64 << 20)},
		Options{Summarizer: "extractive", SelectiveEnabled: true, Selective: selective.Options{ExcludeTools: []string{"read_file"}}})
	b := body(t, msgs)
	res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeTruncate, Scope: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Applied != AppliedNone || !bytes.Equal(res.Body, b) || !res.Report.DegradedBy(DegradedTooLarge) {
		t.Fatalf("an excluded output that cannot fit: %+v", res.Report)
	}
}

func TestSelectiveKeepsItsDigestsWhenTheWindowOmitsNothing(t *testing.T) {
	call := func(id, tool string) map[string]any {
		return map[string]any{"role": "assistant", "content": "step " + id, "tool_calls": []map[string]any{{"id": id, "type": "function",
			"function": map[string]any{"name": tool, "arguments": `{"path":"x.go"}`}}}}
	}
	msgs := []map[string]any{{"role": "system", "content": "agent"}, {"role": "user", "content": "task"},
		call("a", "read_file"), {"role": "tool", "tool_call_id": "a", "content": bigFile(60000)},
		call("b", "pinned"), {"role": "tool", "tool_call_id": "b", "content": bigFile(45000)},
		call("c", "pinned"), {"role": "tool", "tool_call_id": "c", "content": bigFile(45000)},
	}
	e := New(Deps{Counter: counter, Models: limits(32000), Cache: cache.NewMemory(64 << 20)},
		Options{Summarizer: "extractive", SelectiveEnabled: true, Selective: selective.Options{KeepRecentToolOutputs: -1, ExcludeTools: []string{"pinned"}}})
	b := body(t, msgs)
	res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeSelective, Scope: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Applied != AppliedSelective || !strings.Contains(string(res.Body), "condense-proxy digest of read_file") {
		t.Fatalf("digests discarded: %+v", res.Report)
	}
	validate(t, res.Body)
}

func TestPrefixReused(t *testing.T) {
	e := newEngine(128000, nil, Options{Summarizer: "extractive"})
	msgs := session(2, 40)
	first, _ := e.Condense(context.Background(), Request{Codec: chatCodec, Body: body(t, msgs[:20]), Scope: "s"})
	if first.Report.PrefixReused != -1 {
		t.Fatalf("first request: reused %d, want -1 (unknown)", first.Report.PrefixReused)
	}
	// The agent appends: everything sent before is reused.
	next, _ := e.Condense(context.Background(), Request{Codec: chatCodec, Body: body(t, msgs[:30]), Scope: "s"})
	if r := next.Report; r.PrefixReused != first.Report.TokensAfter {
		t.Errorf("append-only: reused %d of %d (previous %d)", r.PrefixReused, r.TokensAfter, first.Report.TokensAfter)
	}
	// Another caller with the same conversation knows nothing of it.
	other, _ := e.Condense(context.Background(), Request{Codec: chatCodec, Body: body(t, msgs[:30]), Scope: "t"})
	if other.Report.PrefixReused != -1 {
		t.Errorf("another scope: reused %d", other.Report.PrefixReused)
	}
	// An edited early message breaks the prefix there.
	edited := append([]map[string]any{}, msgs[:31]...)
	edited[3] = map[string]any{"role": edited[3]["role"], "tool_call_id": edited[3]["tool_call_id"], "content": "changed"}
	br, _ := e.Condense(context.Background(), Request{Codec: chatCodec, Body: body(t, edited), Scope: "s"})
	if br.Report.PrefixReused <= 0 || br.Report.PrefixReused >= next.Report.TokensAfter/2 {
		t.Errorf("edited message 3: reused %d of %d", br.Report.PrefixReused, br.Report.TokensAfter)
	}
}

// TestCutsMoveInStrides replays a growing session request by request: a
// condensed request keeps the previous one's items as its prefix until it
// would cross the threshold, then its cut jumps a whole stride, so the
// prefix breaks about once per stride of growth, never once per turn.
func TestCutsMoveInStrides(t *testing.T) {
	sess, _ := corpus.Synthetic(7, 700_000)
	const window = 64000
	for _, mode := range []string{ModeTruncate, ModeFull, ModeSelective, ModeAuto} {
		t.Run(mode, func(t *testing.T) {
			e := newEngine(window, nil, Options{Summarizer: "extractive", SelectiveEnabled: true})
			var prev Report
			breaks, condensed, first := 0, 0, 0
			for _, n := range sess.TurnEnds() {
				b, _ := sess.Request("gpt-4o", n)
				res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: mode, Scope: "s"})
				if err != nil {
					t.Fatal(err)
				}
				r := res.Report
				if r.TokensAfter > r.Trigger {
					t.Fatalf("request of %d messages forwarded with %d tokens, over the threshold %d", n, r.TokensAfter, r.Trigger)
				}
				if r.Applied != AppliedNone {
					if condensed == 0 {
						first = r.TokensBefore
					}
					condensed++
					if prev.Applied != AppliedNone && r.PrefixReused < prev.TokensAfter {
						breaks++
					}
				}
				prev = r
			}
			// Selective mode has two such grids — how much is digested, and
			// how far back outputs are protected — so up to two breaks per
			// stride.
			stride := int(window * (0.8 - 0.5))
			allowed := 2*(prev.TokensBefore-first)/stride + 3
			if condensed < 50 {
				t.Fatalf("only %d requests condensed", condensed)
			}
			if breaks > allowed {
				t.Errorf("%d prefix breaks over %d condensed requests (%d tokens of growth): more than two per stride (%d allowed)", breaks, condensed, prev.TokensBefore-first, allowed)
			}
		})
	}
}

// TestNextFoldPreparedAhead: once a conversation is condensed, the
// summaries its next fold needs are written in the background, so most
// requests that fold wait for no summarizer call (only a chunk completed
// by the very request that folds it cannot have been prepared).
func TestNextFoldPreparedAhead(t *testing.T) {
	var calls atomic.Int32
	sum := SummarizerFunc(func(ctx context.Context, in SummaryInput) (string, error) {
		calls.Add(1)
		return "## Task and intent\n- summary " + textHash(in.Text+in.Previous), nil
	})
	e := newEngine(64000, sum, Options{})
	sess, _ := corpus.Synthetic(7, 700_000)
	condensed, folds, waited := 0, 0, 0
	prev := ""
	for _, n := range sess.TurnEnds() {
		b, _ := sess.Request("gpt-4o", n)
		res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeFull, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		e.Close(context.Background()) // background work done before the next turn
		r := res.Report
		if r.Applied != AppliedFull {
			continue
		}
		if condensed > 0 && r.Summaries != prev {
			folds++
			if r.Cache != "hit" {
				t.Logf("request of %d messages: cache %s, summaries %s", n, r.Cache, r.Summaries)
				waited++
			}
		}
		prev = r.Summaries
		condensed++
	}
	if condensed < 50 || folds < 4 || calls.Load() == 0 {
		t.Fatalf("%d requests condensed, %d folds, %d summarizer calls", condensed, folds, calls.Load())
	}
	if waited*2 > folds {
		t.Errorf("%d of %d folds waited for a summary", waited, folds)
	}
}

// TestNewestOutputDigestedLast: when the newest steps together are over
// budget, the older ones' outputs give way first; the output the agent
// just asked for stays verbatim while that is enough.
func TestNewestOutputDigestedLast(t *testing.T) {
	msgs := session(4, 10)
	var newest string
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("cat%d", i)
		content := strings.Repeat(fmt.Sprintf("step %d: building module, compiling sources, linking objects\n", i), 1000+100*i)
		msgs = append(msgs, map[string]any{"role": "assistant", "content": "Reading.", "tool_calls": []map[string]any{{"id": id, "type": "function",
			"function": map[string]any{"name": "bash", "arguments": fmt.Sprintf(`{"command":"cat f%d.go"}`, i)}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": content})
		newest = content
	}
	e := New(Deps{Counter: counter, Models: limits(32000), Cache: cache.NewMemory(64 << 20)},
		Options{Summarizer: "extractive", SelectiveEnabled: true})
	res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: body(t, msgs), Mode: ModeTruncate, Scope: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Applied == AppliedNone || res.Report.TokensAfter > res.Report.Trigger {
		t.Fatalf("not condensed under the threshold: %+v", res.Report)
	}
	validate(t, res.Body)
	last := gjson.GetBytes(res.Body, "messages.@reverse.0.content").String()
	if last != newest {
		t.Errorf("the newest output was digested (%d chars left of %d) while older ones could give way", len(last), len(newest))
	}
	if n := strings.Count(string(res.Body), "condense-proxy digest of bash"); n == 0 {
		t.Error("no older output digested")
	}
}

// TestBackOffSharedByReplicas: a caller whose summaries fail on one
// replica is backed off on another sharing the cache.
func TestBackOffSharedByReplicas(t *testing.T) {
	var calls atomic.Int32
	sum := SummarizerFunc(func(ctx context.Context, in SummaryInput) (string, error) {
		calls.Add(1)
		return "", errors.New("401 invalid key")
	})
	shared := cache.NewMemory(64 << 20)
	mk := func() *Engine {
		return New(Deps{Counter: counter, Models: limits(32000), Cache: shared, Summarizer: sum}, Options{ChunkTokens: 4000, NegativeTTL: time.Hour, MaxSummarizerCalls: 1000})
	}
	a, b := mk(), mk()
	body := body(t, session(8, 120))
	req := Request{Codec: chatCodec, Body: body, Scope: "bad", Mode: ModeFull, Credentials: http.Header{"Authorization": {"Bearer bad"}}}
	if res, _ := a.Condense(context.Background(), req); !res.Report.DegradedBy(DegradedSummarizerFailed) {
		t.Fatalf("replica a: %+v", res.Report)
	}
	before := calls.Load()
	res, _ := b.Condense(context.Background(), req)
	if calls.Load() != before || !res.Report.DegradedBy(DegradedSummarizerSuspended) {
		t.Fatalf("replica b called the failing summarizer again: %d calls, %+v", calls.Load()-before, res.Report)
	}
}

// TestAutoSummariesStayWhileTheCutDoes: auto's summaries in place of the
// window's marker are named and written once per chunk; while the cut
// stays, every request carries them byte for byte — even when the digest
// frontier passes one of the messages they summarize (which used to make a
// new summary and bust the cache at the cut, a cost selective never pays).
func TestAutoSummariesStayWhileTheCutDoes(t *testing.T) {
	sess, _ := corpus.Synthetic(7, 700_000)
	e := newEngine(32000, &countingSummarizer{}, Options{SelectiveEnabled: true})
	type span struct{ from, to int }
	prev := map[span]Change{}
	compared, frontierMoved := 0, 0
	prevDigests := 0
	for _, n := range sess.TurnEnds() {
		b, _ := sess.Request("gpt-4o", n)
		res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeAuto, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		cur, digests := map[span]Change{}, 0
		for _, c := range res.Report.Changes {
			switch c.Kind {
			case ChangeSummary:
				cur[span{c.From, c.To}] = c
			case ChangeDigest:
				digests++
			}
		}
		if len(cur) > 0 && len(cur) == len(prev) {
			same := true
			for k := range cur {
				if _, ok := prev[k]; !ok {
					same = false
				}
			}
			if same {
				compared++
				if digests != prevDigests {
					frontierMoved++
				}
				for k, c := range cur {
					if p := prev[k]; p.ID != c.ID || p.Text != c.Text {
						t.Errorf("request of %d messages: the summary of messages %d-%d changed while the cut stayed (%s → %s)", n, k.from, k.to, p.ID, c.ID)
					}
				}
			}
		}
		prev, prevDigests = cur, digests
	}
	if compared == 0 || frontierMoved == 0 {
		t.Fatalf("%d requests kept a cut, %d of them with new digests: the session tests nothing", compared, frontierMoved)
	}
}

// chatCodec is the codec of the tests' chat-completions requests.
var chatCodec = chat.New(counter)

// TestNoCodec: a request that names no codec is forwarded as received
// (the engine has no default format), saying why.
func TestNoCodec(t *testing.T) {
	e := New(Deps{Counter: counter, Models: limits(1000)}, Options{})
	b := body(t, session(4, 40))
	res, err := e.Condense(context.Background(), Request{Body: b, Force: true, Scope: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Body, b) || res.Report.Applied != AppliedNone || !res.Report.Took(PathNoCodec) {
		t.Errorf("applied %s (%s)", res.Report.Applied, res.Report.Reason)
	}
}

// TestReportCountsSummariesBySource: a request's report says how many of
// its summaries were read from the summary cache and how many it made,
// so the page can tell summarizer calls from cache reads.
func TestReportCountsSummariesBySource(t *testing.T) {
	sum := SummarizerFunc(func(ctx context.Context, in SummaryInput) (string, error) {
		return "summary of " + textHash(in.Text), nil
	})
	e := newEngine(32000, sum, Options{ChunkTokens: 4000})
	b := body(t, session(8, 120))
	first, _ := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "s"})
	e.Close(context.Background())
	again, _ := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Scope: "s"})
	if r := first.Report; r.SummariesMade == 0 || r.SummariesMade+r.SummariesCached == 0 {
		t.Errorf("first request: %d made, %d cached (calls %d, cache %q)", r.SummariesMade, r.SummariesCached, r.Calls, r.Cache)
	}
	if r := again.Report; r.Cache != "hit" || r.SummariesMade != 0 || r.SummariesCached == 0 || r.Calls != 0 {
		t.Errorf("same request again: %d made, %d cached, %d calls, cache %q", r.SummariesMade, r.SummariesCached, r.Calls, r.Cache)
	}
}

// backingOff is suspended outside any request.
func (e *Engine) backingOff(rq *job, model string) bool {
	return e.suspended(context.Background(), rq, model)
}
