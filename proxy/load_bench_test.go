package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[min(len(d)-1, int(float64(len(d))*q))]
}

func bigWindowEngine() *condense.Engine {
	return condense.New(condense.Deps{Counter: tokenizer.New(tokenizer.Options{}), Models: condense.ModelsFunc(func(string) condense.ModelLimits {
		return condense.ModelLimits{Window: 4_000_000, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
	})}, condense.Options{})
}

// BenchmarkLoadPassThrough drives 32 concurrent clients at the fake
// upstream directly and through the proxy (same bodies, under threshold),
// and reports sustained requests per second and p50/p99 latency of each.
// b.N requests are sent each way, so the run is bounded.
func BenchmarkLoadPassThrough(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	ours := httptest.NewServer(New(Options{Upstream: u, Condenser: bigWindowEngine(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer ours.Close()
	// A bare reverse proxy: the cost of any second hop, for scale.
	bare := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }, Transport: NewTransport(TransportOptions{})})
	defer bare.Close()
	const workers = 32
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers, MaxIdleConns: workers}}
	run := func(base string, body []byte, n int) (rps float64, lat []time.Duration) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		jobs := make(chan struct{}, n)
		for i := 0; i < n; i++ {
			jobs <- struct{}{}
		}
		close(jobs)
		start := time.Now()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Duration
				for range jobs {
					t0 := time.Now()
					resp, err := client.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(body))
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		return float64(n) / time.Since(start).Seconds(), lat
	}
	for _, size := range []int{10 << 10, 200 << 10} {
		body := sizedChat(size)
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			run(ours.URL, body, workers) // warm connections and the count cache
			run(up.URL, body, workers)
			run(bare.URL, body, workers)
			b.ResetTimer()
			directRPS, direct := run(up.URL, body, b.N)
			bareRPS, viaBare := run(bare.URL, body, b.N)
			proxyRPS, via := run(ours.URL, body, b.N)
			b.ReportMetric(directRPS, "direct-req/s")
			b.ReportMetric(bareRPS, "bare-proxy-req/s")
			b.ReportMetric(proxyRPS, "proxy-req/s")
			b.ReportMetric(float64(quantile(viaBare, .5).Microseconds())/1000, "bare-p50-ms")
			b.ReportMetric(float64(quantile(direct, .5).Microseconds())/1000, "direct-p50-ms")
			b.ReportMetric(float64(quantile(via, .5).Microseconds())/1000, "proxy-p50-ms")
			b.ReportMetric(float64(quantile(direct, .99).Microseconds())/1000, "direct-p99-ms")
			b.ReportMetric(float64(quantile(via, .99).Microseconds())/1000, "proxy-p99-ms")
		})
	}
}

// BenchmarkConcurrentStreams opens 200 streaming clients at once, directly
// and through the proxy; the upstream sends 20 chunks 20 ms apart. Every
// stream must complete; the metrics compare the gaps between chunks as the
// clients see them.
func BenchmarkConcurrentStreams(b *testing.B) {
	fake := fakeupstream.New()
	fake.Chunks = 20
	fake.ChunkDelay = 20 * time.Millisecond
	up := httptest.NewServer(fake)
	defer up.Close()
	u, _ := url.Parse(up.URL)
	ours := httptest.NewServer(New(Options{Upstream: u, Condenser: bigWindowEngine(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer ours.Close()
	const clients = 200
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxIdleConns: clients}}
	body := []byte(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"stream please"}]}`)
	streams := func(base string) (gaps []time.Duration, incomplete int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := client.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(body))
				if err != nil {
					mu.Lock()
					incomplete++
					mu.Unlock()
					return
				}
				defer resp.Body.Close()
				br := bufio.NewReader(resp.Body)
				var mine []time.Duration
				last := time.Time{}
				done := false
				for {
					line, err := br.ReadString('\n')
					if strings.HasPrefix(line, "data: ") {
						now := time.Now()
						if !last.IsZero() {
							mine = append(mine, now.Sub(last))
						}
						last = now
						if strings.Contains(line, "[DONE]") {
							done = true
						}
					}
					if err != nil {
						break
					}
				}
				mu.Lock()
				gaps = append(gaps, mine...)
				if !done {
					incomplete++
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
		return gaps, incomplete
	}
	for i := 0; i < b.N; i++ {
		direct, badDirect := streams(up.URL)
		via, badVia := streams(ours.URL)
		if badDirect+badVia > 0 {
			b.Fatalf("%d direct and %d proxied streams did not complete", badDirect, badVia)
		}
		b.ReportMetric(float64(quantile(direct, .5).Microseconds())/1000, "direct-gap-p50-ms")
		b.ReportMetric(float64(quantile(via, .5).Microseconds())/1000, "proxy-gap-p50-ms")
		b.ReportMetric(float64(quantile(direct, .99).Microseconds())/1000, "direct-gap-p99-ms")
		b.ReportMetric(float64(quantile(via, .99).Microseconds())/1000, "proxy-gap-p99-ms")
	}
}
