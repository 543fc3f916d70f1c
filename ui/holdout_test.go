package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/proxy"
	"github.com/condense-proxy/condense-proxy/view"
)

// TestDollars: each request's bill at its model's input price, summed per
// conversation and overall, worked out by hand; a model without a price
// shows "unknown price" (null) and is counted apart, never as $0.
//
//	priced conversation, $3 / MTok: bills 2,500 + 1,450 = 3,950 → $0.01185;
//	  uncondensed 2,500 + 5,200 = 7,700 → $0.0231; request 1: $0.0075
//	unpriced conversation: bills 1,000 + 2,000, no dollars
func TestDollars(t *testing.T) {
	u := New(Options{Scope: scopeOf})
	t0 := time.Now().Add(-time.Hour)
	evs := []proxy.Event{}
	add := func(conv, model string, price, bill, unc float64) {
		evs = append(evs, proxy.Event{Time: t0.Add(time.Duration(len(evs)) * time.Minute), Scope: bearer("k"), Mode: "auto", Status: 200,
			Report: condense.Report{Model: model, Counted: true, Conversation: conv, Format: "messages", Applied: condense.AppliedNone,
				TokensBefore: 4000, TokensAfter: 4000, PrefixReused: -1, Bill: bill, BillUncondensed: unc, InputPrice: price}})
	}
	add("priced", "claude-sonnet-4", 3, 2500, 2500)
	add("priced", "claude-sonnet-4", 3, 1450, 5200)
	add("unpriced", "my-local-model", 0, 1000, 1000)
	add("unpriced", "my-local-model", 0, 2000, 2000)
	record(u, evs)

	var ov overviewResp
	call(t, u, "/ui/api/overview", remote, &ov)
	tot := ov.Totals.billSums
	if tot.BillUSD.float() != 0.01185 || tot.BillUncondensedUSD.float() != 0.0231 || tot.Priced != 2 || tot.Unpriced != 2 {
		t.Errorf("totals: $%v (uncondensed $%v), %d priced, %d unpriced; want $0.01185, $0.0231, 2, 2",
			tot.BillUSD.float(), tot.BillUncondensedUSD.float(), tot.Priced, tot.Unpriced)
	}
	var list listResp
	call(t, u, "/ui/api/conversations", remote, &list)
	if len(list.Conversations) != 2 {
		t.Fatalf("%d conversations", len(list.Conversations))
	}
	for _, c := range list.Conversations {
		var conv convResp
		call(t, u, "/ui/api/conversations/"+c.ID, remote, &conv)
		switch c.Model {
		case "claude-sonnet-4":
			if c.BillUSD == nil || c.BillUSD.float() != 0.01185 || c.BillUncondensedUSD == nil || c.BillUncondensedUSD.float() != 0.0231 || c.Unpriced != 0 {
				t.Errorf("priced conversation: %+v", c)
			}
			if q := conv.Requests[0]; q.InputPrice != 3 || q.BillUSD == nil || q.BillUSD.float() != 0.0075 {
				t.Errorf("priced request: %+v", q)
			}
		default:
			if c.BillUSD != nil || c.BillUncondensedUSD != nil || c.Unpriced != 2 {
				t.Errorf("unpriced conversation: %+v, want no dollars (unknown price)", c)
			}
			if q := conv.Requests[0]; q.InputPrice != 0 || q.BillUSD != nil {
				t.Errorf("unpriced request: %+v", q)
			}
		}
	}
	// The JSON says null, which the page writes "unknown price".
	w := call(t, u, "/ui/api/conversations", remote, nil)
	if !strings.Contains(w.Body.String(), `"bill_usd":null`) || !strings.Contains(w.Body.String(), `"bill_usd":0.01185`) {
		t.Errorf("conversations JSON: %s", w.Body.String())
	}
}

// TestHoldoutComparison: the overview compares the arms of
// condense.holdout_share by conversations, requests and estimated cost per
// conversation (summarizer calls included), in input tokens' worth and
// dollars, with a place for measured cost; below 10 conversations in an
// arm it says there is too little data to tell.
func TestHoldoutComparison(t *testing.T) {
	u := New(Options{Scope: scopeOf})
	t0 := time.Now().Add(-time.Hour)
	send := func(arm string, conv, requests int, bill, spend float64) {
		for i := range requests {
			rep := condense.Report{Model: "gpt-4o", Counted: true, Conversation: fmt.Sprintf("%s-%d", arm, conv), Format: "chat",
				TokensBefore: 9000, TokensAfter: 9000, PrefixReused: -1, Bill: bill, BillUncondensed: bill, SummarizerSpend: spend,
				InputPrice: 2, Arm: arm, Applied: condense.AppliedFull}
			if arm == condense.ArmHoldout {
				rep.Applied, rep.WouldApply = condense.AppliedObserve, condense.AppliedFull
			}
			u.Record(proxy.Event{Time: t0.Add(time.Duration(i) * time.Second), Scope: bearer("k"), Mode: "auto", Status: 200, Report: rep})
		}
	}
	// No arm: no comparison.
	send("", 0, 1, 100, 0)
	var ov overviewResp
	call(t, u, "/ui/api/overview", remote, &ov)
	if ov.Holdout != nil {
		t.Fatalf("a comparison without a holdout share: %+v", ov.Holdout)
	}
	// 12 condensed conversations of 3 requests (1,000 each and 500 of
	// summaries on the first), 9 holdout ones of 3 (2,000 each).
	for c := range 12 {
		send(condense.ArmCondensed, c, 1, 1000, 500)
		send(condense.ArmCondensed, c, 2, 1000, 0)
	}
	for c := range 9 {
		send(condense.ArmHoldout, c, 3, 2000, 0)
	}
	call(t, u, "/ui/api/overview", remote, &ov)
	h := ov.Holdout
	if h == nil || h.Condensed.Conversations != 12 || h.Holdout.Conversations != 9 || h.Condensed.Requests != 36 || h.Holdout.Requests != 27 {
		t.Fatalf("arms: %+v", h)
	}
	if h.Enough || h.Saving != nil || !strings.HasPrefix(h.Verdict, "too little data to tell") || h.MinConversations != 10 {
		t.Errorf("9 holdout conversations: enough %v, saving %s, verdict %q", h.Enough, show(h.Saving), h.Verdict)
	}
	if !near(h.Condensed.CostPerConversation, 3500) || !near(h.Holdout.CostPerConversation, 6000) {
		t.Errorf("cost per conversation %s / %s, want 3500 / 6000", show(h.Condensed.CostPerConversation), show(h.Holdout.CostPerConversation))
	}
	// $2 / MTok: 3,500 → $0.007, 6,000 → $0.012.
	if !near(h.Condensed.USDPerConversation, 0.007) || !near(h.Holdout.USDPerConversation, 0.012) {
		t.Errorf("dollars per conversation %s / %s", show(h.Condensed.USDPerConversation), show(h.Holdout.USDPerConversation))
	}
	if h.Holdout.MeasuredCostPerConversation != nil || h.MeasuredSaving != nil {
		t.Errorf("measured cost before usage is measured: %+v", h)
	}
	w := call(t, u, "/ui/api/overview", remote, nil)
	if !strings.Contains(w.Body.String(), `"measured_cost_per_conversation":null`) {
		t.Error("no measured_cost_per_conversation field in the overview")
	}

	send(condense.ArmHoldout, 9, 3, 2000, 0)
	call(t, u, "/ui/api/overview", remote, &ov)
	h = ov.Holdout
	if !h.Enough || !near(h.Saving, 1-3500.0/6000) || !strings.Contains(h.Verdict, "41.7% less") {
		t.Errorf("10 holdout conversations: enough %v, saving %s, verdict %q", h.Enough, show(h.Saving), h.Verdict)
	}
	var list listResp
	call(t, u, "/ui/api/conversations", remote, &list)
	arms := map[string]int{}
	for _, c := range list.Conversations {
		arms[c.Arm]++
	}
	if arms[condense.ArmCondensed] != 12 || arms[condense.ArmHoldout] != 10 || arms[""] != 1 {
		t.Errorf("conversations by arm: %v", arms)
	}
}

// TestHoldoutMeasured: the arms' measured cost per conversation is the
// input bill of the usage the answers reported plus the summarizer's
// estimated spend, and the measured saving compares them; a request of
// an arm whose answers reported no usage leaves that arm without a
// measured cost (and the comparison without a measured saving), and a
// failed request (no Measured) changes nothing measured.
//
//	condensed: 10 conversations of 2 requests measured at 800, 500 of
//	  summaries on the first: 2,100 per conversation ($0.0042 at $2/MTok)
//	holdout: 10 conversations of 2 requests measured at 2,000: 4,000
//	  ($0.008); measured saving 1 − 2,100/4,000 = 0.475
func TestHoldoutMeasured(t *testing.T) {
	u := New(Options{Scope: scopeOf})
	t0 := time.Now().Add(-time.Hour)
	send := func(arm string, conv int, spend float64, m *proxy.Measured, status int) {
		rep := condense.Report{Model: "gpt-4o", Counted: true, Conversation: fmt.Sprintf("%s-%d", arm, conv), Format: "chat",
			TokensBefore: 9000, TokensAfter: 9000, PrefixReused: -1, Bill: 1000, BillUncondensed: 1000, SummarizerSpend: spend,
			InputPrice: 2, Arm: arm, Applied: condense.AppliedFull}
		if arm == condense.ArmHoldout {
			rep.Applied, rep.WouldApply = condense.AppliedObserve, condense.AppliedFull
		}
		u.Record(proxy.Event{Time: t0, Scope: bearer("k"), Mode: "auto", Status: status, Report: rep, Measured: m})
	}
	measured := func(bill float64) *proxy.Measured {
		return &proxy.Measured{Reported: true, Answers: 1, FirstPrompt: 10000, Bill: bill,
			Usage: view.Usage{Known: true, CacheRead: 8000, CacheWrite: 1000, Uncached: 1000, Output: 50}}
	}
	for c := range 10 {
		send(condense.ArmCondensed, c, 500, measured(800), 200)
		send(condense.ArmCondensed, c, 0, measured(800), 200)
		send(condense.ArmHoldout, c, 0, measured(2000), 200)
		send(condense.ArmHoldout, c, 0, measured(2000), 200)
	}
	send(condense.ArmHoldout, 0, 0, nil, 502) // failed: nothing measured
	var ov overviewResp
	call(t, u, "/ui/api/overview", remote, &ov)
	h := ov.Holdout
	if h == nil || !h.Enough {
		t.Fatalf("arms: %+v", h)
	}
	if !near(h.Condensed.MeasuredCostPerConversation, 2100) || !near(h.Holdout.MeasuredCostPerConversation, 4000) {
		t.Errorf("measured cost per conversation %s / %s, want 2100 / 4000",
			show(h.Condensed.MeasuredCostPerConversation), show(h.Holdout.MeasuredCostPerConversation))
	}
	if !near(h.Condensed.MeasuredUSDPerConversation, 0.0042) || !near(h.Holdout.MeasuredUSDPerConversation, 0.008) {
		t.Errorf("measured dollars per conversation %s / %s, want 0.0042 / 0.008",
			show(h.Condensed.MeasuredUSDPerConversation), show(h.Holdout.MeasuredUSDPerConversation))
	}
	if !near(h.MeasuredSaving, 1-2100.0/4000) || !strings.Contains(h.Verdict, "measured: 47.5% less") {
		t.Errorf("measured saving %s, verdict %q; want 0.475", show(h.MeasuredSaving), h.Verdict)
	}
	m := ov.Measured
	if m.Requests != 40 || m.NotReported != 0 || m.CacheRead != 320000 || m.Input != 400000 || m.Bill.float() != 56000 ||
		!near(m.EstimateError, 9000.0/10000-1) || !near(m.BillError, 40000.0/56000-1) {
		t.Errorf("overview measured: %+v (estimate error %s, bill error %s)", m.measuredSums, show(m.EstimateError), show(m.BillError))
	}

	// A holdout request whose answer reported no usage.
	send(condense.ArmHoldout, 3, 0, &proxy.Measured{Answers: 1}, 200)
	call(t, u, "/ui/api/overview", remote, &ov)
	h = ov.Holdout
	if h.Holdout.MeasuredCostPerConversation != nil || h.MeasuredSaving != nil || !near(h.Condensed.MeasuredCostPerConversation, 2100) ||
		!strings.Contains(h.Verdict, "not reported") || ov.Measured.NotReported != 1 {
		t.Errorf("after a request without usage: holdout measured %s, saving %s, verdict %q, not reported %d",
			show(h.Holdout.MeasuredCostPerConversation), show(h.MeasuredSaving), h.Verdict, ov.Measured.NotReported)
	}
	// The requests say it too.
	var list listResp
	call(t, u, "/ui/api/conversations", remote, &list)
	for _, c := range list.Conversations {
		if c.Arm != condense.ArmHoldout || c.Measured.NotReported == 0 {
			continue
		}
		var conv convResp
		call(t, u, "/ui/api/conversations/"+c.ID, remote, &conv)
		last := conv.Requests[len(conv.Requests)-1]
		if last.Measured == nil || last.Measured.Reported {
			t.Errorf("the request without usage: %+v", last.Measured)
		}
		if first := conv.Requests[0]; first.Measured == nil || !first.Measured.Reported || first.Measured.Input != 10000 ||
			first.Measured.BillUSD == nil || first.Measured.BillUSD.float() != 0.004 || !near(first.Measured.EstimateError, -0.1) {
			t.Errorf("a measured request: %+v", first.Measured)
		}
		return
	}
	t.Error("no conversation with a request without usage")
}
