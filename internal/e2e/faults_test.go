package e2e_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/internal/replay"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// TestRedisRestartMidSession stops Redis in the middle of a replayed
// session and starts it again: no agent request fails, and caching
// resumes by itself.
func TestRedisRestartMidSession(t *testing.T) {
	mr := miniredis.RunT(t)
	rc, err := cache.NewRedis(cache.RedisOptions{URL: "redis://" + mr.Addr(), Timeout: 200 * time.Millisecond, ProbeInterval: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	st := harness.New(harness.Options{Window: 32000, Cache: rc})
	defer st.Close()
	sess, _ := corpus.Synthetic(41, 300_000)
	n := len(sess.TurnEnds())
	keysBeforeStop, keysAfterRestart := 0, 0
	res, err := replay.Run(context.Background(), sess, st.Fake, st.Counter, replay.Options{
		ProxyURL: st.Proxy.URL, Model: "gpt-4o", Mode: "full", APIKey: "sk-a", Window: 32000,
		Before: func(i int) {
			switch i {
			case n / 3:
				keysBeforeStop = len(mr.Keys())
				mr.Close()
			case 2 * n / 3:
				if err := mr.Restart(); err != nil {
					t.Error(err)
				}
				time.Sleep(100 * time.Millisecond) // one probe interval
			}
		},
		Drain: st.Drain,
	})
	if err != nil {
		t.Fatal(err)
	}
	keysAfterRestart = len(mr.Keys())
	if res.Rejected != 0 {
		t.Errorf("%d requests failed", res.Rejected)
	}
	for i, r := range res.Requests {
		if r.Status != 200 {
			t.Errorf("request %d: status %d", i, r.Status)
		}
	}
	if keysBeforeStop == 0 {
		t.Fatal("nothing was cached before Redis stopped")
	}
	if keysAfterRestart == 0 {
		t.Error("caching did not resume after Redis came back")
	}
	if rc.Stats().Degraded {
		t.Error("still degraded after the restart")
	}
	if rc.Stats().Errors == 0 {
		t.Error("the outage was not counted")
	}
}

// TestClientLeavesDuringSummary: the agent disconnects while its request
// waits for the summarizer; the summarizer call is cancelled, the upstream
// never gets the request, and no goroutine is left behind.
func TestClientLeavesDuringSummary(t *testing.T) {
	var started, cancelled atomic.Int32
	blocking := condense.SummarizerFunc(func(ctx context.Context, in condense.SummaryInput) (string, error) {
		started.Add(1)
		<-ctx.Done()
		cancelled.Add(1)
		return "", ctx.Err()
	})
	st := harness.New(harness.Options{Window: 32000, SummarizerImpl: blocking, SummaryTimeout: time.Minute})
	defer st.Close()
	sess, _ := corpus.Synthetic(42, 300_000)
	body, _ := sess.Request("gpt-4o", 0)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

	// Warm up (tokenizer tables, connections), then take the baseline.
	small, _ := sess.Request("gpt-4o", 3)
	resp, err := client.Post(st.Proxy.URL+"/v1/chat/completions", "application/json", strings.NewReader(string(small)))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	time.Sleep(50 * time.Millisecond)
	baseline := runtime.NumGoroutine()
	st.Fake.Reset()

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", st.Proxy.URL+"/v1/chat/completions", strings.NewReader(string(body)))
	req.Header.Set(proxy.HeaderMode, "full")
	errc := make(chan error, 1)
	go func() {
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for started.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("summarizer never called")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("request succeeded after cancel")
	}
	for cancelled.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("summarizer call not cancelled when the client left")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, baseline %d:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, r := range st.Fake.Received() {
		if strings.HasSuffix(r.Path, "/chat/completions") {
			t.Error("the abandoned request reached the upstream")
		}
	}
}
