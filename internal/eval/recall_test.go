package eval

import (
	"context"
	"encoding/json"
	"github.com/condense-proxy/condense-proxy/config"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/internal/replay"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// TestFactsByKindAndRecallProbes: a generated session condensed by the
// sliding window (truncate: a bare marker) at a small window loses
// edited paths; each row splits its facts by kind, and the probes of the facts
// condensed away find the steps holding them in the conversation's
// memory, which the proxy fed without using it.
func TestFactsByKindAndRecallProbes(t *testing.T) {
	rep, err := Run(context.Background(), Config{
		Sources: []Source{{Spec: "synthetic:5:100000", Window: 16000}},
		Modes:   []Mode{{Name: "off", Header: "off", Summarizer: "extractive"}, {Name: "truncate", Header: "truncate", Summarizer: "extractive"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 2 {
		t.Fatalf("%d rows", len(rep.Rows))
	}
	off, sel := rep.Rows[0], rep.Rows[1]
	if off.FactsSeen != 0 || off.RecallProbes != 0 || len(off.FactsByKind) != 0 {
		t.Errorf("mode off: facts %d, probes %d, by kind %v: nothing is condensed there", off.FactsSeen, off.RecallProbes, off.FactsByKind)
	}
	seen, kept, probes, recalled := 0, 0, 0, 0
	for _, c := range sel.FactsByKind {
		seen += c.Seen
		kept += c.Kept
		probes += c.Probes
		recalled += c.Recalled
		if c.Kept > c.Seen || c.Recalled > c.Probes || c.Probes > c.Seen-c.Kept {
			t.Errorf("inconsistent kind counts %+v", c)
		}
	}
	if seen != sel.FactsSeen || kept != sel.FactsKept || probes != sel.RecallProbes || recalled != sel.RecallTop3 {
		t.Errorf("kinds sum to %d/%d/%d/%d, row says %d/%d/%d/%d", seen, kept, probes, recalled, sel.FactsSeen, sel.FactsKept, sel.RecallProbes, sel.RecallTop3)
	}
	for _, k := range []string{"task", "error", "failing-test", "edited-path", "decision"} {
		if sel.FactsByKind[k].Seen == 0 {
			t.Errorf("kind %s: no fact seen (%v)", k, sel.FactsByKind)
		}
	}
	path := sel.FactsByKind["edited-path"]
	if path.Kept == path.Seen || path.Probes == 0 {
		t.Fatalf("no edited path condensed away and probed: %+v", path)
	}
	if path.Recalled == 0 {
		t.Errorf("recall found none of the %d edited paths condensed away", path.Probes)
	}
	var back struct {
		Rows []struct {
			ByKind map[string]replay.FactCount `json:"facts_by_kind"`
			Probes int                         `json:"recall_probes"`
			Top3   int                         `json:"recall_top3"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(rep.JSON(), &back); err != nil {
		t.Fatal(err)
	}
	if got := back.Rows[1]; got.ByKind["edited-path"] != path || got.Probes != sel.RecallProbes || got.Top3 != sel.RecallTop3 {
		t.Errorf("JSON row %+v", got)
	}
	md := rep.Markdown("eval", "go test")
	for _, want := range []string{"## What the agent still knows", "| " + sel.Session + " | 16k | truncate | " + sel.FactsByKindText() + " | " + sel.RecallText() + " |",
		"edited-path ", "top-3 "} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestFedMemoryChangesNothingForwarded: the memory the probes search is
// fed by the engine and never used for what is forwarded: a replay with
// it forwards what a replay without it does, request by request.
func TestFedMemoryChangesNothingForwarded(t *testing.T) {
	s, facts := corpus.Synthetic(5, 100000)
	counter := tokenizer.New(tokenizer.Options{})
	run := func(feed bool) *replay.Result {
		// The recall tool off (it is on by default, and reads the
		// memory): only feeding the memory differs between the runs.
		st := harness.New(harness.Options{Window: 16000, Summarizer: "extractive", Counter: counter, FeedMemory: feed,
			Configure: func(c *config.Config) { c.Memory.RecallTool = false }})
		defer st.Close()
		if (st.App.Memory != nil) != feed {
			t.Fatalf("FeedMemory %v, memory built: %v", feed, st.App.Memory != nil)
		}
		res, err := replay.Run(context.Background(), s, st.Fake, counter, replay.Options{ProxyURL: st.Proxy.URL, Model: "gpt-4o",
			Mode: "auto", APIKey: "sk-eval", Window: 16000, Facts: facts, Drain: st.Drain, DrainEach: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	without, with := run(false), run(true)
	if len(without.Requests) != len(with.Requests) {
		t.Fatalf("%d requests, %d with memory", len(without.Requests), len(with.Requests))
	}
	condensed := 0
	for i, a := range without.Requests {
		b := with.Requests[i]
		if a.Applied != b.Applied || a.FwdCounted != b.FwdCounted || a.PrefixKept != b.PrefixKept || a.CachedTokens != b.CachedTokens || a.Degraded != b.Degraded {
			t.Errorf("request %d: without memory %+v, with %+v", i, a, b)
		}
		if a.Applied != "" && a.Applied != "none" {
			condensed++
		}
	}
	if condensed == 0 || without.FactsKept != with.FactsKept {
		t.Errorf("condensed %d, facts kept %d and %d", condensed, without.FactsKept, with.FactsKept)
	}
}
