package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
)

// TestInflightCap: with every place taken, a chat request waits
// InflightWait, then goes to the upstream byte for byte with
// X-Condense-Degraded saying why; once a place frees, requests are
// condensed again.
func TestInflightCap(t *testing.T) {
	entered := make(chan struct{}, 4)
	release := make(chan struct{})
	blocking := condenserFunc(func(ctx context.Context, req condense.Request) (condense.Result, error) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return condense.Result{}, ctx.Err()
		}
		return testEngine().Condense(ctx, req)
	})
	h := newHarness(t, nil, func(o *Options) {
		o.Condenser = blocking
		o.MaxInflight = 1
		o.InflightWait = 50 * time.Millisecond
	})
	first := make(chan int, 1)
	go func() { // no t.Fatal off the test's goroutine: the status is compared below
		resp, err := http.Post(h.proxy.URL+"/v1/chat/completions", "application/json", strings.NewReader(chatBody))
		if err != nil {
			first <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-entered // the first request holds the only place

	start := time.Now()
	resp := post(t, h.proxy.URL+"/v1/chat/completions", []byte(chatBody), nil)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get(HeaderDegraded), "max_inflight_condense") ||
		resp.Header.Get(HeaderApplied) != condense.AppliedNone || resp.Header.Get(HeaderTokensBefore) != "" {
		t.Fatalf("over the cap: status %d, headers %v", resp.StatusCode, resp.Header)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("forwarded after %v, before the wait was over", d)
	}
	got := h.fake.Received()
	if len(got) != 1 || !bytes.Equal(got[0].Body, []byte(chatBody)) {
		t.Fatalf("upstream got %d requests (want the busy one, unchanged)", len(got))
	}
	select {
	case <-entered:
		t.Fatal("the busy request reached the condenser")
	default:
	}

	close(release)
	if code := <-first; code != 200 {
		t.Fatalf("first request: %d", code)
	}
	resp = post(t, h.proxy.URL+"/v1/chat/completions", []byte(chatBody), nil)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Header.Get(HeaderDegraded) != "" || resp.Header.Get(HeaderTokensBefore) == "" {
		t.Errorf("after the place freed: headers %v", resp.Header)
	}
	// The busy request's log line says why; it is written when its
	// handler returns, which may be after its client read the answer.
	h.waitLog(t, "max_inflight_condense")
}

// TestInflightPlaceFreedOnEveryPath: requests refused (413), not
// decodable, or whose client left give their place back.
func TestInflightPlaceFreedOnEveryPath(t *testing.T) {
	h := newHarness(t, nil, func(o *Options) {
		o.MaxInflight = 1
		o.InflightWait = time.Millisecond
		o.MaxBodyBytes = 1 << 10
	})
	for range 3 {
		for _, tc := range []struct {
			body []byte
			hdr  map[string]string
		}{
			{bytes.Repeat([]byte("a"), 2<<10), nil},
			{[]byte("not gzip"), map[string]string{"Content-Encoding": "gzip"}},
			{[]byte(chatBody), nil},
		} {
			resp := post(t, h.proxy.URL+"/v1/chat/completions", tc.body, tc.hdr)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if d := resp.Header.Get(HeaderDegraded); strings.Contains(d, "busy") {
				t.Fatalf("a place was not given back: %q", d)
			}
		}
	}
}

// TestInflightShareOfACaller: one caller holds at most all but one of the
// places at once — its next request waits, then goes on unchanged — while
// another caller's request takes the place left.
func TestInflightShareOfACaller(t *testing.T) {
	entered := make(chan struct{}, 4)
	release := make(chan struct{})
	blocking := condenserFunc(func(ctx context.Context, req condense.Request) (condense.Result, error) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return condense.Result{}, ctx.Err()
		}
		return testEngine().Condense(ctx, req)
	})
	h := newHarness(t, nil, func(o *Options) {
		o.Condenser = blocking
		o.MaxInflight = 2
		o.InflightWait = 20 * time.Millisecond
	})
	a := map[string]string{"Authorization": "Bearer caller-a-key"}
	b := map[string]string{"Authorization": "Bearer caller-b-key"}
	first := make(chan struct{})
	go func() {
		defer close(first)
		req, _ := http.NewRequest(http.MethodPost, h.proxy.URL+"/v1/chat/completions", strings.NewReader(chatBody))
		req.Header.Set("Authorization", a["Authorization"])
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-entered // caller a holds one place of two: its share
	again := make(chan http.Header, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, h.proxy.URL+"/v1/chat/completions", strings.NewReader(chatBody))
		req.Header.Set("Authorization", a["Authorization"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			again <- nil
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		again <- resp.Header
	}()
	select {
	case <-entered:
		close(release)
		t.Fatal("caller a's second request took the second place")
	case hdr := <-again:
		if !strings.Contains(hdr.Get(HeaderDegraded), "max_inflight_condense") {
			t.Fatalf("caller a's second request: headers %v", hdr)
		}
	}
	second := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, h.proxy.URL+"/v1/chat/completions", strings.NewReader(chatBody))
		req.Header.Set("Authorization", b["Authorization"])
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		second <- resp
	}()
	<-entered // caller b's request reached the condenser: it had the place left
	close(release)
	<-first
	if r := <-second; r == nil || strings.Contains(r.Header.Get(HeaderDegraded), "max_inflight_condense") {
		t.Fatalf("caller b's request was busy")
	}
}
