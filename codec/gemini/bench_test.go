package gemini

import (
	"context"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// BenchmarkCondenseCached condenses a ~1 MB Gemini CLI-like request whose
// summaries are all cached (the steady state of a long session): the
// time the proxy adds for full condensing. As condense's benchmark of the
// same name, for the Gemini codec.
func BenchmarkCondenseCached(b *testing.B) {
	var raw []byte
	for turns := 50; len(raw) < 1_000_000; turns += 10 {
		raw = body(cliSession(31, turns))
	}
	e := condense.New(condense.Deps{
		Counter: sharedCounter,
		Models: condense.ModelsFunc(func(string) condense.ModelLimits {
			return condense.ModelLimits{Window: 128000, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
		}),
		Cache: cache.NewMemory(256 << 20),
	}, condense.Options{Summarizer: "extractive", SelectiveEnabled: true})
	ctx := context.Background()
	req := condense.Request{Codec: New(sharedCounter).WithModel("gemini-2.5-pro"), Body: raw, Scope: "s", Mode: condense.ModeFull}
	res, err := e.Condense(ctx, req)
	if err != nil || res.Report.Applied != condense.AppliedFull {
		b.Fatalf("warm-up: %v %+v", err, res.Report)
	}
	b.SetBytes(int64(len(raw)))
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
