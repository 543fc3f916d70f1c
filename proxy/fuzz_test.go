package proxy

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
)

// FuzzChatRequest sends arbitrary bytes, under arbitrary encodings, to the
// chat endpoint: the proxy must never panic, and what reaches the upstream
// is either the decoded body or the body as received, byte for byte.
func FuzzChatRequest(f *testing.F) {
	f.Add([]byte(chatBody), "")
	f.Add([]byte(`{"model":"gpt-4o","messages":[{"role":"tool","tool_call_id":"x","content":"y"}]}`), "")
	f.Add([]byte("\x1f\x8b\x08\x00garbage"), "gzip")
	f.Add([]byte(`{"messages":[`), "deflate")
	f.Add([]byte(`not json`), "br")
	fake := fakeupstream.New()
	up := httptest.NewServer(fake)
	defer up.Close()
	u, _ := url.Parse(up.URL)
	h := New(Options{Upstream: u, Condenser: testEngine(), MaxBodyBytes: 1 << 20, MaxDecompressedBytes: 1 << 20,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	f.Fuzz(func(t *testing.T, body []byte, encoding string) {
		for _, b := range []byte(encoding) {
			if b < 0x20 || b > 0x7e {
				return // not a valid header value; net/http would refuse it
			}
		}
		fake.Reset()
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
		if encoding != "" {
			req.Header.Set("Content-Encoding", encoding)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		got := fake.Received()
		if rec.Code == http.StatusRequestEntityTooLarge {
			if len(got) != 0 {
				t.Fatal("oversized body forwarded")
			}
			return
		}
		if len(got) != 1 {
			t.Fatalf("upstream got %d requests (status %d)", len(got), rec.Code)
		}
		fwd := got[0].Body
		if bytes.Equal(fwd, body) {
			return
		}
		dec, decoded, err := decodeBody(body, encoding, 1<<20)
		if err != nil || !decoded || !bytes.Equal(fwd, dec) {
			t.Fatalf("forwarded body is neither the received nor the decoded body")
		}
	})
}
