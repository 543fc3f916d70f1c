package replay

import (
	"context"
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
)

// TestFactsByKindAndProbes: facts are counted per kind in every condensed
// request; each distinct fact condensed away is probed once, a hit only
// when a step among the first RecallTop results holds it as a whole.
func TestFactsByKindAndProbes(t *testing.T) {
	facts := []corpus.Fact{
		{Kind: "task", Text: "Task: fix the sign of ParseDuration"},
		{Kind: "path", Text: "pkg/a/f3.go"},
		{Kind: "error", Text: "ValueError: bad  sign"},
		{Kind: "decision", Text: "decision 6"},
		{Kind: "error", Text: "panic: deep in the fourth result"},
		{Kind: "path", Text: "never/sent.go"},
	}
	sent := norm("Task: fix the sign of ParseDuration\nread pkg/a/f3.go\nValueError: bad sign\nI will (decision 6)\npanic: deep in the fourth result")
	fwd := norm("Task: fix the sign of ParseDuration\nValueError: bad sign\n[… condensed …]")
	answers := map[string][]string{
		"pkg/a/f3.go": {"[tool call] read(pkg/b/x.go)", "[tool result]\nnothing", "[tool call] read({\"path\":\"pkg/a/f3.go\"})"},
		// "decision 61" does not hold "decision 6".
		"decision 6": {"[assistant]\nI will change x (decision 61)."},
		// The fact is in the fourth result: not in the top 3.
		"panic: deep in the fourth result": {"a", "b", "c", "panic: deep in the fourth result"},
	}
	asked := map[string]int{}
	recall := func(_ context.Context, q string) []string {
		asked[q]++
		return answers[q]
	}
	res := &Result{}
	res.facts("selective", facts, sent, fwd, true)
	res.probe(context.Background(), recall)
	res.facts("full", facts, sent, fwd, true) // the same facts dropped again: probed once
	res.probe(context.Background(), recall)

	if res.FactsSeen != 10 || res.FactsKept != 4 {
		t.Fatalf("seen %d kept %d, want 10 and 4", res.FactsSeen, res.FactsKept)
	}
	want := map[string]FactCount{
		"task":     {Seen: 2, Kept: 2},
		"path":     {Seen: 2, Kept: 0, Probes: 1, Recalled: 1},
		"error":    {Seen: 4, Kept: 2, Probes: 1, Recalled: 0},
		"decision": {Seen: 2, Kept: 0, Probes: 1, Recalled: 0},
	}
	if len(res.FactsByKind) != len(want) {
		t.Errorf("kinds %v, want %v", res.FactsByKind, want)
	}
	for k, w := range want {
		if got := res.FactsByKind[k]; got != w {
			t.Errorf("%s: %+v, want %+v", k, got, w)
		}
	}
	if res.RecallProbes != 3 || res.RecallTop3 != 1 {
		t.Errorf("probes %d top-3 %d, want 3 and 1", res.RecallProbes, res.RecallTop3)
	}
	for q, n := range asked {
		if n != 1 {
			t.Errorf("query %q asked %d times, want once", q, n)
		}
	}
	if len(asked) != 3 {
		t.Errorf("asked %v, want the 3 facts condensed away", asked)
	}
	if len(res.Unrecalled) != 2 {
		t.Errorf("unrecalled %q, want the 2 misses", res.Unrecalled)
	}
}

// TestProbesWithoutRecall: without a recall search nothing is probed, and
// the queue does not grow.
func TestProbesWithoutRecall(t *testing.T) {
	res := &Result{}
	res.facts("full", []corpus.Fact{{Kind: "path", Text: "pkg/a/f3.go"}}, "read pkg/a/f3.go", "", true)
	res.probe(context.Background(), nil)
	if res.RecallProbes != 0 || len(res.pending) != 0 || res.FactsByKind["path"] != (FactCount{Seen: 1}) {
		t.Fatalf("%+v", res)
	}
}

func TestProbeQueryAndHolds(t *testing.T) {
	long := corpus.Fact{Kind: "error", Text: "AssertionError: one two three four five six seven eight nine ten eleven twelve thirteen"}
	if q := ProbeQuery(long); q != "AssertionError: one two three four five six seven eight nine ten eleven" {
		t.Errorf("query %q", q)
	}
	for _, c := range []struct {
		text, fact string
		want       bool
	}{
		{"edit /repo/pkg/a/f3.go now", "pkg/a/f3.go", true},
		{"edit pkg/a/f31.go", "pkg/a/f3.go", false},
		{"edit pkg/a/f31.go and pkg/a/f3.go", "pkg/a/f3.go", true},
		{"(decision 61)", "decision 6", false},
		{"(decision 6).", "decision 6", true},
		{"xdecision 6", "decision 6", false},
		{"error: bad sign!", "error: bad sign!", true},
		{"anything", "", false},
	} {
		if got := holds(c.text, c.fact); got != c.want {
			t.Errorf("holds(%q, %q) = %v", c.text, c.fact, got)
		}
	}
}

// TestKindFactsStayOutOfTheTotals: facts counted by kind only are checked
// and probed, and leave the totals as they were.
func TestKindFactsStayOutOfTheTotals(t *testing.T) {
	res := &Result{}
	res.facts("full", []corpus.Fact{{Kind: "path", Text: "a/b.go"}}, "a/b.go and Now I will fix the sign.", "a/b.go", true)
	res.facts("full", []corpus.Fact{{Kind: "decision", Text: "Now I will fix the sign."}}, "a/b.go and Now I will fix the sign.", "a/b.go", false)
	probed := 0
	res.probe(context.Background(), func(context.Context, string) []string {
		probed++
		return []string{"[assistant]\nNow I will fix the sign."}
	})
	if res.FactsSeen != 1 || res.FactsKept != 1 || res.FactsByApplied["full"] != [2]int{1, 1} || len(res.Lost) != 0 {
		t.Errorf("totals %d/%d, by applied %v, lost %q: the decision is counted in them", res.FactsSeen, res.FactsKept, res.FactsByApplied, res.Lost)
	}
	if got := res.FactsByKind["decision"]; got != (FactCount{Seen: 1, Probes: 1, Recalled: 1}) || probed != 1 || res.RecallTop3 != 1 {
		t.Errorf("decision %+v, probed %d, top-3 %d", got, probed, res.RecallTop3)
	}
}
