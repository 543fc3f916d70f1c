package eval

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/testenv"
)

// TestGeminiReplay replays sessions converted to Gemini form (as Gemini
// CLI sends them) through the proxy's Gemini route against the strict
// Gemini fake, in every mode, with condense-eval's settings (a model
// priced Anthropic-style, which the Gemini form trades for the registry's
// Gemini family; summaries of a model's size): every request accepted,
// head and last content verbatim, nothing condensed over the window,
// requests condensed, facts counted and the Gemini-style bill measured.
// The corpus sessions are replayed when the shared corpus is present (it
// must be, in CI).
func TestGeminiReplay(t *testing.T) {
	if testenv.Unraced(t) {
		return // deterministic replays: their numbers, without the race detector
	}
	sources := []Source{{Spec: "synthetic:7:250000", Window: 32000, Format: "gemini"}}
	dir := filepath.Join("..", "..", "..", "shared", "corpus", "raw")
	if _, err := os.Stat(dir); err == nil {
		for _, f := range []string{
			"claude-code/d7d349f9-c243-46e2-9a32-4a0eddfc634b.jsonl",
			"mini-swe-agent/deepseek_chat_test_1-100__django__django-14999.traj.json",
		} {
			sources = append(sources, Source{Spec: filepath.Join(dir, f), Window: 16000, Format: "gemini"})
		}
	} else if testenv.InCI() {
		t.Fatalf("in CI and the shared corpus is absent: %v", err)
	} else {
		t.Log("shared corpus absent; synthetic session only")
	}
	rep, err := Run(context.Background(), Config{Sources: sources, Log: t.Logf, SummaryTokens: 1000, FaithfulSummaries: true,
		Model: &config.ModelConfig{Encoding: "o200k_base", SafetyFactor: 1, CacheRead: 0.1, CacheWrite: 1.25, CacheTTL: 5 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != len(sources)*len(Modes) {
		t.Fatalf("%d rows for %d sources × %d modes", len(rep.Rows), len(sources), len(Modes))
	}
	// The checks of every replay; the share of facts selective
	// condensing keeps is judged over the whole corpus (condense-eval).
	for _, p := range rep.Check(0) {
		t.Error(p)
	}
	for _, row := range rep.Rows {
		if row.Format != "gemini" || row.Requests == 0 || row.Rejected != 0 || row.HeadLost != 0 || row.LastLost != 0 {
			t.Errorf("%s %s: format %q, %d requests, %d rejected, head lost in %d, last in %d", row.Session, row.Mode, row.Format, row.Requests, row.Rejected, row.HeadLost, row.LastLost)
		}
		if row.Mode == "off" {
			continue
		}
		if row.Condensed == 0 || row.FactsSeen == 0 || row.OverWindow != 0 {
			t.Errorf("%s %s: %d requests condensed, %d facts seen, %d over the window", row.Session, row.Mode, row.Condensed, row.FactsSeen, row.OverWindow)
		}
		if row.BillGemini <= 0 || row.Bill() != row.BillGemini {
			t.Errorf("%s %s: Gemini-style bill %.3f (bill of record %.3f)", row.Session, row.Mode, row.BillGemini, row.Bill())
		}
	}
}

// TestGeminiModelPrices: the Gemini form's model entry keeps the
// replay's window and encoding and leaves the prompt-cache prices to the
// registry's Gemini family (implicit cache: reads 0.1, writes at the
// input price, prefixes from 4096 tokens for Pro), which an entry priced
// Anthropic-style would override.
func TestGeminiModelPrices(t *testing.T) {
	m := &config.ModelConfig{ContextWindow: 32000, Encoding: "o200k_base", SafetyFactor: 1, CacheRead: 0.1, CacheWrite: 1.25, CacheTTL: 5 * time.Minute, MinCachedPrefix: 1024}
	g := geminiModel(m)
	g.Match = "*"
	c := config.Defaults()
	c.Models = []config.ModelConfig{*g}
	mi := config.NewRegistry(&c, nil).Lookup(corpus.GeminiModel)
	if mi.ContextWindow != 32000 || mi.CacheRead != 0.1 || mi.CacheWrite != 1 || mi.MinCachedPrefix != 4096 || mi.InputPricePerMTok != 1.25 {
		t.Errorf("%s: window %d, cache %g/%g, min prefix %d, $%g", corpus.GeminiModel, mi.ContextWindow, mi.CacheRead, mi.CacheWrite, mi.MinCachedPrefix, mi.InputPricePerMTok)
	}
	if m.CacheWrite != 1.25 || geminiModel(nil) != nil {
		t.Error("geminiModel changed its argument, or made an entry of none")
	}
}
