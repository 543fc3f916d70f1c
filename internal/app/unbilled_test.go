package app_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
)

// TestFailedRequestsAreNotBilled: a request the upstream answers 502 adds
// nothing to the estimated bill in /metrics; the same request answered
// 200 does.
func TestFailedRequestsAreNotBilled(t *testing.T) {
	var fail atomic.Bool
	fake := fakeupstream.New()
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			io.Copy(io.Discard, r.Body)
			http.Error(w, `{"error":{"message":"bad gateway"}}`, http.StatusBadGateway)
			return
		}
		fake.ServeHTTP(w, r)
	})
	cfg := config.Defaults()
	a := newApp(t, &cfg, upstream, app.Options{})
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)

	bill := func() float64 {
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		sum := 0.0
		for _, m := range regexp.MustCompile(`(?m)^condense_bill_estimated_total\{[^}]*\} (\S+)$`).FindAllSubmatch(b, -1) {
			v, _ := strconv.ParseFloat(string(m[1]), 64)
			sum += v
		}
		return sum
	}
	send := func(wantStatus int) {
		body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hello there, how are you today?"}]}`)
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != wantStatus {
			t.Fatalf("status %d, want %d", resp.StatusCode, wantStatus)
		}
	}
	fail.Store(true)
	send(http.StatusBadGateway)
	if b := bill(); b != 0 {
		t.Errorf("a 502 billed %.1f", b)
	}
	fail.Store(false)
	send(http.StatusOK)
	if b := bill(); b <= 0 {
		t.Errorf("a 200 billed %.1f: the premise does not hold", b)
	}
}
