package condense

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
)

// BenchmarkCondenseCached condenses a ~1 MB request whose summaries are
// all cached (the steady state of a long session): the time the proxy adds
// for condensing.
func BenchmarkCondenseCached(b *testing.B) {
	sess, _ := corpus.Synthetic(31, 1_000_000)
	body, _ := sess.Request("gpt-4o", 0)
	e := newEngine(128000, nil, Options{Summarizer: "extractive"})
	ctx := context.Background()
	res, err := e.Condense(ctx, Request{Codec: chatCodec, Body: body, Scope: "s"})
	if err != nil || res.Report.Applied != AppliedFull {
		b.Fatalf("warm-up: %v %+v", err, res.Report)
	}
	timeCondense(b, e, Request{Codec: chatCodec, Body: body, Scope: "s"}, func(res Result) {
		if res.Report.Cache != "hit" {
			b.Fatalf("cache %q", res.Report.Cache)
		}
	})
}

// timeCondense condenses req b.N times, each result checked by check
// (nil: none), and reports the milliseconds a condensation takes and the
// tokens the last one saved.
func timeCondense(b *testing.B, e *Engine, req Request, check func(Result)) {
	ctx := context.Background()
	b.SetBytes(int64(len(req.Body)))
	b.ReportAllocs()
	b.ResetTimer()
	var total time.Duration
	var res Result
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res, _ = e.Condense(ctx, req)
		total += time.Since(t0)
		if check != nil {
			check(res)
		}
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/condense")
	b.ReportMetric(float64(res.Report.TokensBefore-res.Report.TokensAfter), "tokens-saved/op")
}

// BenchmarkCondenseSelective condenses a ~1 MB request selectively, its
// digests already cached (the steady state: each turn re-digests the same
// old outputs).
func BenchmarkCondenseSelective(b *testing.B) {
	sess, _ := corpus.Synthetic(32, 1_000_000)
	body, _ := sess.Request("gpt-4o", 0)
	e := newEngine(262144, nil, Options{SelectiveEnabled: true})
	ctx := context.Background()
	res, err := e.Condense(ctx, Request{Codec: chatCodec, Body: body, Scope: "s", Mode: ModeSelective})
	if err != nil || res.Report.Applied != AppliedSelective {
		b.Fatalf("warm-up: %v %+v", err, res.Report)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	var times []time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res, _ = e.Condense(ctx, Request{Codec: chatCodec, Body: body, Scope: "s", Mode: ModeSelective})
		times = append(times, time.Since(t0))
	}
	b.StopTimer()
	// What pass-through does anyway: count the same body (warm cache).
	var base []time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		chatCodec.Scan(body, func(string) string { return "o200k_base" })
		base = append(base, time.Since(t0))
	}
	p50 := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	total, count := p50(times), p50(base)
	b.ReportMetric(float64(total.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64((total-count).Microseconds())/1000, "added-p50-ms")
	b.ReportMetric(float64(res.Report.TokensBefore-res.Report.TokensAfter), "tokens-saved/op")
}

// BenchmarkCondenseTwoStage condenses a ~1 MB request by digests and a
// window over them (selective's digests not enough for a 64k window),
// its digests cached: the path whose digested copy is planned on.
func BenchmarkCondenseTwoStage(b *testing.B) {
	sess, _ := corpus.Synthetic(32, 1_000_000)
	body, _ := sess.Request("gpt-4o", 0)
	e := newEngine(64000, nil, Options{Summarizer: "extractive", SelectiveEnabled: true})
	ctx := context.Background()
	req := Request{Codec: chatCodec, Body: body, Scope: "s", Mode: ModeSelective}
	res, err := e.Condense(ctx, req)
	if err != nil || res.Report.Applied != AppliedTruncate || !slices.Contains(res.Report.Path, PathDigests) {
		b.Fatalf("warm-up: %v: applied %s, %v", err, res.Report.Applied, res.Report.Path)
	}
	timeCondense(b, e, req, nil)
}
