package memory

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// probe turns a planted fact into the question a model would ask about
// it, in other words than the fact's own where it can: the model knows
// roughly what it is looking for, not the line.
func probe(f corpus.Fact) string {
	switch f.Kind {
	case "failing-test":
		return "which assertion did " + f.Text + " fail with"
	case "error":
		// "duration_test.go:123: got -5s, want 30s (turn 17)" → the file
		// and the turn, not the numbers.
		turn := regexp.MustCompile(`turn (\d+)`).FindStringSubmatch(f.Text)
		return "the duration_test.go failure of turn " + turn[1] + ", got vs want"
	case "decision":
		return "why did we change the code in " + f.Text
	case "edited-path":
		return "what edit was made to " + f.Text
	}
	return f.Text
}

// TestSearchQuality replays generated sessions with planted facts through
// the engine (every turn, so cuts move as they do in use) with the memory
// attached, then asks BM25 about every planted fact the conversation
// condensed away: a step holding the fact must be among the top 3 for at
// least 90% of the probes.
func TestSearchQuality(t *testing.T) {
	ctx := context.Background()
	counter := tokenizer.New(tokenizer.Options{})
	for _, mode := range []string{condense.ModeAuto, condense.ModeFull, condense.ModeTruncate} {
		t.Run(mode, func(t *testing.T) {
			probes, hits := 0, 0
			for seed := int64(1); seed <= 3; seed++ {
				mem := New(cache.NewMemory(256<<20), Options{})
				e := condense.New(condense.Deps{Counter: counter, Cache: cache.NewMemory(256 << 20), Memory: mem,
					Models: condense.ModelsFunc(func(string) condense.ModelLimits {
						return condense.ModelLimits{Window: 32000, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
					})}, condense.Options{Summarizer: "extractive", SelectiveEnabled: true})
				s, facts := corpus.Synthetic(seed, 400_000)
				conv := ""
				for _, n := range s.TurnEnds() {
					body, err := s.Request("gpt-4o", n)
					if err != nil {
						t.Fatal(err)
					}
					res, err := e.Condense(ctx, condense.Request{Codec: chat.New(counter), Body: body, Mode: mode, Scope: "scope"})
					if err != nil {
						t.Fatal(err)
					}
					conv = res.Report.Conversation
				}
				items := mem.Items(ctx, "scope", conv)
				if len(items) == 0 {
					t.Fatalf("seed %d: nothing remembered", seed)
				}
				for _, f := range facts {
					if f.Kind == "task" || !heldByStep(items, f.Text) {
						continue
					}
					probes++
					top := mem.Search(ctx, "scope", conv, probe(f), 3, nil)
					found := false
					for _, h := range top {
						if h.Item.Kind == condense.MemoryStep && strings.Contains(h.Item.Text, f.Text) {
							found = true
						}
					}
					if found {
						hits++
					} else if testing.Verbose() {
						t.Logf("seed %d: %s %q not in the top 3 of %q", seed, f.Kind, f.Text, probe(f))
					}
				}
				e.Close(ctx)
			}
			if probes < 30 {
				t.Fatalf("only %d facts were condensed away; the sessions are too short to judge", probes)
			}
			share := float64(hits) / float64(probes)
			t.Logf("%s: %d of %d probes found their step in the top 3 (%.0f%%)", mode, hits, probes, 100*share)
			if share < 0.9 {
				t.Errorf("%s: top-3 recall %.2f, want >= 0.90", mode, share)
			}
		})
	}
}

func heldByStep(items []condense.MemoryItem, text string) bool {
	for _, it := range items {
		if it.Kind == condense.MemoryStep && strings.Contains(it.Text, text) {
			return true
		}
	}
	return false
}

var noteOf = regexp.MustCompile(`<relevant-earlier-context>[\s\S]*?</relevant-earlier-context>`)

// TestRelevantContext replays generated sessions with the relevant-context
// block on and off: the block appears once a conversation is condensed,
// never changes while the cut that anchors it stays (the same marker or
// summaries, the same block), and the forwarded requests hold more of the
// planted facts they were sent with it than without — 5 points more where
// auto alone loses more than that; elsewhere (auto's stand-ins keep the
// facts) at least what auto keeps or 90%, the smaller.
func TestRelevantContext(t *testing.T) {
	ctx := context.Background()
	counter := tokenizer.New(tokenizer.Options{})
	kept, total := map[bool]int{}, map[bool]int{}
	for _, on := range []bool{false, true} {
		for seed := int64(1); seed <= 2; seed++ {
			mem := New(cache.NewMemory(256<<20), Options{Count: func(s string) int { return counter.Text(tokenizer.O200kBase, s) }})
			opts := condense.Options{Summarizer: "extractive", SelectiveEnabled: true}
			if on {
				opts.RelevantTokens = 1500
			}
			e := condense.New(condense.Deps{Counter: counter, Cache: cache.NewMemory(256 << 20), Memory: mem,
				Models: condense.ModelsFunc(func(string) condense.ModelLimits {
					return condense.ModelLimits{Window: 32000, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
				})}, opts)
			s, facts := corpus.Synthetic(seed, 400_000)
			blocks := map[string]string{} // anchor (the note without its block) -> block
			seen := 0
			for _, n := range s.TurnEnds() {
				body, _ := s.Request("gpt-4o", n)
				res, err := e.Condense(ctx, condense.Request{Codec: chat.New(counter), Body: body, Mode: condense.ModeAuto, Scope: "scope"})
				if err != nil {
					t.Fatal(err)
				}
				out := string(res.Body)
				for _, f := range facts {
					if f.Kind != "task" && res.Report.Applied != condense.AppliedNone && strings.Contains(string(body), f.Text) {
						total[on]++
						if strings.Contains(out, f.Text) {
							kept[on]++
						}
					}
				}
				gjson.GetBytes(res.Body, "messages").ForEach(func(_, m gjson.Result) bool {
					text := m.Get("content").String()
					block := noteOf.FindString(text)
					if !on && block != "" {
						t.Fatal("a block with the option off")
					}
					if block == "" {
						return true
					}
					seen++
					anchor := strings.Replace(text, block, "", 1)
					if old, ok := blocks[anchor]; ok && old != block {
						t.Fatalf("seed %d request %d: the block under one note changed:\n%s\n---\n%s", seed, n, clip(old, 400), clip(block, 400))
					}
					blocks[anchor] = block
					return true
				})
			}
			if on && seen == 0 {
				t.Errorf("seed %d: no relevant-context block in any condensed request", seed)
			}
			e.Close(ctx)
		}
	}
	// The block brings back what condensed-away steps established
	// (failing tests, errors, edits, decisions), though its room is taken
	// from the verbatim tail.
	with, without := float64(kept[true])/float64(total[true]), float64(kept[false])/float64(total[false])
	t.Logf("planted facts sent and forwarded in condensed requests: %.1f%% without the block (%d of %d), %.1f%% with it (%d of %d)",
		100*without, kept[false], total[false], 100*with, kept[true], total[true])
	least := without + 0.05
	if 1-without < 0.05 {
		least = min(without, 0.90)
	}
	if with < least {
		t.Errorf("the block kept %.1f%% of the planted facts, without it %.1f%%: under %.1f%%", 100*with, 100*without, 100*least)
	}
}
