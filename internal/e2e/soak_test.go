package e2e_test

import (
	"context"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/internal/replay"
)

// TestSoak replays several sessions in parallel, over and over, through one
// proxy with condensing on, for CONDENSE_SOAK (a duration, e.g. 10m; the
// test is skipped without it), sampling the heap and the goroutines every
// 30 s. From minute 2 on both must stay flat. It stops by itself.
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("CONDENSE_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("set CONDENSE_SOAK=10m to run the soak test")
	}
	st := harness.New(harness.Options{Window: 32000})
	defer st.Close()
	var sessions []*corpus.Session
	for seed := int64(60); seed < 64; seed++ {
		s, _ := corpus.Synthetic(seed, 300_000)
		sessions = append(sessions, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	type sample struct {
		at         time.Duration
		heap       uint64
		goroutines int
	}
	var samples []sample
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	requests, rejected := 0, 0
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			modes := []string{"auto", "full", "selective", "auto"}
			for ctx.Err() == nil {
				// Each replay needs its own fake record: one stack per
				// worker would hide sharing problems, so all share the
				// proxy and only the bookkeeping is per worker.
				res, err := replay.Run(ctx, s, st.Fake, st.Counter, replay.Options{
					ProxyURL: st.Proxy.URL, Model: "gpt-4o", Mode: modes[i%len(modes)], APIKey: "sk-soak", Window: 32000, Every: 3,
				})
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("replay: %v", err)
					}
					return
				}
				mu.Lock()
				requests += len(res.Requests)
				rejected += res.Rejected
				mu.Unlock()
			}
		}()
	}
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			s := sample{time.Since(start).Round(time.Second), ms.HeapInuse, runtime.NumGoroutine()}
			samples = append(samples, s)
			t.Logf("%v: heap in use %.1f MiB, %d goroutines", s.at, float64(s.heap)/(1<<20), s.goroutines)
		}
	}
	wg.Wait()
	t.Logf("%d requests, %d rejected", requests, rejected)
	if rejected > 0 {
		t.Errorf("%d requests rejected", rejected)
	}
	var after []sample
	for _, s := range samples {
		if s.at >= 2*time.Minute {
			after = append(after, s)
		}
	}
	if len(after) < 2 {
		return
	}
	first, maxHeap, maxG := after[0], uint64(0), 0
	for _, s := range after {
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
