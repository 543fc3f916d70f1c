package condense

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

var counter = tokenizer.New(tokenizer.Options{})

func limits(window int) Models {
	return ModelsFunc(func(string) ModelLimits {
		return ModelLimits{Window: window, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1, Known: true}
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

func newEngine(window int, sum Summarizer, opts Options) *Engine {
	return New(Deps{Counter: counter, Models: limits(window), Cache: cache.NewMemory(256 << 20), Summarizer: sum}, opts)
}

func TestChunkBoundariesStableAsSessionGrows(t *testing.T) {
	for seed := int64(1); seed <= 8; seed++ {
		msgs := session(seed, 80)
		var prev []chunk
		for k := 10; k <= len(msgs); k += 7 {
			b := body(t, msgs[:k])
			rc, err := counter.Request(tokenizer.O200kBase, b)
			if err != nil {
				t.Fatal(err)
			}
			conv, err := parseConversation(rawMessages(b), rc.Messages, rc.Fields)
			if err != nil {
				// a prefix may cut between a call and its answers; skip those
				continue
			}
			chunks := chunkSteps(conv.steps, 3000)
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
		if _, err := parseConversation(rawMessages([]byte(`{"messages":`+msgs+`}`)), nil, nil); !errors.Is(err, errInvalid) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestPlanKeepsPairsHeadAndTail(t *testing.T) {
	msgs := session(3, 120)
	b := body(t, msgs)
	e := newEngine(128000, nil, Options{Summarizer: "extractive"})
	res, err := e.Condense(context.Background(), Request{Body: b, Scope: "s"})
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
	if r.TokensAfter > 64000 || r.TokensAfter >= r.TokensBefore {
		t.Errorf("tokens %d -> %d, target %d", r.TokensBefore, r.TokensAfter, 64000)
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
	res, err := e.Condense(context.Background(), Request{Body: body(t, msgs), Scope: "s"})
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
	res, err := e.Condense(context.Background(), Request{Body: b, Mode: ModeTruncate, Force: true, Scope: "s"})
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
	res, _ := e.Condense(context.Background(), Request{Body: b})
	if &res.Body[0] != &b[0] || res.Report.Applied != AppliedNone {
		t.Fatal("under-threshold body not returned as is")
	}
}

func TestTooLargeForwardedUnchanged(t *testing.T) {
	msgs := []map[string]any{{"role": "user", "content": strings.Repeat("word ", 30000)}, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}}
	b := body(t, msgs)
	e := newEngine(8000, nil, Options{})
	res, _ := e.Condense(context.Background(), Request{Body: b})
	if res.Report.Applied != AppliedNone || string(res.Body) != string(b) || res.Report.Degraded == "" {
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

func TestSummarizerFailuresFallBack(t *testing.T) {
	for _, mode := range []string{"error", "timeout", "empty"} {
		t.Run(mode, func(t *testing.T) {
			f := &failing{mode: mode}
			e := newEngine(16000, f, Options{ChunkTokens: 2000, SummaryBudgetTokens: 2000, SummaryTimeout: 50 * time.Millisecond})
			b := body(t, session(7, 50))
			res, err := e.Condense(context.Background(), Request{Body: b, Scope: "s"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Report.Applied == AppliedNone || res.Report.Degraded == "" {
				t.Fatalf("report %+v", res.Report)
			}
			validate(t, res.Body)
			first := f.calls.Load()
			// The failing summarizer is not retried on the next request.
			e.Condense(context.Background(), Request{Body: b, Scope: "s"})
			if f.calls.Load() != first {
				t.Errorf("summarizer called again within the negative-cache window (%d -> %d)", first, f.calls.Load())
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
			e.Condense(context.Background(), Request{Body: b, Scope: "s"})
		}()
	}
	wg.Wait()
	res, _ := e.Condense(context.Background(), Request{Body: b, Scope: "s"})
	if res.Report.Cache != "hit" {
		t.Errorf("cache %q after warm-up", res.Report.Cache)
	}
	n := strings.Count(res.Report.Summaries, "") // non-zero
	_ = n
	chunks := int(calls.Load())
	levels := 0
	fmt.Sscanf(res.Report.Summaries, "l1=%d", &levels)
	if chunks > levels+2 {
		t.Errorf("%d summarizer calls for %d summaries: concurrent requests duplicated work", chunks, levels)
	}
}

func rawMessages(body []byte) []string {
	var out []string
	gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
		out = append(out, m.Raw)
		return true
	})
	return out
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
	res, err := e.Condense(context.Background(), Request{Body: b, Mode: ModeSelective, Scope: "s"})
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
	again, _ := e.Condense(context.Background(), Request{Body: b, Mode: ModeSelective, Scope: "s"})
	if calls.Load() != first || string(again.Body) != string(res.Body) {
		t.Errorf("digests not reused: %d more calls, same body %v", calls.Load()-first, string(again.Body) == string(res.Body))
	}
	// A failing summarizer: the deterministic digests, and the request
	// still goes.
	fail.Store(true)
	e2 := newEngine(128000, sum, Options{SelectiveEnabled: true, SelectiveSummarizer: "llm"})
	res2, err := e2.Condense(context.Background(), Request{Body: b, Mode: ModeSelective, Scope: "s"})
	if err != nil || res2.Report.Applied == AppliedNone || strings.Contains(string(res2.Body), "LLM digest") || !strings.Contains(string(res2.Body), "condense-proxy digest") {
		t.Fatalf("fallback: err %v report %+v", err, res2.Report)
	}
}
