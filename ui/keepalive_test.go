package ui

import "testing"

// TestOverviewKeepAlive: the overview carries the keep-alive counts only
// when keep-alive is on, read afresh at each request.
func TestOverviewKeepAlive(t *testing.T) {
	u := New(Options{Scope: scopeOf})
	var ov overviewResp
	call(t, u, "/ui/api/overview", remote, &ov)
	if ov.KeepAlive != nil {
		t.Fatalf("keep-alive shown while off: %+v", ov.KeepAlive)
	}
	pings := uint64(0)
	u.ShowKeepAlive(func() KeepAliveStats {
		pings++
		return KeepAliveStats{Pings: pings, CacheRead: 20000, PingCost: 2008, Avoided: 21850, NetSaving: 19842, Armed: 1}
	})
	for want := uint64(1); want <= 2; want++ {
		ov = overviewResp{}
		call(t, u, "/ui/api/overview", remote, &ov) // numbers only: counts are numbers
		if ov.KeepAlive == nil || ov.KeepAlive.Pings != want || ov.KeepAlive.NetSaving != 19842 || ov.KeepAlive.CacheRead != 20000 {
			t.Fatalf("overview keep-alive %+v, want %d pings", ov.KeepAlive, want)
		}
	}
}
