package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

func sizedChat(size int) []byte {
	var msgs []map[string]string
	msgs = append(msgs, map[string]string{"role": "system", "content": "You are a coding agent."})
	n := 0
	for i := 0; n < size; i++ {
		c := strings.Repeat(fmt.Sprintf("line %d of a tool output: ok\n", i), 40)
		role := []string{"user", "assistant"}[i%2]
		msgs = append(msgs, map[string]string{"role": role, "content": c})
		n += len(c) + 40
	}
	b, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "messages": msgs})
	return b
}

func p50(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// BenchmarkPassThroughOverhead sends the same chat body through a bare
// httputil.ReverseProxy and through condense-proxy (warm count cache,
// under threshold), alternating, and reports the added median latency and
// the added CPU time per request (see processCPU).
func BenchmarkPassThroughOverhead(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	tr := NewTransport(TransportOptions{})
	bare := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }, Transport: tr})
	defer bare.Close()
	// A window large enough that every body stays under the threshold:
	// this measures pass-through, not condensing.
	big := condense.New(condense.Deps{Counter: tokenizer.New(tokenizer.Options{}), Models: condense.ModelsFunc(func(string) condense.ModelLimits {
		return condense.ModelLimits{Window: 4_000_000, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
	})}, condense.Options{})
	ours := httptest.NewServer(New(Options{Upstream: u, Condenser: big, Transport: tr,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer ours.Close()
	client := &http.Client{Transport: NewTransport(TransportOptions{})}

	send := func(base string, body []byte) time.Duration {
		t0 := time.Now()
		resp, err := client.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		if a := resp.Header.Get(HeaderApplied); a != "" && a != "none" {
			b.Fatalf("condensed (%s): not a pass-through", a)
		}
		return time.Since(t0)
	}
	for _, size := range []int{10 << 10, 100 << 10, 1 << 20} {
		body := sizedChat(size)
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			send(ours.URL, body) // warm the count cache
			var tb, to []time.Duration
			var cb, co time.Duration
			b.SetBytes(int64(len(body)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c0 := processCPU()
				tb = append(tb, send(bare.URL, body))
				c1 := processCPU()
				to = append(to, send(ours.URL, body))
				cb, co = cb+c1-c0, co+processCPU()-c1
			}
			b.StopTimer()
			pb, po := p50(tb), p50(to)
			b.ReportMetric(float64(pb.Microseconds())/1000, "bare-p50-ms")
			b.ReportMetric(float64(po.Microseconds())/1000, "proxy-p50-ms")
			b.ReportMetric(float64((po-pb).Microseconds())/1000, "added-p50-ms")
			b.ReportMetric(float64((co-cb).Microseconds())/1000/float64(b.N), "added-cpu-ms")
		})
	}
}
