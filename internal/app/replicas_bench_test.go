package app_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
)

// BenchmarkLoadReplicas: 32 concurrent clients send the turns of a long
// conversation (condensed, summaries shared through Redis) through a
// round-robin balancer in front of one replica, then of two replicas on
// the same Redis, built as serve builds them; requests per second and
// p50/p99 latency of each. b.N requests each way.
func BenchmarkLoadReplicas(b *testing.B) {
	sess, _ := corpus.Synthetic(23, 300_000)
	var bodies [][]byte
	for _, n := range sess.TurnEnds() {
		body, _ := sess.Request("gpt-4o", n)
		bodies = append(bodies, body)
	}
	bodies = bodies[len(bodies)/2:] // the condensed half
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			secret := fmt.Sprint("bench ", time.Now().UnixNano())
			sum := &countingSummarizer{calls: map[string]int{}}
			var backends []*url.URL
			for i := 0; i < n; i++ {
				r := newReplica(b, "redis://127.0.0.1:6379/0", "", secret, sum)
				u, _ := url.Parse(r.srv.URL)
				backends = append(backends, u)
			}
			var next atomic.Uint64
			lb := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(backends[next.Add(1)%uint64(len(backends))])
			}, FlushInterval: -1})
			defer lb.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
			send := func(body []byte) time.Duration {
				t0 := time.Now()
				req, _ := http.NewRequest("POST", lb.URL+"/v1/chat/completions", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer sk-bench")
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return 0
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || resp.Header.Get("X-Condense-Applied") == "none" {
					b.Errorf("status %d, applied %q", resp.StatusCode, resp.Header.Get("X-Condense-Applied"))
				}
				return time.Since(t0)
			}
			for _, body := range bodies { // warm: summaries written once
				send(body)
			}
			var mu sync.Mutex
			var lat []time.Duration
			var wg sync.WaitGroup
			jobs := make(chan int, b.N)
			for i := 0; i < b.N; i++ {
				jobs <- i
			}
			close(jobs)
			b.ResetTimer()
			start := time.Now()
			for w := 0; w < 32; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range jobs {
						d := send(bodies[i%len(bodies)])
						mu.Lock()
						lat = append(lat, d)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
		})
	}
}
