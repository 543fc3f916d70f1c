package app_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// stuckSummarizer never answers: each call waits for its context to end.
type stuckSummarizer struct {
	entered       chan struct{}
	calls, ended  atomic.Int32
	cancelledSeen atomic.Int32
}

func (s *stuckSummarizer) Summarize(ctx context.Context, in condense.SummaryInput) (string, error) {
	s.calls.Add(1)
	defer s.ended.Add(1)
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	s.cancelledSeen.Add(1)
	return "", ctx.Err()
}

// engineGoroutines returns the stacks of the goroutines running in
// package condense (the engine's background work, its shared calls).
func engineGoroutines() []string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		// A goroutine whose stack is runtime.goexit1 alone has returned
		// from its function and is only being torn down (Close's waiter,
		// just after it said the work was done).
		frames := strings.SplitN(g, "\n", 3)
		if len(frames) > 1 && strings.HasPrefix(frames[1], "runtime.goexit1(") {
			continue
		}
		if strings.Contains(g, "condense-proxy/condense.") {
			out = append(out, g)
		}
	}
	return out
}

// TestShutdownEndsBackgroundWork: a summary prepared in the background,
// blocked in a summarizer that never answers, does not outlive the app.
// Close waits for it until its context ends, then cancels it and returns
// only once it has returned: the summarizer saw its context end, and no
// goroutine of the engine is left.
func TestShutdownEndsBackgroundWork(t *testing.T) {
	sum := &stuckSummarizer{entered: make(chan struct{}, 1)}
	cfg := config.Defaults()
	cfg.ScopeSecret = "a test's scope secret"
	cfg.Condense.PrepareThreshold = 0.3
	cfg.Condense.Threshold = 0.8 // the session's first request is under it
	cfg.Models = []config.ModelConfig{{Match: "*", ContextWindow: 64000}}
	fake := httptest.NewServer(fakeupstream.New())
	t.Cleanup(fake.Close)
	cfg.Upstream = fake.URL
	a, err := app.New(context.Background(), &cfg, app.Options{Summarizer: sum})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			a.Close(context.Background())
		}
	})
	srv := httptest.NewServer(a.Handler)
	sess, _ := corpus.Synthetic(4, 150_000) // over the prepare threshold, under the threshold
	body, _ := sess.Request("gpt-4o", 0)
	resp := postDrained(t, srv.URL+"/v1/chat/completions", bytes.NewReader(body), proxy.HeaderMode, "full")
	if resp.Header.Get(proxy.HeaderApplied) != "none" {
		t.Fatalf("setup: applied %q", resp.Header.Get(proxy.HeaderApplied))
	}
	select {
	case <-sum.entered: // the background preparation is calling the summarizer
	case <-time.After(time.Minute):
		t.Fatal("no background summarizer call")
	}
	srv.Close() // as serve does: the server first, then the app

	// The drain's deadline passes while the call hangs.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = a.Close(ctx)
	closed = true
	if err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("Close: %v, want the background work reported cancelled", err)
	}
	if calls, ended := sum.calls.Load(), sum.ended.Load(); ended != calls || sum.cancelledSeen.Load() == 0 {
		t.Errorf("Close returned with %d of %d summarizer calls still running (%d saw their context end)", calls-ended, calls, sum.cancelledSeen.Load())
	}
	if gs := engineGoroutines(); len(gs) > 0 {
		t.Errorf("%d goroutines of the engine left after Close:\n%s", len(gs), strings.Join(gs, "\n\n"))
	}
}
