package ui

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// scopeOf is the proxy's scope function, as the page is given it.
var scopeOf = proxy.NewScoper([]byte("ui tests"), nil).Scope

// bearer is the scope of an agent sending key as a bearer token.
func bearer(key string) string {
	return scopeOf(http.Header{"Authorization": {"Bearer " + key}})
}

// session builds the Events of one synthetic conversation of n requests,
// as the engine will report them once it fills every Report field: the
// conversation grows by a step a request; over the trigger it is condensed
// (selective digests first, then summaries, once a sliding window with a
// degraded summarizer), and the changes stay in effect afterwards, so the
// forwarded size saws up and down under the threshold.
func session(scope, conv, model, ua string, start time.Time, n int) []proxy.Event {
	const window, trigger, target = 64000, 51200, 32000
	tools := []string{"read_file", "run_tests", "grep", "list_files"}
	var items []condense.ItemShape
	items = append(items, condense.ItemShape{Role: "system", Tokens: 1500}, condense.ItemShape{Role: "user", Tokens: 400})
	var changes []condense.Change
	digested := map[int]bool{}
	summarizedTo := 0 // items [2, summarizedTo) are summarized
	condensations := 0
	var prevFwd []condense.ItemShape
	prevReceived := -1
	var out []proxy.Event
	for i := 0; i < n; i++ {
		if i > 0 {
			items = append(items,
				condense.ItemShape{Role: "assistant", Tokens: 150 + (i%3)*40},
				condense.ItemShape{Role: "tool", Tokens: 1200 + (i*537)%2600})
		}
		before := sum(items)
		rep := condense.Report{
			Model: model, Counted: true, Applied: condense.AppliedNone, Format: "chat", Conversation: conv,
			TokensBefore: before, Messages: len(items), Window: window, Trigger: trigger,
			Reason: "under threshold", Path: []string{condense.PathUnderThreshold}, Received: append([]condense.ItemShape(nil), items...),
			Duration: 3 * time.Millisecond, PrefixReused: -1,
		}
		fwd := apply(items, changes)
		degraded := ""
		if sum(fwd) > trigger {
			condensations++
			rep.Reason, rep.Path = "over threshold; condensed to the target", []string{condense.PathOverThreshold}
			switch {
			case condensations <= 2: // selective: digest old tool outputs
				for j := 2; j < len(items)-10 && sum(apply(items, changes)) > target; j++ {
					if items[j].Role != "tool" || digested[j] || j < summarizedTo {
						continue
					}
					digested[j] = true
					tool := tools[j%len(tools)]
					changes = append(changes, condense.Change{
						Kind: condense.ChangeDigest, ID: fmt.Sprintf("dg-%s-%d", conv, j), From: j, To: j + 1, Tool: tool,
						TokensBefore: items[j].Tokens, TokensAfter: 160,
						Text: fmt.Sprintf("[digest: %s pkg/store/file%d.go — %d tokens, id dg-%s-%d]\npackage store (imports fmt, strings)\nfunc Open(path string) (*Store, error)   line 12\nfunc (s *Store) Get(key string) ([]byte, bool)   line 48\n[… 212 lines condensed …]\nstore_test.go:88: FAIL TestGetMissing", tool, j, items[j].Tokens, conv, j),
					})
				}
			default: // full: one more level-1 summary over the oldest steps
				to := summarizedTo
				if to == 0 {
					to = 2
				}
				from := to
				for to < len(items)-8 && sum(apply(items, withSummary(changes, from, to+2, items))) > target {
					to += 2
				}
				to += 2
				level := 1
				if condensations >= 5 {
					level = 2
				}
				changes = withSummary(changes, from, to, items)
				changes[len(changes)-1].Level = level
				summarizedTo = to
				if condensations == 4 {
					degraded = "summarizer failed: upstream answered 502; extractive summary used for this request"
					changes = append(changes, condense.Change{
						Kind: condense.ChangeWindow, ID: fmt.Sprintf("win-%s-%d", conv, i), From: to, To: to + 2,
						TokensBefore: items[to].Tokens + items[to+1].Tokens, TokensAfter: 40,
						Text: "[2 earlier messages omitted to fit the context window; originals: win-" + conv + "]",
					})
					summarizedTo = to + 2
				}
			}
			fwd = apply(items, changes)
		}
		if len(changes) > 0 {
			rep.Changes = append([]condense.Change(nil), changes...)
			rep.Forwarded = fwd
			rep.TokensAfter = sum(fwd)
			rep.Applied = condense.ModeSelective
			if summarizedTo > 0 {
				rep.Applied = condense.AppliedFull
				rep.Summaries = "L1×" + fmt.Sprint(min(condensations-2, 4))
				rep.Cache = "hit"
			}
			if rep.TokensAfter >= rep.TokensBefore {
				rep.Applied, rep.Changes, rep.Forwarded, rep.TokensAfter = condense.AppliedNone, nil, nil, before
			}
		} else {
			rep.TokensAfter = before
		}
		if degraded != "" {
			rep.Degraded, rep.DegradedKinds = degraded, []string{condense.DegradedSummarizerFailed}
			rep.Applied = condense.AppliedTruncate
			rep.Calls = 1
		} else if strings.HasPrefix(rep.Reason, "over") && summarizedTo > 0 {
			rep.Calls = 1
		}
		if prevFwd != nil {
			rep.PrefixReused = commonPrefix(prevFwd, fwd)
		}
		priced(&rep, prevReceived)
		prevFwd, prevReceived = fwd, before
		out = append(out, proxy.Event{
			Time: start.Add(time.Duration(i) * 20 * time.Second), Scope: scope, Route: "chat", Mode: condense.ModeAuto,
			UserAgent: ua, Status: 200, Duration: 900*time.Millisecond + time.Duration(i%7)*130*time.Millisecond, Report: rep,
		})
	}
	return out
}

// Prices of the fixture's bills, in units of the input price, and the
// shortest prefix a provider caches.
const (
	readPrice, writePrice = 0.1, 1.25
	minCached             = 1024
)

// priced fills rep's bill as the engine estimates it, every request
// within the cache's lifetime: the forwarded request reads its prefix
// reused from the cache; uncondensed, the request as received reads the
// previous request as received (prevReceived, -1: none), the conversation
// growing append-only.
func priced(rep *condense.Report, prevReceived int) {
	rep.Family = rep.Model
	rep.CacheRead, rep.UncondensedRead = 0, 0
	if rep.PrefixReused >= minCached {
		rep.CacheRead = min(rep.PrefixReused, rep.TokensAfter)
	}
	rep.CacheWrite = rep.TokensAfter - rep.CacheRead
	rep.Bill = readPrice*float64(rep.CacheRead) + writePrice*float64(rep.CacheWrite)
	if prevReceived >= minCached {
		rep.UncondensedRead = min(prevReceived, rep.TokensBefore)
	}
	rep.UncondensedWrite = rep.TokensBefore - rep.UncondensedRead
	rep.BillUncondensed = readPrice*float64(rep.UncondensedRead) + writePrice*float64(rep.UncondensedWrite)
}

// observed turns a session's events into observe mode's: each request
// forwarded as received (billed as uncondensed), with what auto did in
// session as what it would have done.
func observed(evs []proxy.Event) []proxy.Event {
	out := make([]proxy.Event, len(evs))
	for i, ev := range evs {
		r := &ev.Report
		r.WouldApply, r.WouldTokensAfter, r.WouldBill = r.Applied, r.TokensAfter, r.Bill
		r.WouldCacheRead, r.WouldCacheWrite = r.CacheRead, r.CacheWrite
		r.Applied, r.TokensAfter, r.Changes, r.Forwarded = condense.AppliedObserve, r.TokensBefore, nil, nil
		r.CacheRead, r.CacheWrite, r.Bill = r.UncondensedRead, r.UncondensedWrite, r.BillUncondensed
		r.Summaries, r.Cache, r.Degraded, r.DegradedKinds, r.Calls = "", "", "", nil, 0
		r.Reason = "observe: forwarded as received; auto would have: " + r.Reason
		r.Path = append([]string{condense.PathObserve}, r.Path...)
		r.PrefixReused = -1
		if i > 0 {
			r.PrefixReused = evs[i-1].Report.TokensBefore
		}
		ev.Mode = condense.ModeObserve
		out[i] = ev
	}
	return out
}

func sum(items []condense.ItemShape) int {
	n := 0
	for _, it := range items {
		n += it.Tokens
	}
	return n
}

func commonPrefix(a, b []condense.ItemShape) int {
	n := 0
	for i := 0; i < len(a) && i < len(b) && a[i] == b[i]; i++ {
		n += a[i].Tokens
	}
	return n
}

// withSummary returns changes with one summary over items [from, to),
// dropping the digests it covers.
func withSummary(changes []condense.Change, from, to int, items []condense.ItemShape) []condense.Change {
	var out []condense.Change
	for _, c := range changes {
		if c.Kind == condense.ChangeDigest && c.From >= from && c.From < to {
			continue
		}
		out = append(out, c)
	}
	before := 0
	for _, it := range items[from:min(to, len(items))] {
		before += it.Tokens
	}
	return append(out, condense.Change{
		Kind: condense.ChangeSummary, ID: fmt.Sprintf("sum-%d-%d", from, to), Level: 1, From: from, To: to,
		TokensBefore: before, TokensAfter: 900,
		Text: fmt.Sprintf("## Task and intent\n- Fix ParseDuration in pkg/parser/duration.go for negative values (messages %d–%d).\n## Current state and progress\n- Reproduced with TestParseNegative; the sign was dropped before the unit was read.\n## Decisions and reasons\n- Keep the public API: the fix stays inside parseUnit.\n## Files\n- modified: pkg/parser/duration.go\n- read: pkg/parser/duration_test.go, go.mod", from, to-1),
	})
}

// apply is the forwarded shape of items under changes.
func apply(items []condense.ItemShape, changes []condense.Change) []condense.ItemShape {
	cs := append([]condense.Change(nil), changes...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].From < cs[j].From })
	var out []condense.ItemShape
	i := 0
	for _, c := range cs {
		if c.From < i || c.From >= len(items) {
			continue
		}
		out = append(out, items[i:c.From]...)
		role := "user"
		if c.Kind == condense.ChangeDigest {
			role = "tool"
		}
		out = append(out, condense.ItemShape{Role: role, Tokens: c.TokensAfter})
		i = min(c.To, len(items))
	}
	return append(out, items[i:]...)
}
