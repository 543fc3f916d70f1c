package app_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// TestOneCallerCannotEvictAnothersOriginals: without Redis, the
// originals' store is bounded per caller — a caller that condenses far
// more than originals_max_bytes pushes out its own oldest originals, and
// another caller's stay readable through the proxy.
func TestOneCallerCannotEvictAnothersOriginals(t *testing.T) {
	cfg := config.Defaults()
	cfg.Condense.Summarizer = "extractive"
	cfg.ScopeSecret = "a test's scope secret"
	cfg.OriginalsMaxBytes = 1 << 20
	cfg.Models = []config.ModelConfig{{Match: "*", ContextWindow: 16000}}
	fake := fakeupstream.New()
	a := newApp(t, &cfg, fake, app.Options{})
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)

	// condense sends seed's session as key and returns an originals id
	// of what was forwarded.
	condense := func(key string, seed int64) string {
		t.Helper()
		sess, _ := corpus.Synthetic(seed, 120_000)
		body, err := sess.Request("gpt-4o", 0)
		if err != nil {
			t.Fatal(err)
		}
		resp := postDrained(t, srv.URL+"/v1/chat/completions", bytes.NewReader(body), "Authorization", "Bearer "+key, proxy.HeaderMode, "truncate")
		if resp.Header.Get(proxy.HeaderApplied) != "truncate" {
			t.Fatalf("not condensed: %v", resp.Header)
		}
		m := originalsID.FindSubmatch(last(fake))
		if m == nil {
			t.Fatal("no originals id in the forwarded request")
		}
		return string(m[1])
	}
	readable := func(key, id string) bool {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+"/v1/condense/originals/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}

	mine := []string{condense("sk-victim", 1), condense("sk-victim", 2)}
	for _, id := range mine {
		if !readable("sk-victim", id) {
			t.Fatalf("original %s not readable before the flood", id)
		}
	}
	var theirs []string
	for i := range 20 {
		theirs = append(theirs, condense("sk-flood", int64(100+i)))
	}
	if readable("sk-flood", theirs[0]) {
		t.Fatalf("the flood (%d condensed requests) never filled originals_max_bytes: the test proves nothing", len(theirs))
	}
	if !readable("sk-flood", theirs[len(theirs)-1]) {
		t.Error("the flooding caller's newest original was evicted")
	}
	for _, id := range mine {
		if !readable("sk-victim", id) {
			t.Errorf("original %s evicted by another caller's requests", id)
		}
	}
}
