package messages

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
)

// sessionOfSize returns a Claude Code-like body (thinking on) of at least
// size bytes.
func sessionOfSize(seed int64, size int) []byte {
	for turns := 50; ; turns += 10 {
		if b := body(claudeSession(seed, turns, true), "claude-sonnet-4-5", true); len(b) >= size {
			return b
		}
	}
}

func p50(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// BenchmarkCondenseCached condenses a ~1 MB Claude Code-like Messages
// request whose summaries are all cached (the steady state of a long
// session): the time the proxy adds for full condensing. As condense's
// benchmark of the same name, for the Messages codec.
func BenchmarkCondenseCached(b *testing.B) {
	body := sessionOfSize(31, 1_000_000)
	e, c := newEngine(128000, condense.Options{SelectiveEnabled: true})
	ctx := context.Background()
	req := condense.Request{Body: body, Codec: c, Scope: "s", Mode: condense.ModeFull}
	res, err := e.Condense(ctx, req)
	if err != nil || res.Report.Applied != condense.AppliedFull {
		b.Fatalf("warm-up: %v %+v", err, res.Report)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res, _ = e.Condense(ctx, req)
		total += time.Since(t0)
		if res.Report.Cache != "hit" {
			b.Fatalf("cache %q", res.Report.Cache)
		}
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/condense")
	b.ReportMetric(float64(res.Report.TokensBefore-res.Report.TokensAfter), "tokens-saved/op")
}

// BenchmarkCondenseSelective condenses a ~1 MB Messages request
// selectively (a window where digests alone suffice), digests cached;
// "added" is the median over the median of scanning the same body, which
// pass-through does anyway.
func BenchmarkCondenseSelective(b *testing.B) {
	body := sessionOfSize(32, 1_000_000)
	e, c := newEngine(262144, condense.Options{SelectiveEnabled: true})
	ctx := context.Background()
	req := condense.Request{Body: body, Codec: c, Scope: "s", Mode: condense.ModeSelective}
	res, err := e.Condense(ctx, req)
	if err != nil || res.Report.Applied != condense.AppliedSelective {
		b.Fatalf("warm-up: %v %+v", err, res.Report)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	var times []time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res, _ = e.Condense(ctx, req)
		times = append(times, time.Since(t0))
	}
	b.StopTimer()
	var base []time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		c.Scan(body, o200k)
		base = append(base, time.Since(t0))
	}
	total, scan := p50(times), p50(base)
	b.ReportMetric(float64(total.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64((total-scan).Microseconds())/1000, "added-p50-ms")
	b.ReportMetric(float64(res.Report.TokensBefore-res.Report.TokensAfter), "tokens-saved/op")
}

// BenchmarkScanResent scans a ~1 MB Messages request whose messages were
// all counted before (an agent resending its history): what every request
// under the threshold costs.
func BenchmarkScanResent(b *testing.B) {
	body := sessionOfSize(31, 1_000_000)
	c := New(sharedCounter)
	enc := func(string) string { return "o200k_base" }
	if _, err := c.Scan(body, enc); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := c.Scan(body, enc)
		if err != nil || r.CacheHits != len(r.Items) {
			b.Fatalf("%v: %d of %d cached", err, r.CacheHits, len(r.Items))
		}
	}
}
