package app_test

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// TestThresholdByWindowServed: with serve's defaults, a request at
// about 70% of its model's window is condensed for a model of a large
// window (threshold 0.6), to under that threshold, and passes as
// received for a model of a small one (0.8); with condense.threshold
// set, both models take it.
func TestThresholdByWindowServed(t *testing.T) {
	const big, small = 128000, 32000
	body := func(model string, window int) []byte {
		// About 3.2 characters a token in the synthetic sessions.
		sess, _ := corpus.Synthetic(8, int(0.7*float64(window)*3.2))
		ends := sess.TurnEnds()
		b, err := sess.Request(model, ends[len(ends)-1])
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		threshold             float64 // 0: unset
		bigApplied, smallNone bool
	}{
		{0, true, true},
		{0.8, false, true},
		{0.5, true, false},
	} {
		cfg := config.Defaults()
		cfg.ScopeSecret = "a test's scope secret"
		cfg.Condense.Threshold = tc.threshold
		if tc.threshold > 0 {
			cfg.Condense.Target = config.DefaultTarget(tc.threshold)
		}
		cfg.Models = []config.ModelConfig{{Match: "big*", ContextWindow: big, SafetyFactor: 1}, {Match: "small*", ContextWindow: small, SafetyFactor: 1}}
		a := newApp(t, &cfg, fakeupstream.New(), app.Options{})
		srv := httptest.NewServer(a.Handler)
		for _, m := range []struct {
			model  string
			window int
		}{{"big-model", big}, {"small-model", small}} {
			resp := postDrained(t, srv.URL+"/v1/chat/completions", bytes.NewReader(body(m.model, m.window)))
			applied := resp.Header.Get(proxy.HeaderApplied)
			before, _ := strconv.Atoi(resp.Header.Get(proxy.HeaderTokensBefore))
			after, _ := strconv.Atoi(resp.Header.Get(proxy.HeaderTokensAfter))
			want := tc.bigApplied
			if m.window == small {
				want = !tc.smallNone
			}
			if (applied != "none") != want {
				t.Errorf("threshold %g, %s: %d tokens (%.2f of the window), applied %q", tc.threshold, m.model, before, float64(before)/float64(m.window), applied)
			}
			thr := tc.threshold
			if thr == 0 {
				thr = config.DefaultThreshold(m.window)
			}
			if applied != "none" && after > int(thr*float64(m.window)) {
				t.Errorf("threshold %g, %s: condensed to %d tokens, over the threshold %g", tc.threshold, m.model, after, thr)
			}
		}
		srv.Close()
	}
}

// TestDeferHasNoEffect: condense.defer, deprecated, still loads; serve
// says once at start that it has no effect, and a conversation over the
// threshold is forwarded byte for byte as without it.
func TestDeferHasNoEffect(t *testing.T) {
	sess, _ := corpus.Synthetic(8, int(0.9*32000*3.2))
	ends := sess.TurnEnds()
	var forwarded [2][][]byte
	for i, on := range []bool{false, true} {
		cfg := config.Defaults()
		cfg.ScopeSecret = "a test's scope secret"
		cfg.Condense.Defer = on
		cfg.Models = []config.ModelConfig{{Match: "small*", ContextWindow: 32000, SafetyFactor: 1}}
		logs := &bytes.Buffer{}
		up := fakeupstream.New()
		a := newApp(t, &cfg, up, app.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
		if warned := strings.Count(logs.String(), "condense.defer has no effect"); warned != map[bool]int{false: 0, true: 1}[on] {
			t.Errorf("defer %v: warned %d times:\n%s", on, warned, logs)
		}
		srv := httptest.NewServer(a.Handler)
		condensed := 0
		for _, end := range ends[len(ends)-4:] {
			b, err := sess.Request("small-model", end)
			if err != nil {
				t.Fatal(err)
			}
			if resp := postDrained(t, srv.URL+"/v1/chat/completions", bytes.NewReader(b)); resp.Header.Get(proxy.HeaderApplied) != "none" {
				condensed++
			}
		}
		srv.Close()
		if condensed == 0 {
			t.Fatalf("defer %v: nothing condensed: the test shows nothing", on)
		}
		for _, r := range up.Received() {
			forwarded[i] = append(forwarded[i], r.Body)
		}
	}
	if len(forwarded[0]) != len(forwarded[1]) {
		t.Fatalf("%d requests forwarded without defer, %d with", len(forwarded[0]), len(forwarded[1]))
	}
	for i := range forwarded[0] {
		if !bytes.Equal(forwarded[0][i], forwarded[1][i]) {
			t.Errorf("request %d forwarded differently with condense.defer", i+1)
		}
	}
}
