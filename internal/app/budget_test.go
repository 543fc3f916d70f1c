package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// TestSummarizerCallsCountedAlike: a request spends at most
// condense.max_summarizer_calls on the summarizer — a giant one none at
// all, saying why — and the calls it makes are the same number on its log
// line, on the live page and in /metrics.
func TestSummarizerCallsCountedAlike(t *testing.T) {
	cases := []struct {
		name     string
		chars    int
		maxCalls func(int) bool
		said     bool // the budget reached, said (condense.DegradedCallBudget)
	}{
		{"giant request: no call", 3_000_000, func(n int) bool { return n == 0 }, true},
		{"a fold within the budget", 180_000, func(n int) bool { return n > 0 && n <= 16 }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			sum := condense.SummarizerFunc(func(ctx context.Context, in condense.SummaryInput) (string, error) {
				calls.Add(1)
				return "## Task and intent\n- a summary " + fmt.Sprint(len(in.Text)), nil
			})
			cfg := config.Defaults()
			cfg.ScopeSecret = "a test's scope secret"
			cfg.UI.Keys = []string{"admin-key"}
			cfg.Models = []config.ModelConfig{{Match: "*", ContextWindow: 32000}}
			logs := &lockedBuffer{}
			a := newApp(t, &cfg, fakeupstream.New(), app.Options{Summarizer: sum, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
			srv := httptest.NewServer(a.Handler)
			t.Cleanup(srv.Close)
			sess, _ := corpus.Synthetic(5, tc.chars)
			body, _ := sess.Request("gpt-4o", 0)
			resp := postDrained(t, srv.URL+"/v1/chat/completions", bytes.NewReader(body), proxy.HeaderMode, "full")
			a.Engine.Close(context.Background())
			n := int(calls.Load())
			if !tc.maxCalls(n) {
				t.Fatalf("%d summarizer calls (degraded %q)", n, resp.Header.Get(proxy.HeaderDegraded))
			}
			// The log line (written once the answer is sent).
			var m []string
			for i := 0; i < 500 && m == nil; i++ {
				m = regexp.MustCompile(`"summarizer_calls":(\d+)`).FindStringSubmatch(logs.String())
				if m == nil {
					time.Sleep(10 * time.Millisecond)
				}
			}
			if m == nil {
				t.Fatalf("no summarizer_calls on the log line: %s", logs.String())
			}
			if logged, _ := strconv.Atoi(m[1]); logged != n {
				t.Errorf("log line says %d summarizer calls, the summarizer saw %d", logged, n)
			}
			var kinds []string
			if k := regexp.MustCompile(`"degraded_kinds":"([^"]*)"`).FindStringSubmatch(logs.String()); k != nil {
				kinds = strings.Split(k[1], ",")
			}
			if p := regexp.MustCompile(`"reason_path":"([^"]*)"`).FindStringSubmatch(logs.String()); p == nil || strings.Split(p[1], ",")[0] != condense.PathOverThreshold {
				t.Errorf("log line's reason_path %q, want it to start with %s", p, condense.PathOverThreshold)
			}
			if slices.Contains(kinds, condense.DegradedCallBudget) != tc.said || (resp.Header.Get(proxy.HeaderDegraded) != "") != (len(kinds) > 0) {
				t.Errorf("log line's degraded_kinds %v, X-Condense-Degraded %q: want the call budget said %v", kinds, resp.Header.Get(proxy.HeaderDegraded), tc.said)
			}
			// /metrics.
			mresp, _ := http.Get(srv.URL + "/metrics")
			mb, _ := io.ReadAll(mresp.Body)
			mresp.Body.Close()
			mm := regexp.MustCompile(`condense_summarizer_call_seconds_count\{outcome="ok"\} (\d+)`).FindStringSubmatch(string(mb))
			metric := 0
			if mm != nil {
				metric, _ = strconv.Atoi(mm[1])
			}
			if metric != n {
				t.Errorf("/metrics counts %d summarizer calls, the summarizer saw %d", metric, n)
			}
			// The live page.
			preq, _ := http.NewRequest("GET", srv.URL+"/ui/api/overview", nil)
			preq.Header.Set("Authorization", "Bearer admin-key")
			presp, err := http.DefaultClient.Do(preq)
			if err != nil {
				t.Fatal(err)
			}
			var ov struct {
				Totals struct {
					SummarizerCalls int `json:"summarizer_calls"`
				} `json:"totals"`
			}
			json.NewDecoder(presp.Body).Decode(&ov)
			presp.Body.Close()
			if ov.Totals.SummarizerCalls != n {
				t.Errorf("the page counts %d summarizer calls, the summarizer saw %d", ov.Totals.SummarizerCalls, n)
			}
		})
	}
}

// TestBackgroundWorkHoldsNoPlace: summaries prepared in the background
// never take or keep one of the proxy's places (max_inflight_condense):
// after the background work of a request has finished, the only place is
// free for the next request.
func TestBackgroundWorkHoldsNoPlace(t *testing.T) {
	sum := &blockingSummarizer{entered: make(chan struct{}, 1), release: make(chan struct{})}
	cfg := config.Defaults()
	cfg.ScopeSecret = "a test's scope secret"
	cfg.MaxInflightCondense = 1
	cfg.InflightWait = 100 * time.Millisecond
	cfg.Condense.PrepareThreshold = 0.3
	cfg.Condense.Threshold = 0.8 // the session's first request is under it
	cfg.Models = []config.ModelConfig{{Match: "*", ContextWindow: 64000}}
	a := newApp(t, &cfg, fakeupstream.New(), app.Options{Summarizer: sum})
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	sess, _ := corpus.Synthetic(4, 150_000) // over the prepare threshold, under the threshold
	body, _ := sess.Request("gpt-4o", 0)
	post := func() *http.Response {
		resp := postDrained(t, srv.URL+"/v1/chat/completions", bytes.NewReader(body), proxy.HeaderMode, "full")
		return resp
	}
	if resp := post(); resp.Header.Get(proxy.HeaderApplied) != "none" {
		t.Fatalf("setup: applied %q", resp.Header.Get(proxy.HeaderApplied))
	}
	<-sum.entered // the background preparation is calling the summarizer
	close(sum.release)
	a.Engine.Close(context.Background())
	for i := 0; i < 3; i++ {
		if resp := post(); strings.Contains(resp.Header.Get(proxy.HeaderDegraded), "max_inflight_condense") {
			t.Fatalf("request %d found the only place taken: %s", i, resp.Header.Get(proxy.HeaderDegraded))
		}
	}
}
