package condense

import (
	"context"
	"testing"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// A model's MinCachedPrefix decides whether a shared prefix is billed as
// a cache read: below it the provider caches nothing, so all is written.
func TestMinCachedPrefixPerModel(t *testing.T) {
	msgs := session(2, 40)
	bill := func(minPrefix int) Report {
		t.Helper()
		models := ModelsFunc(func(string) ModelLimits {
			return ModelLimits{Window: 128000, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1, MinCachedPrefix: minPrefix}
		})
		e := New(Deps{Counter: counter, Models: models, Cache: cache.NewMemory(64 << 20)}, Options{Summarizer: "extractive"})
		if _, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: body(t, msgs[:20]), Scope: "s"}); err != nil {
			t.Fatal(err)
		}
		res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: body(t, msgs[:30]), Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		return res.Report
	}
	def := bill(0)
	if def.PrefixReused < 1024 || def.CacheRead != def.PrefixReused {
		t.Fatalf("default (1024): reused %d, read %d", def.PrefixReused, def.CacheRead)
	}
	if same := bill(1024); same.CacheRead != def.CacheRead || same.Bill != def.Bill {
		t.Errorf("1024 and 0 differ: %d/%g vs %d/%g", same.CacheRead, same.Bill, def.CacheRead, def.Bill)
	}
	big := bill(def.PrefixReused + 1)
	if big.CacheRead != 0 || big.CacheWrite != big.TokensAfter || !(big.Bill > def.Bill) {
		t.Errorf("prefix %d below the model's minimum %d: read %d write %d bill %g (default's %g)",
			big.PrefixReused, def.PrefixReused+1, big.CacheRead, big.CacheWrite, big.Bill, def.Bill)
	}
}
