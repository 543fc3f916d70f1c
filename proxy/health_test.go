package proxy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestReadyzCache: /readyz answers 503 for a cache that does not answer
// unless the cache says it runs degraded (misses served).
func TestReadyzCache(t *testing.T) {
	tests := []struct {
		name     string
		cache    Pinger
		degraded func() bool
		want     int
		says     string
	}{
		{"no cache", nil, nil, 200, `"cache":"memory"`},
		{"reachable", upCache{}, func() bool { return false }, 200, `"cache":"ok"`},
		{"unreachable, no degraded check", downCache{}, nil, 503, "unreachable"},
		{"unreachable, not degraded", downCache{}, func() bool { return false }, 503, "unreachable"},
		{"unreachable, degraded", downCache{}, func() bool { return true }, 200, "degraded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, func(o *Options) { o.Cache = tc.cache; o.CacheDegraded = tc.degraded })
			resp, err := http.Get(h.proxy.URL + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want || !strings.Contains(string(body), tc.says) {
				t.Fatalf("readyz %d %s, want %d and %q", resp.StatusCode, body, tc.want, tc.says)
			}
		})
	}
}

type upCache struct{}

func (upCache) Ping(context.Context) error { return nil }
