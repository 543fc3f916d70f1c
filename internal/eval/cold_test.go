package eval

import (
	"context"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/replay"
)

// TestIdleBill: a request after a gap longer than the cache's lifetime
// writes its whole prompt; one after a shorter gap reads its prefix.
func TestIdleBill(t *testing.T) {
	p := Pricings[0]
	res := &replay.Result{Requests: []replay.Request{{FwdCounted: 10000}, {FwdCounted: 12000, CachedTokens: 10000}, {FwdCounted: 13000, CachedTokens: 12000}}}
	bill, cold := idleBill(res, []time.Duration{0, 4 * time.Minute, 6 * time.Minute}, p)
	want := p.Fresh*10000 + p.requestBill(12000, 10000) + p.Fresh*13000
	if cold != 1 || bill != want {
		t.Errorf("bill %.0f with %d gaps past the lifetime, want %.0f and 1", bill, cold, want)
	}
}

// TestIdleGaps: the generated sessions' user follow-ups carry gaps, drawn
// the same on every call; the first request none.
func TestIdleGaps(t *testing.T) {
	s, _ := corpus.Synthetic(7, 250000)
	gaps := idleGaps(s, 1)
	returns := userReturns(s, 1)
	n := 0
	for i, g := range gaps {
		if (g > 0) != (returns[i] && i > 0) {
			t.Fatalf("request %d: gap %v, user returned %v", i, g, returns[i])
		}
		if g > 0 {
			n++
		}
	}
	if n == 0 || gaps[0] != 0 {
		t.Fatalf("%d gaps, the first %v", n, gaps[0])
	}
	again := idleGaps(s, 1)
	for i := range gaps {
		if gaps[i] != again[i] {
			t.Fatalf("request %d: gap %v, then %v", i, gaps[i], again[i])
		}
	}
}

// TestColdTurnArm: a generated session of about five windows replayed in
// auto over its idle gaps — its conversation cut when gaps pass the
// cache's lifetime —: its engine condenses cold turns, and its bill with
// them is below its bill with cold turns off, over the same gaps.
func TestColdTurnArm(t *testing.T) {
	rep, err := Run(context.Background(), Config{
		Sources: []Source{{Spec: "synthetic:7:250000", Window: 16000}}, Modes: []Mode{Modes[0], Modes[4]}, ColdModes: []string{Modes[4].Name},
		SummaryTokens: 1000, FaithfulSummaries: true, Log: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	row := rep.Rows[1]
	t.Logf("%s %s: %d idle gaps, %d past the lifetime, %d cold turns; bill %.3f without, %.3f with; facts %d/%d without, %d/%d with",
		row.Session, row.Mode, row.ColdIdleGaps, row.ColdGaps, row.ColdTurns, row.BillIdle, row.BillCold,
		row.IdleFactsKept, row.IdleFactsSeen, row.ColdFactsKept, row.ColdFactsSeen)
	if row.ColdGaps == 0 || row.ColdTurns == 0 || row.BillIdle <= 0 || row.BillCold >= row.BillIdle {
		t.Fatalf("%d gaps past the lifetime, %d cold turns, bill %.3f without cold turns and %.3f with", row.ColdGaps, row.ColdTurns, row.BillIdle, row.BillCold)
	}
	if off := rep.Rows[0]; off.BillIdle != 1 || off.BillCold != 1 {
		t.Errorf("mode off: bill %.3f and %.3f over the gaps, want 1", off.BillIdle, off.BillCold)
	}
}
