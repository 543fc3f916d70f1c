package e2e_test

import (
	"bytes"
	"crypto/sha256"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// TestObserveMode: X-Condense-Mode: observe forwards every request byte
// for byte and says what auto would have forwarded — the same count auto
// then forwards for the same request — turn after turn of a session, with
// /metrics holding both bills.
func TestObserveMode(t *testing.T) {
	s := newStack(t, 32000, "extractive")
	sess, _ := corpus.Synthetic(21, 200_000)
	ends := sess.TurnEnds()
	observed, condensed := 0, 0
	for i, n := range ends {
		if i%3 != 0 && i != len(ends)-1 {
			continue
		}
		body, err := sess.Request("gpt-4o", n)
		if err != nil {
			t.Fatal(err)
		}
		// Observe, as one caller…
		resp := post(t, s.Proxy.URL+"/v1/chat/completions", body, map[string]string{"Authorization": "Bearer sk-observe", "X-Condense-Mode": "observe"})
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got := lastForwarded(t, s.Fake)
		if sha256.Sum256(got) != sha256.Sum256(body) {
			t.Fatalf("request %d: observe mode forwarded a different body", i)
		}
		h := resp.Header
		if h.Get(proxy.HeaderApplied) != "observe" || h.Get(proxy.HeaderWouldApply) == "" {
			t.Fatalf("request %d: applied %q would apply %q", i, h.Get(proxy.HeaderApplied), h.Get(proxy.HeaderWouldApply))
		}
		would, _ := strconv.Atoi(h.Get(proxy.HeaderWouldTokensAfter))
		// …and auto, as another: what it forwards is what observe said.
		resp = post(t, s.Proxy.URL+"/v1/chat/completions", body, map[string]string{"Authorization": "Bearer sk-auto", "X-Condense-Mode": "auto"})
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		after, _ := strconv.Atoi(resp.Header.Get(proxy.HeaderTokensAfter))
		if would != after || h.Get(proxy.HeaderWouldApply) != resp.Header.Get(proxy.HeaderApplied) {
			t.Fatalf("request %d: observe would apply %s with %d tokens; auto applied %s with %d", i,
				h.Get(proxy.HeaderWouldApply), would, resp.Header.Get(proxy.HeaderApplied), after)
		}
		observed++
		if h.Get(proxy.HeaderWouldApply) != "none" {
			condensed++
		}
	}
	if condensed < 3 {
		t.Fatalf("only %d of %d observed requests would have been condensed: the test compares nothing", condensed, observed)
	}
	resp, err := http.Get(s.Proxy.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`condense_observe_bill_estimated_total{bill="would"`, `condense_observe_bill_estimated_total{bill="received"`, `condense_bill_estimated_total{applied="observe"`} {
		if !bytes.Contains(m, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// lastForwarded is the last agent request the fake received.
func lastForwarded(t *testing.T, fake *fakeupstream.Server) []byte {
	t.Helper()
	rs := fake.Received()
	for i := len(rs) - 1; i >= 0; i-- {
		if !fakeupstream.IsSummaryRequest(rs[i].Body) {
			return rs[i].Body
		}
	}
	t.Fatal("no request reached the upstream")
	return nil
}
