package proxy

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestOpenRoutesNeverForward: with auth keys set, no method on /healthz,
// /readyz or /metrics reaches the upstream without a key, whatever the
// headers: their own methods are answered here, every other gets 405
// (Allow: GET, HEAD). Paths spelled another way take a guarded route:
// 401 without a key.
func TestOpenRoutesNeverForward(t *testing.T) {
	var reached atomic.Int32
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		io.Copy(io.Discard, r.Body)
	})
	h := newHarness(t, upstream, func(o *Options) { o.AuthKeys = []string{"inbound-key-0001"} })
	client := h.proxy.Client()
	headers := []map[string]string{
		nil,
		{"Content-Type": "application/json"},
		{"Authorization": "Bearer wrong"},
		{"X-Api-Key": "wrong"},
		{"Transfer-Encoding": "chunked"},
	}
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete,
		http.MethodPatch, http.MethodOptions, http.MethodTrace}
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/healthz/", "/%68ealthz", "/metrics/x"} {
		for _, m := range methods {
			for _, hdr := range headers {
				req, _ := http.NewRequest(m, h.proxy.URL+path, strings.NewReader(`{"model":"x","messages":[]}`))
				for k, v := range hdr {
					req.Header.Set(k, v)
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				open := path == "/healthz" || path == "/readyz" || path == "/metrics"
				switch {
				case open && (m == http.MethodGet || m == http.MethodHead):
					if resp.StatusCode != http.StatusOK && !(path == "/readyz" && resp.StatusCode == http.StatusServiceUnavailable) {
						t.Errorf("%s %s: %d", m, path, resp.StatusCode)
					}
				case open:
					if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
						t.Errorf("%s %s: %d (Allow %q), want 405", m, path, resp.StatusCode, resp.Header.Get("Allow"))
					}
				default:
					if resp.StatusCode != http.StatusUnauthorized {
						t.Errorf("%s %s without a key: %d, want 401", m, path, resp.StatusCode)
					}
				}
			}
		}
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("%d requests reached the upstream without a key", n)
	}
}
