package proxy

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// BenchmarkPassThroughHandler is the proxy's own work on a 1 MB request
// under the threshold, in each format, without sockets: the handler is
// called in process and the upstream is a transport that drains the body.
// What it reports per op (time, bytes and allocations) is the proxy's
// alone, which the end-to-end PassThroughOverhead benchmarks mix with the
// client's, the upstream's and the bare proxy's.
func BenchmarkPassThroughHandler(b *testing.B) {
	answer := `{"id":"x"}`
	up := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Body != nil {
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(answer)), ContentLength: int64(len(answer)), Request: r}, nil
	})
	u, _ := url.Parse("http://upstream.test")
	big := condense.New(condense.Deps{Counter: tokenizer.New(tokenizer.Options{}), Models: condense.ModelsFunc(func(string) condense.ModelLimits {
		return condense.ModelLimits{Window: 4_000_000, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
	})}, condense.Options{})
	p := New(Options{Upstream: u, Condenser: big, Transport: up, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, f := range []struct {
		name, path string
		sized      func(int) []byte
	}{
		{"chat", "/v1/chat/completions", sizedChat},
		{"responses", "/v1/responses", sizedResponses},
		{"messages", "/v1/messages", sizedMessages},
	} {
		body := f.sized(1 << 20)
		send := func() {
			w := httptest.NewRecorder()
			p.ServeHTTP(w, httptest.NewRequest(http.MethodPost, f.path, bytes.NewReader(body)))
			if w.Code != http.StatusOK || w.Header().Get(HeaderApplied) != condense.AppliedNone {
				b.Fatalf("status %d, applied %q: not a counted pass-through", w.Code, w.Header().Get(HeaderApplied))
			}
		}
		b.Run(f.name+"/1MB", func(b *testing.B) {
			send() // warm the count cache
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				send()
			}
		})
	}
}
