package condense

import (
	"context"
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
	res, err := e.Condense(ctx, Request{Body: body, Scope: "s"})
	if err != nil || res.Report.Applied != AppliedFull {
		b.Fatalf("warm-up: %v %+v", err, res.Report)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res, _ = e.Condense(ctx, Request{Body: body, Scope: "s"})
		total += time.Since(t0)
		if res.Report.Cache != "hit" {
			b.Fatalf("cache %q", res.Report.Cache)
		}
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/condense")
	b.ReportMetric(float64(res.Report.TokensBefore-res.Report.TokensAfter), "tokens-saved/op")
}
