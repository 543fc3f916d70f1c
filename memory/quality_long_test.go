package memory

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// TestSearchQualityByLength is TestSearchQuality in auto mode at 1×, 2.5×
// and 10× a 32k window (about 3.2 characters a token), two sessions each:
// the step holding a condensed-away planted fact must be in BM25's top 3
// for at least 90% of the probes at every length. It runs for minutes:
// CONDENSE_LONG=1 go test -run TestSearchQualityByLength -v ./memory/
func TestSearchQualityByLength(t *testing.T) {
	if os.Getenv("CONDENSE_LONG") == "" {
		t.Skip("CONDENSE_LONG unset: the long sessions run for minutes")
	}
	ctx := context.Background()
	counter := tokenizer.New(tokenizer.Options{})
	for _, chars := range []int{102_400, 256_000, 1_024_000} { // 1x, 2.5x, 10x of 32k at 3.2 chars a token
		probes, hits := 0, 0
		for seed := int64(1); seed <= 2; seed++ {
			mem := New(cache.NewMemory(256<<20), Options{})
			e := condense.New(condense.Deps{Counter: counter, Cache: cache.NewMemory(256 << 20), Memory: mem,
				Models: condense.ModelsFunc(func(string) condense.ModelLimits {
					return condense.ModelLimits{Window: 32000, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
				})}, condense.Options{Summarizer: "extractive", SelectiveEnabled: true})
			s, facts := corpus.Synthetic(seed, chars)
			conv := ""
			for _, n := range s.TurnEnds() {
				body, _ := s.Request("gpt-4o", n)
				res, err := e.Condense(ctx, condense.Request{Codec: chat.New(counter), Body: body, Mode: condense.ModeAuto, Scope: "scope"})
				if err != nil {
					t.Fatal(err)
				}
				conv = res.Report.Conversation
			}
			items := mem.Items(ctx, "scope", conv)
			for _, f := range facts {
				if f.Kind == "task" || !heldByStep(items, f.Text) {
					continue
				}
				probes++
				for _, h := range mem.Search(ctx, "scope", conv, probe(f), 3, nil) {
					if h.Item.Kind == condense.MemoryStep && strings.Contains(h.Item.Text, f.Text) {
						hits++
						break
					}
				}
			}
			e.Close(ctx)
		}
		t.Logf("%d characters at a 32k window (auto): %d of %d probes found their step in the top 3 (%.1f%%)", chars, hits, probes, 100*float64(hits)/float64(max(probes, 1)))
		if probes > 0 && float64(hits) < 0.9*float64(probes) {
			t.Errorf("%d characters: top-3 recall %d of %d, want >= 90%%", chars, hits, probes)
		}
	}
}
