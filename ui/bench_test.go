package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/proxy"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// BenchmarkRecordOverhead sends the same pass-through chat request
// (under the threshold) through two proxies that differ only in the live
// page's record keeping, alternating, and reports the median latency of
// each and the difference: what the page costs a request.
func BenchmarkRecordOverhead(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	engine := condense.New(condense.Deps{Counter: tokenizer.New(tokenizer.Options{}), Models: condense.ModelsFunc(func(string) condense.ModelLimits {
		return condense.ModelLimits{Window: 4_000_000, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
	})}, condense.Options{})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	tr := proxy.NewTransport(proxy.TransportOptions{})
	bare := httptest.NewServer(proxy.New(proxy.Options{Upstream: u, Condenser: engine, Transport: tr, Logger: quiet}))
	defer bare.Close()
	page := New(Options{Scope: scopeOf})
	defer page.Close()
	rec := httptest.NewServer(proxy.New(proxy.Options{Upstream: u, Condenser: engine, Transport: tr, Logger: quiet, Recorder: page, UI: page}))
	defer rec.Close()
	client := &http.Client{Transport: proxy.NewTransport(proxy.TransportOptions{})}

	// One agent conversation of 40 messages (~20 KB): every request is
	// counted and recorded, none condensed.
	var msgs []map[string]string
	msgs = append(msgs, map[string]string{"role": "system", "content": "You are a coding agent."})
	for i := 0; i < 40; i++ {
		msgs = append(msgs, map[string]string{"role": []string{"user", "assistant"}[i%2], "content": strings.Repeat(fmt.Sprintf("step %d ok. ", i), 40)})
	}
	body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": msgs})
	send := func(base string) time.Duration {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer sk-bench")
		req.Header.Set("User-Agent", "bench-agent/1.0")
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get(proxy.HeaderApplied) != condense.AppliedNone {
			b.Fatalf("status %d, applied %q: not a pass-through", resp.StatusCode, resp.Header.Get(proxy.HeaderApplied))
		}
		return time.Since(t0)
	}
	send(bare.URL) // warm the count cache and the connections
	send(rec.URL)
	var tb, tr2 []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tb = append(tb, send(bare.URL))
		tr2 = append(tr2, send(rec.URL))
	}
	b.StopTimer()
	pb, pr := median(tb), median(tr2)
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 }
	b.ReportMetric(ms(pb), "without-p50-ms")
	b.ReportMetric(ms(pr), "with-p50-ms")
	b.ReportMetric(ms(pr-pb), "added-p50-ms")
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// BenchmarkRecord is Record alone, with a report as the engine will fill
// it: 200 items' shapes each way and a summary and digests with texts.
func BenchmarkRecord(b *testing.B) {
	for _, tc := range []struct {
		name  string
		items int
	}{{"passthrough-200-items", 200}, {"condensed-200-items", 200}} {
		b.Run(tc.name, func(b *testing.B) {
			page := New(Options{Scope: scopeOf})
			ev := proxy.Event{Time: time.Now(), Scope: "scope", Route: "chat", Mode: "auto", UserAgent: "agent/1", Status: 200,
				Report: condense.Report{Counted: true, Model: "gpt-4o", Applied: condense.AppliedNone, Conversation: "conv",
					TokensBefore: 90000, TokensAfter: 90000, Window: 128000, Trigger: 102400, Messages: tc.items}}
			for i := 0; i < tc.items; i++ {
				ev.Report.Received = append(ev.Report.Received, condense.ItemShape{Role: []string{"user", "assistant", "tool"}[i%3], Tokens: 400})
			}
			if strings.HasPrefix(tc.name, "condensed") {
				ev.Report.Applied = condense.AppliedFull
				ev.Report.TokensAfter = 50000
				ev.Report.Forwarded = ev.Report.Received[:100]
				ev.Report.Changes = []condense.Change{{Kind: condense.ChangeSummary, ID: "s1", Level: 1, From: 2, To: 100, TokensBefore: 40000, TokensAfter: 1500, Text: strings.Repeat("summary text ", 400)}}
				for i := 0; i < 10; i++ {
					ev.Report.Changes = append(ev.Report.Changes, condense.Change{Kind: condense.ChangeDigest, ID: fmt.Sprint("d", i), From: 100 + i, To: 101 + i, Tool: "read_file", TokensBefore: 3000, TokensAfter: 200, Text: strings.Repeat("digest line\n", 60)})
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				page.Record(ev)
			}
		})
	}
}
