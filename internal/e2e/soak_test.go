package e2e_test

import (
	"context"
	"net/http"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/internal/replay"
)

// soakWindow is the window of the soak's proxy: the sessions are several
// times larger, so every pass condenses.
const soakWindow = 32000

// TestSoak replays several sessions in parallel, over and over, through one
// proxy with condensing on, for CONDENSE_SOAK (a duration, e.g. 10m; the
// test is skipped without it). Whatever the duration, every worker
// completes at least one whole pass, and the test checks: every pass
// condensed, no request rejected or forwarded over the window, and once
// the proxy is closed the goroutines and the heap are back to what they
// were before it started (nothing leaked). The heap and the goroutines are
// sampled every 30 s (a quarter of shorter runs); from minute 2 on both
// must stay flat.
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("CONDENSE_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("set CONDENSE_SOAK=10m to run the soak test")
	}
	var sessions []*corpus.Session
	for seed := int64(60); seed < 64; seed++ {
		s, _ := corpus.Synthetic(seed, 300_000)
		sessions = append(sessions, s)
	}
	type sample struct {
		at         time.Duration
		heap       uint64
		goroutines int
	}
	measure := func(at time.Duration) sample {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return sample{at, ms.HeapInuse, runtime.NumGoroutine()}
	}
	before := measure(0)

	st := harness.New(harness.Options{Window: soakWindow})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var samples []sample
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	type tally struct{ passes, requests, condensed, rejected, overWindow int }
	perWorker := make([]tally, len(sessions))
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			modes := []string{"auto", "full", "selective", "auto"}
			for pass := 0; pass == 0 || ctx.Err() == nil; pass++ {
				// The first pass always runs to its end, so a short soak
				// still has something to check.
				rctx := ctx
				if pass == 0 {
					rctx = context.Background()
				}
				// All workers share the proxy (one stack per worker would
				// hide sharing problems); only the bookkeeping is theirs.
				res, err := replay.Run(rctx, s, st.Fake, st.Counter, replay.Options{
					ProxyURL: st.Proxy.URL, Model: "gpt-4o", Mode: modes[i%len(modes)], APIKey: "sk-soak", Window: soakWindow, Every: 3,
					Client: client,
				})
				if err != nil {
					if rctx.Err() == nil {
						t.Errorf("replay: %v", err)
					}
					return
				}
				condensed := 0
				for _, r := range res.Requests {
					if r.Applied != "" && r.Applied != "none" {
						condensed++
					}
				}
				mu.Lock()
				w := &perWorker[i]
				w.passes++
				w.requests += len(res.Requests)
				w.rejected += res.Rejected
				if condensed > 0 {
					w.condensed++
				}
				if res.MaxForwarded > soakWindow {
					w.overWindow++
				}
				mu.Unlock()
			}
		}()
	}
	interval := min(30*time.Second, max(d/4, time.Second))
	tick := time.NewTicker(interval)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
			s := measure(time.Since(start).Round(time.Second))
			samples = append(samples, s)
			t.Logf("%v: heap in use %.1f MiB, %d goroutines", s.at, float64(s.heap)/(1<<20), s.goroutines)
		}
	}
	tick.Stop()
	wg.Wait()

	for i, w := range perWorker {
		t.Logf("worker %d: %d passes, %d requests", i, w.passes, w.requests)
		switch {
		case w.passes == 0 || w.requests == 0:
			t.Errorf("worker %d completed no pass", i)
		case w.condensed != w.passes:
			t.Errorf("worker %d: %d of %d passes condensed nothing", i, w.passes-w.condensed, w.passes)
		}
		if w.rejected > 0 {
			t.Errorf("worker %d: %d requests rejected", i, w.rejected)
		}
		if w.overWindow > 0 {
			t.Errorf("worker %d: %d passes forwarded a request over the window", i, w.overWindow)
		}
	}

	// Closed, the proxy leaves nothing behind: its goroutines end and
	// its memory (caches, records) is released.
	st.Close()
	client.CloseIdleConnections()
	st = nil
	after := measure(time.Since(start))
	for deadline := time.Now().Add(10 * time.Second); after.goroutines > before.goroutines+5 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		after = measure(time.Since(start))
	}
	t.Logf("before: heap in use %.1f MiB, %d goroutines; closed: %.1f MiB, %d goroutines",
		float64(before.heap)/(1<<20), before.goroutines, float64(after.heap)/(1<<20), after.goroutines)
	if after.goroutines > before.goroutines+5 {
		t.Errorf("%d goroutines before the proxy started, %d after it closed", before.goroutines, after.goroutines)
	}
	// The token encodings' tables are loaded once per process on first
	// use, hence the allowance.
	if float64(after.heap) > 1.5*float64(before.heap)+96<<20 {
		t.Errorf("heap in use %.1f MiB before the proxy started, %.1f MiB after it closed", float64(before.heap)/(1<<20), float64(after.heap)/(1<<20))
	}

	var late []sample
	for _, s := range samples {
		if s.at >= 2*time.Minute {
			late = append(late, s)
		}
	}
	if len(late) < 2 {
		return
	}
	first, maxHeap, maxG := late[0], uint64(0), 0
	for _, s := range late {
		maxHeap = max(maxHeap, s.heap)
		maxG = max(maxG, s.goroutines)
	}
	if float64(maxHeap) > 1.25*float64(first.heap)+16<<20 {
		t.Errorf("heap grew from %.1f MiB at %v to %.1f MiB", float64(first.heap)/(1<<20), first.at, float64(maxHeap)/(1<<20))
	}
	if maxG > first.goroutines+20 {
		t.Errorf("goroutines grew from %d to %d", first.goroutines, maxG)
	}
}
