package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// TestAdminKeyOpensOriginalsFromThePage: the page's "show originals" link,
// followed with an admin key (ui.keys), answers the originals of another
// caller's conversation.
func TestAdminKeyOpensOriginalsFromThePage(t *testing.T) {
	cfg := config.Defaults()
	cfg.Condense.Summarizer = "extractive"
	cfg.ScopeSecret = "a test's scope secret"
	cfg.Auth.Keys = []string{"sk-agent"}
	cfg.UI.Enabled = true
	cfg.UI.Keys = []string{"sk-admin"}
	cfg.Models = []config.ModelConfig{{Match: "*", ContextWindow: 16000}}
	a := newApp(t, &cfg, fakeupstream.New(), app.Options{})
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	sess, _ := corpus.Synthetic(5, 120_000)
	body, err := sess.Request("gpt-4o", 0)
	if err != nil {
		t.Fatal(err)
	}
	resp := postDrained(t, srv.URL+"/v1/chat/completions", bytes.NewReader(body), "Authorization", "Bearer sk-agent", proxy.HeaderMode, "truncate")
	if resp.Header.Get(proxy.HeaderApplied) != "truncate" {
		t.Fatalf("not condensed: %v", resp.Header)
	}
	get := func(path string, out any) int {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer sk-admin")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if out != nil && resp.StatusCode == 200 {
			if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		return resp.StatusCode
	}
	var list struct {
		Conversations []struct {
			ID       string `json:"id"`
			Requests int    `json:"requests"`
		} `json:"conversations"`
	}
	if code := get("/ui/api/conversations", &list); code != 200 || len(list.Conversations) != 1 {
		t.Fatalf("list: %d, %d conversations", code, len(list.Conversations))
	}
	c := list.Conversations[0]
	var detail struct {
		Request struct {
			Changes []struct {
				ID        string `json:"id"`
				Originals string `json:"originals"`
			} `json:"changes"`
		} `json:"request"`
	}
	if code := get(fmt.Sprintf("/ui/api/conversations/%s/requests/%d", c.ID, c.Requests), &detail); code != 200 {
		t.Fatalf("detail: %d", code)
	}
	opened := 0
	for _, ch := range detail.Request.Changes {
		if ch.Originals == "" {
			continue
		}
		var got struct {
			ID       string          `json:"id"`
			Messages json.RawMessage `json:"messages"`
		}
		if code := get(ch.Originals, &got); code != 200 || got.ID != ch.ID || len(got.Messages) < 2 {
			t.Errorf("originals %s with the admin key: %d %+v", ch.Originals, code, got)
		}
		opened++
	}
	if opened == 0 {
		t.Fatalf("no change with originals on the page: %+v", detail)
	}
}
