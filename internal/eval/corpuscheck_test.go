package eval

import (
	"strings"
	"testing"
)

// TestCheckCorpusBill: auto's bill is held to the modes that keep at least
// MinCorpusFacts of the facts, not to one that is cheaper by forgetting;
// auto itself must keep that much; no mode bills above mode off.
func TestCheckCorpusBill(t *testing.T) {
	row := func(format, mode string, bill float64, kept int) Row {
		return Row{Session: "s.jsonl", Format: format, Mode: mode, BillAnthropic: bill, BillGemini: bill, FactsSeen: 100, FactsKept: kept}
	}
	for _, tc := range []struct {
		name string
		rows []Row
		want []string // substrings of the problems, in order; none: no problem
	}{
		{"cheaper by forgetting", []Row{row("chat", "selective", 0.58, 40), row("chat", "full-llm", 0.70, 70), row("chat", "full-extractive", 0.61, 100), row("chat", "auto", 0.62, 100)}, nil},
		{"dearer than a mode that keeps as much", []Row{row("chat", "selective", 0.58, 90), row("chat", "full-extractive", 0.61, 100), row("chat", "auto", 0.62, 100)},
			[]string{"auto's bill 0.620 > selective's 0.580"}},
		{"auto forgets", []Row{row("messages", "selective", 0.58, 40), row("messages", "auto", 0.50, 70)}, []string{"auto keeps 70% of the facts, under 80%"}},
		{"above off", []Row{row("gemini", "full-llm", 1.01, 90), row("gemini", "auto", 0.9, 100)}, []string{"full-llm: bill 1.010 > 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := (&Report{Rows: tc.rows}).CheckCorpusBill(0.02)
			if len(got) != len(tc.want) {
				t.Fatalf("problems %q, want %d like %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %q lacks %q", got[i], w)
				}
			}
		})
	}
}
