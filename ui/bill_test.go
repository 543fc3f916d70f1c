package ui

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// near reports whether got is set and within rounding of want.
func near(got *float64, want float64) bool {
	return got != nil && math.Abs(*got-want) < 1e-12
}

func show(f *float64) string {
	if f == nil {
		return "null"
	}
	return fmt.Sprint(*f)
}

// TestBillFigures: three requests worked out by hand, where each wrong way
// of computing the figures gives another number. Prices: a cache read
// 0.1, a write 1.25 of the input price.
//
//	#1 first request:        2,000 forwarded, all written;        bill 2,500; uncondensed 2,500
//	#2 condensed 6,000→3,000: 2,000 read, 1,000 written;           bill 1,450; uncondensed 2,000 read + 4,000 written = 5,200
//	#3 after the cache's lifetime: 6,500→3,500, prefix 3,000 kept but nothing read; bill 4,375; uncondensed 8,125
//
// Cache-read share: 2,000 / 8,500 forwarded = 4/17 (the prefix kept,
// 5,000 / 6,500, is not it: #3's prefix had expired; nor is 2,000 over the
// 14,500 received). Saving: 1 − 8,325 / 15,825 = 7,500 / 15,825 (not the
// ratio 8,325 / 15,825, nor over the bill forwarded).
func TestBillFigures(t *testing.T) {
	u := New(Options{Scope: scopeOf})
	t0 := time.Now().Add(-time.Hour)
	reps := []condense.Report{
		{TokensBefore: 2000, TokensAfter: 2000, Applied: condense.AppliedNone, PrefixReused: -1,
			CacheWrite: 2000, Bill: 2500, UncondensedWrite: 2000, BillUncondensed: 2500},
		{TokensBefore: 6000, TokensAfter: 3000, Applied: condense.AppliedFull, PrefixReused: 2000,
			CacheRead: 2000, CacheWrite: 1000, Bill: 1450, UncondensedRead: 2000, UncondensedWrite: 4000, BillUncondensed: 5200},
		{TokensBefore: 6500, TokensAfter: 3500, Applied: condense.AppliedFull, PrefixReused: 3000,
			CacheWrite: 3500, Bill: 4375, UncondensedWrite: 6500, BillUncondensed: 8125},
	}
	for i, r := range reps {
		r.Model, r.Family, r.Counted, r.Conversation, r.Format = "claude-sonnet-4", "*claude*", true, "c", "messages"
		r.Window, r.Trigger = 8000, 5000
		u.Record(proxy.Event{Time: t0.Add(time.Duration(i) * 10 * time.Minute), Scope: bearer("k"), Mode: "auto", Status: 200, Report: r})
	}

	// A numbers-only viewer (no keys, remote) sees the bill: it is numbers.
	var ov overviewResp
	call(t, u, "/ui/api/overview", remote, &ov)
	if ov.Access != "numbers" {
		t.Fatalf("access %s", ov.Access)
	}
	tot := ov.Totals
	if tot.CacheRead != 2000 || tot.CacheWrite != 6500 || tot.UncondensedRead != 2000 || tot.UncondensedWrite != 12500 ||
		tot.Bill != 8325_000 || tot.BillUncondensed != 15825_000 {
		t.Errorf("bill totals %+v", tot.billSums)
	}
	if !near(ov.CacheReadShare, 4.0/17) {
		t.Errorf("cache-read share %s, want 4/17 = %v", show(ov.CacheReadShare), 4.0/17)
	}
	if !near(ov.BillSaving, 7500.0/15825) {
		t.Errorf("saving %s, want 7500/15825 = %v", show(ov.BillSaving), 7500.0/15825)
	}
	if ov.ObserveSaving != nil || tot.Observe != (observeSums{}) {
		t.Errorf("no request was observed: saving %s, %+v", show(ov.ObserveSaving), tot.Observe)
	}
	if len(ov.Models) != 1 || ov.Models[0].billSums != tot.billSums ||
		!near(ov.Models[0].CacheReadShare, 4.0/17) || !near(ov.Models[0].BillSaving, 7500.0/15825) {
		t.Errorf("per model %+v", ov.Models)
	}

	var list listResp
	call(t, u, "/ui/api/conversations", remote, &list)
	if len(list.Conversations) != 1 {
		t.Fatalf("%d conversations", len(list.Conversations))
	}
	c := list.Conversations[0]
	if c.Content || c.Bill != 8325_000 || c.BillUncondensed != 15825_000 || !near(c.BillSaving, 7500.0/15825) || c.Observed != 0 || c.ObserveSaving != nil {
		t.Errorf("conversation %+v", c)
	}
	var conv convResp
	call(t, u, "/ui/api/conversations/"+c.ID, remote, &conv)
	for i, q := range conv.Requests {
		r := reps[i]
		if q.CacheRead != r.CacheRead || q.CacheWrite != r.CacheWrite || q.Bill != r.Bill || q.BillUncondensed != r.BillUncondensed || q.WouldApply != "" {
			t.Errorf("request %d: %+v", q.N, q)
		}
	}

	// Nothing billed yet: no figure rather than 0%.
	var empty overviewResp
	call(t, New(Options{}), "/ui/api/overview", remote, &empty)
	if empty.BillSaving != nil || empty.CacheReadShare != nil || empty.ObserveSaving != nil {
		t.Errorf("empty record: saving %s, share %s, observe %s", show(empty.BillSaving), show(empty.CacheReadShare), show(empty.ObserveSaving))
	}
}

// TestBillAddsUp: over sessions in auto and in observe mode and a request
// over the threshold forwarded as received, every bill figure the page shows is the sum of the reports'
// (in thousandths of an input token: exactly), overall, per model, per
// conversation and per request.
func TestBillAddsUp(t *testing.T) {
	u := New(Options{Scope: scopeOf, TrustLoopback: true})
	t0 := time.Now().Add(-40 * time.Minute)
	a := session(bearer("ka"), "conv-a", "gpt-4o", "agent/1", t0, 50)
	b := session(bearer("kb"), "conv-b", "claude-sonnet-4", "agent/2", t0, 30)
	o := observed(session(bearer("ka"), "conv-o", "gpt-4o", "agent/1", t0, 40))
	// A request over the threshold forwarded as received.
	d := session(bearer("kb"), "conv-d", "claude-sonnet-4", "agent/2", t0, 1)
	d[0].Report.Reason = "over threshold; nothing to condense; forwarded unchanged"
	d[0].Report.TokensBefore, d[0].Report.TokensAfter, d[0].Report.Trigger = 60000, 60000, 51200
	all := [][]proxy.Event{a, b, o, d}
	// gpt-4o has a price; claude-sonnet-4 here none (its bills are in no
	// dollar figure).
	for _, evs := range [][]proxy.Event{a, o} {
		for i := range evs {
			evs[i].Report.InputPrice = 2.5
		}
	}
	for _, evs := range all {
		record(u, evs)
	}

	type sums struct {
		b     billSums
		obs   observeSums
		after int64
	}
	add := func(s *sums, r *condense.Report) {
		s.b.CacheRead += int64(r.CacheRead)
		s.b.CacheWrite += int64(r.CacheWrite)
		s.b.UncondensedRead += int64(r.UncondensedRead)
		s.b.UncondensedWrite += int64(r.UncondensedWrite)
		s.b.Bill += inputs(math.Round(r.Bill * 1000))
		s.b.BillUncondensed += inputs(math.Round(r.BillUncondensed * 1000))
		if r.InputPrice > 0 {
			// Nanodollars: bill × price / 10^6 dollars.
			s.b.Priced++
			s.b.BillUSD += usd(math.Round(math.Round(r.Bill*1000) * r.InputPrice))
			s.b.BillUncondensedUSD += usd(math.Round(math.Round(r.BillUncondensed*1000) * r.InputPrice))
		} else {
			s.b.Unpriced++
		}
		s.after += int64(r.TokensAfter)
		if r.Applied == condense.AppliedObserve {
			s.obs.Requests++
			if r.WouldApply != condense.AppliedNone {
				s.obs.WouldCondense++
			}
			s.obs.TokensReceived += int64(r.TokensBefore)
			s.obs.WouldTokensAfter += int64(r.WouldTokensAfter)
			s.obs.Bill += inputs(math.Round(r.Bill * 1000))
			s.obs.WouldBill += inputs(math.Round(r.WouldBill * 1000))
			s.obs.WouldCacheRead += int64(r.WouldCacheRead)
			s.obs.WouldCacheWrite += int64(r.WouldCacheWrite)
		}
	}
	var total sums
	byModel := map[string]*sums{}
	for _, evs := range all {
		for i := range evs {
			r := &evs[i].Report
			add(&total, r)
			if byModel[r.Model] == nil {
				byModel[r.Model] = &sums{}
			}
			add(byModel[r.Model], r)
		}
	}
	if total.b.CacheRead == 0 || total.b.Bill >= total.b.BillUncondensed || total.obs.WouldCondense == 0 {
		t.Fatalf("the fixture reads nothing from the cache or saves nothing: %+v", total)
	}

	var ov overviewResp
	call(t, u, "/ui/api/overview", loopback, &ov)
	if ov.Totals.billSums != total.b || ov.Totals.Observe != total.obs {
		t.Errorf("totals\n got %+v %+v\nwant %+v %+v", ov.Totals.billSums, ov.Totals.Observe, total.b, total.obs)
	}
	wantShare := float64(total.b.CacheRead) / float64(total.after)
	wantSaving := 1 - float64(total.b.Bill)/float64(total.b.BillUncondensed)
	wantObserve := 1 - float64(total.obs.WouldBill)/float64(total.obs.Bill)
	if !near(ov.CacheReadShare, wantShare) || !near(ov.BillSaving, wantSaving) || !near(ov.ObserveSaving, wantObserve) {
		t.Errorf("share %s want %v, saving %s want %v, observe saving %s want %v",
			show(ov.CacheReadShare), wantShare, show(ov.BillSaving), wantSaving, show(ov.ObserveSaving), wantObserve)
	}
	if len(ov.Models) != len(byModel) {
		t.Fatalf("%d models, want %d", len(ov.Models), len(byModel))
	}
	for _, m := range ov.Models {
		w := byModel[m.Model]
		if m.billSums != w.b || !near(m.CacheReadShare, float64(w.b.CacheRead)/float64(w.after)) ||
			!near(m.BillSaving, 1-float64(w.b.Bill)/float64(w.b.BillUncondensed)) {
			t.Errorf("model %s: %+v share %s saving %s, want %+v", m.Model, m.billSums, show(m.CacheReadShare), show(m.BillSaving), w.b)
		}
	}
	var modes []string
	for _, m := range ov.Modes {
		modes = append(modes, fmt.Sprintf("%s:%d/%d", m.Mode, m.Condensed, m.Unchanged))
	}
	// Observe requests went as received: none is counted condensed.
	if fmt.Sprint(modes) != fmt.Sprintf("[auto:%d/%d observe:0/%d]", condensedIn(a, b, d), unchangedIn(a, b, d), unchangedIn(o)) || ov.Applied[condense.AppliedObserve] != 0 {
		t.Errorf("modes %v, applied %v", modes, ov.Applied)
	}

	var list listResp
	call(t, u, "/ui/api/conversations", loopback, &list)
	for _, c := range list.Conversations {
		var conv convResp
		call(t, u, "/ui/api/conversations/"+c.ID, loopback, &conv)
		var evs []proxy.Event
		for _, e := range all {
			if e[0].Report.Model == c.Model && len(e) == c.Requests {
				evs = e
			}
		}
		if evs == nil {
			t.Fatalf("conversation %+v is none of the sessions", c)
		}
		var w sums
		for i, q := range conv.Requests {
			r := &evs[i].Report
			add(&w, r)
			if q.CacheRead != r.CacheRead || q.CacheWrite != r.CacheWrite || q.Bill != r.Bill || q.BillUncondensed != r.BillUncondensed ||
				q.WouldBill != r.WouldBill || q.WouldTokensAfter != r.WouldTokensAfter ||
				q.WouldCacheRead != r.WouldCacheRead || q.WouldCacheWrite != r.WouldCacheWrite || q.WouldApply != r.WouldApply {
				t.Errorf("%s request %d: %+v\nreport %+v", c.ID, q.N, q, r)
			}
			if r.Applied == condense.AppliedObserve && (q.Applied != condense.AppliedObserve || q.Outcome == outcomeCondensed) {
				t.Errorf("observe request %d: applied %s, outcome %s", q.N, q.Applied, q.Outcome)
			}
		}
		if c.Bill != w.b.Bill || c.BillUncondensed != w.b.BillUncondensed || !near(c.BillSaving, 1-float64(w.b.Bill)/float64(w.b.BillUncondensed)) ||
			c.Observed != w.obs.Requests || c.ObserveBill != w.obs.Bill || c.WouldBill != w.obs.WouldBill {
			t.Errorf("conversation %s: %+v, want %+v %+v", c.ID, c, w.b, w.obs)
		}
		if (c.Observed > 0) != (c.ObserveSaving != nil) || (c.Observed > 0 && !near(c.ObserveSaving, 1-float64(w.obs.WouldBill)/float64(w.obs.Bill))) {
			t.Errorf("conversation %s: observe saving %s", c.ID, show(c.ObserveSaving))
		}
		if c.Observed > 0 && c.Condensed != 0 {
			t.Errorf("observed conversation counts %d condensed", c.Condensed)
		}
	}
}

func condensedIn(sessions ...[]proxy.Event) int {
	n := 0
	for _, evs := range sessions {
		for i := range evs {
			if outcomeOf(&evs[i].Report) == outcomeCondensed {
				n++
			}
		}
	}
	return n
}

func unchangedIn(sessions ...[]proxy.Event) int {
	n := 0
	for _, evs := range sessions {
		for i := range evs {
			r := &evs[i].Report
			if r.TokensBefore > r.Trigger && (r.Applied == condense.AppliedNone || r.Applied == condense.AppliedObserve) {
				n++
			}
		}
	}
	return n
}

// TestObserveDetail: an observe request's detail says what auto would
// have done.
func TestObserveDetail(t *testing.T) {
	u := New(Options{Scope: scopeOf})
	t0 := time.Now().Add(-time.Hour)
	ob := observed(session(bearer("ka"), "conv-o", "gpt-4o", "agent/1", t0, 40))
	record(u, ob)

	var list listResp
	call(t, u, "/ui/api/conversations", remote, &list)
	if len(list.Conversations) != 1 {
		t.Fatalf("%d conversations", len(list.Conversations))
	}
	var d detailResp
	last := ob[len(ob)-1].Report
	if w := call(t, u, fmt.Sprintf("/ui/api/conversations/%s/requests/%d", list.Conversations[0].ID, len(ob)), remote, &d); w.Code != 200 {
		t.Fatalf("observe request: %d", w.Code)
	}
	q := d.Request
	if q.Applied != condense.AppliedObserve || q.WouldApply != last.WouldApply || q.WouldApply == condense.AppliedNone ||
		q.WouldTokensAfter != last.WouldTokensAfter || q.WouldBill != last.WouldBill || q.TokensForwarded != last.TokensBefore ||
		q.Bill != last.Bill || len(q.Changes) != 0 {
		t.Errorf("observe detail %+v\nreport %+v", q, last)
	}
}
