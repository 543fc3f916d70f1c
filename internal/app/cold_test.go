package app_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/keepalive/keepalivetest"
)

// TestColdTurnKeptWarmByPings: through the stack serve builds, keep-alive
// on and the engine on the same manual clock as the pings. A conversation
// over the threshold ends its turn; its cache's lifetime passes. When the
// pings read the cache meanwhile, its next request is not a cold turn (the
// Keeper told the engine); when the first ping finds the cache gone, it
// is (X-Condense-Cold).
func TestColdTurnKeptWarmByPings(t *testing.T) {
	for _, pingsRead := range []bool{true, false} {
		var tool atomic.Bool
		up := newUpstream(&tool)
		up.write.Store(!pingsRead)
		clock := keepalivetest.New(time.Unix(1_700_000_000, 0))
		cfg := keepAliveConfig("cold turns, kept warm")
		cfg.Condense.Mode = "truncate"
		cfg.Models[0].ContextWindow = 8000
		srv := httptest.NewServer(up)
		t.Cleanup(srv.Close)
		cfg.Upstream = srv.URL
		a, err := app.New(context.Background(), cfg, app.Options{KeepAliveClock: clock, EngineClock: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			a.Close(ctx)
		})
		p := httptest.NewServer(a.Handler)
		t.Cleanup(p.Close)
		var turns []string
		for i := range 16 {
			turns = append(turns, longText[:1600]+string(rune('a'+i)))
		}
		send := func(n int) (applied, cold string) {
			resp := postDrained(t, p.URL+"/v1/messages?beta=true", bytes.NewReader(longConversation(turns[:n])), "Content-Type", "application/json",
				"x-api-key", "sk-ant-caller", "anthropic-version", "2023-06-01")
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			return resp.Header.Get("X-Condense-Applied"), resp.Header.Get("X-Condense-Cold")
		}
		if applied, cold := send(15); applied == "none" || cold != "" {
			t.Fatalf("first request: applied %s, cold %q: the premise (over the threshold, condensed) does not hold", applied, cold)
		}
		waitAnswers(t, a.KeepAlive, 1)
		clock.Advance(cacheTTL + 10*time.Second) // the first ping at the TTL less its lead
		if n := len(up.pings()); n != 1 {
			t.Fatalf("%d pings, want 1", n)
		}
		applied, cold := send(16)
		if applied == "none" {
			t.Fatalf("second request not condensed")
		}
		if want := map[bool]string{true: "", false: "true"}[pingsRead]; cold != want {
			t.Errorf("pings read the cache: %v; the next request's X-Condense-Cold %q, want %q", pingsRead, cold, want)
		}
	}
}

// longConversation is a Messages request of the given user turns (answers
// between them), streamed, one cache breakpoint on the system prompt.
func longConversation(turns []string) []byte {
	var msgs []string
	for i, t := range turns {
		if i > 0 {
			msgs = append(msgs, `{"role":"assistant","content":[{"type":"text","text":"Done."}]}`)
		}
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":%q}]}`, t))
	}
	return []byte(fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":32000,"stream":true,"system":[{"type":"text","text":%q,"cache_control":{"type":"ephemeral"}}],"messages":[%s]}`,
		longText, strings.Join(msgs, ",")))
}
