package app_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/keepalive"
	"github.com/condense-proxy/condense-proxy/keepalive/keepalivetest"
)

// cacheTTL is the models' prompt-cache lifetime in these tests.
const cacheTTL = time.Minute

// promptCache stands in front of the strict fakes as a provider's prompt
// cache shows in usage: a JSON answer (a ping's) reports its prompt read
// from the cache, or written to it when write is set. It records every
// request with the status the fake answered.
type promptCache struct {
	next  http.Handler
	write atomic.Bool

	mu  sync.Mutex
	got []seenRequest
}

type seenRequest struct {
	path, query string
	header      http.Header
	body        []byte
	status      int
}

func (p *promptCache) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	p.next.ServeHTTP(rec, r)
	p.mu.Lock()
	p.got = append(p.got, seenRequest{r.URL.Path, r.URL.RawQuery, r.Header.Clone(), body, rec.Code})
	p.mu.Unlock()
	out := rec.Body.Bytes()
	if rec.Code == 200 && strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		out = p.usage(out)
	}
	for k, v := range rec.Header() {
		if k != "Content-Length" {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(rec.Code)
	w.Write(out)
}

func (p *promptCache) usage(out []byte) []byte {
	set := func(path string, v int64) { out, _ = sjson.SetBytes(out, path, v) }
	u := gjson.GetBytes(out, "usage")
	switch {
	case u.Get("prompt_tokens").Exists(): // chat: make the prompt a real one
		set("usage.prompt_tokens", 5000)
		if !p.write.Load() {
			set("usage.prompt_tokens_details.cached_tokens", 4992)
		}
	case u.Get("input_tokens_details").Exists(): // Responses
		if !p.write.Load() {
			set("usage.input_tokens_details.cached_tokens", u.Get("input_tokens").Int())
		}
	default: // Messages
		n := u.Get("input_tokens").Int()
		set("usage.input_tokens", 0)
		if p.write.Load() {
			set("usage.cache_creation_input_tokens", n)
		} else {
			set("usage.cache_read_input_tokens", n)
		}
	}
	return out
}

func (p *promptCache) requests() []seenRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]seenRequest(nil), p.got...)
}

// pings are the requests that were not streamed (the agents' all are).
func (p *promptCache) pings() []seenRequest {
	var out []seenRequest
	for _, r := range p.requests() {
		if !gjson.GetBytes(r.body, "stream").Bool() {
			out = append(out, r)
		}
	}
	return out
}

// keepAliveStack is one proxy built by app.New with keep-alive on, in
// front of the fakes; toolUse makes the Messages fake call a tool.
type keepAliveStack struct {
	app     *app.App
	srv     *httptest.Server
	toolUse *atomic.Bool
}

func newKeepAliveStack(t *testing.T, cfg *config.Config, up *promptCache, clock *keepalivetest.Clock) keepAliveStack {
	t.Helper()
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	cfg.Upstream = srv.URL
	a, err := app.New(context.Background(), cfg, app.Options{KeepAliveClock: clock})
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
	return keepAliveStack{app: a, srv: p}
}

// newUpstream is the strict fakes behind a promptCache; the Messages fake
// calls a tool while toolUse is set.
func newUpstream(toolUse *atomic.Bool) *promptCache {
	m := &fakeupstream.Messages{Answer: func([]byte) fakeupstream.Reply {
		if toolUse.Load() {
			return fakeupstream.Reply{Text: "Let me look.", Calls: []fakeupstream.Call{{Name: "Bash", Input: `{"command":"ls"}`}}}
		}
		return fakeupstream.Reply{Text: "Done: the tests pass."}
	}}
	return &promptCache{next: fakeupstream.Mux(fakeupstream.New(), m, &fakeupstream.Responses{})}
}

func keepAliveConfig(secret string) *config.Config {
	cfg := config.Defaults()
	cfg.ScopeSecret = secret
	cfg.Condense.Mode = "off"
	cfg.Models = []config.ModelConfig{{Match: "*", CacheTTL: cacheTTL}}
	cfg.KeepAlive = config.KeepAlive{Enabled: true, Models: []string{}, MaxPings: 2, MinPrefixTokens: 1000}
	return &cfg
}

// coldKeepAlive condenses in auto mode with a window the requests
// outgrow, cold turns on or off, and allows five pings a gap.
func coldKeepAlive(cold bool) func(*config.Config) {
	return func(c *config.Config) {
		c.Condense.Mode = "auto"
		c.Condense.ColdTurns = cold
		c.Condense.Target = 0.17
		c.Models[0].ContextWindow = 3500
		c.KeepAlive.MaxPings = 5
	}
}

var longText = strings.Repeat("The agent reads the repository's files and runs the test suite again. ", 200)

// A Claude Code-like Messages request of the given user turns (answers
// between them), streamed.
func messagesRequest(turns ...string) []byte {
	var msgs []string
	for i, t := range turns {
		if i > 0 {
			msgs = append(msgs, `{"role":"assistant","content":[{"type":"text","text":"Done."}]}`)
		}
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":%q,"cache_control":{"type":"ephemeral"}}]}`, t))
	}
	return []byte(fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":32000,"stream":true,"system":[{"type":"text","text":%q,"cache_control":{"type":"ephemeral"}}],"metadata":{"user_id":"u"},"messages":[%s]}`,
		longText, strings.Join(msgs, ",")))
}

func chatRequest() []byte {
	return []byte(fmt.Sprintf(`{"model":"gpt-5","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":%q},{"role":"user","content":"Fix the test."}]}`, longText))
}

func responsesRequest() []byte {
	return []byte(fmt.Sprintf(`{"model":"gpt-5.5","stream":true,"store":false,"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":%q}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"Fix the test."}]}]}`, longText))
}

// call sends body to path as the agent does and reads the whole answer.
func call(t *testing.T, s keepAliveStack, path string, body []byte) {
	t.Helper()
	resp := postDrained(t, s.srv.URL+path, bytes.NewReader(body), "Content-Type", "application/json", "x-api-key", "sk-ant-caller",
		"Authorization", "Bearer sk-caller", "anthropic-version", "2023-06-01", "anthropic-beta", "prompt-caching-scope-2026-01-05")
	if resp.StatusCode != 200 {
		t.Fatalf("%s: status %d", path, resp.StatusCode)
	}
}

// waitAnswers waits until the stack's Keeper has watched n answers to
// their end (the proxy ends the watch as the handler returns, which may be
// after the client has read the answer).
func waitAnswers(t *testing.T, k *keepalive.Keeper, n uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for k.Stats().Answers < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d answers watched, want %d", k.Stats().Answers, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// checkPing: ping is forwarded with only the output limit, stream and
// stream_options changed, on the same path with the same headers.
func checkPing(t *testing.T, ping, forwarded seenRequest, limitKey string, limit int64) {
	t.Helper()
	if ping.status != 200 {
		t.Errorf("the strict fake refused the ping: %d", ping.status)
	}
	if ping.path != forwarded.path || ping.query != forwarded.query {
		t.Errorf("ping to %s?%s, request to %s?%s", ping.path, ping.query, forwarded.path, forwarded.query)
	}
	for _, h := range []string{"X-Api-Key", "Authorization", "Anthropic-Version", "Anthropic-Beta"} {
		if ping.header.Get(h) != forwarded.header.Get(h) || ping.header.Get(h) == "" {
			t.Errorf("%s: ping %q, request %q", h, ping.header.Get(h), forwarded.header.Get(h))
		}
	}
	if got := gjson.GetBytes(ping.body, limitKey).Int(); got != limit {
		t.Errorf("%s %d, want %d", limitKey, got, limit)
	}
	if gjson.GetBytes(ping.body, "stream").Bool() || gjson.GetBytes(ping.body, "stream_options").Exists() {
		t.Error("the ping streams")
	}
	strip := func(b []byte) []byte {
		for _, k := range []string{limitKey, "stream", "stream_options"} {
			b, _ = sjson.DeleteBytes(b, k)
		}
		return b
	}
	if !bytes.Equal(strip(ping.body), strip(forwarded.body)) {
		t.Errorf("the ping is not the last forwarded body:\n%.300s\n%.300s", ping.body, forwarded.body)
	}
}

// TestKeepAlive: through the stack serve builds, with a manual clock and
// a one-minute cache TTL.
func TestKeepAlive(t *testing.T) {
	type env struct {
		s     keepAliveStack
		up    *promptCache
		clock *keepalivetest.Clock
		tool  *atomic.Bool
	}
	cases := []struct {
		name     string
		edit     func(*config.Config)
		run      func(t *testing.T, e env)
		pings    int
		limitKey string
		limit    int64
	}{
		{"Messages: end turn, then silence: max_pings pings of the last request, the first before the TTL", nil, func(t *testing.T, e env) {
			call(t, e.s, "/v1/messages?beta=true", messagesRequest("Fix the failing test."))
			waitAnswers(t, e.s.app.KeepAlive, 1)
			e.clock.Advance(cacheTTL - time.Second)
			if n := len(e.up.pings()); n != 1 {
				t.Fatalf("%d pings within the TTL, want 1", n)
			}
			e.clock.Advance(time.Hour)
		}, 2, "max_tokens", 1},
		{"chat, a reasoning model", nil, func(t *testing.T, e env) {
			call(t, e.s, "/v1/chat/completions", chatRequest())
			waitAnswers(t, e.s.app.KeepAlive, 1)
			e.clock.Advance(time.Hour)
		}, 2, "max_completion_tokens", 1},
		{"Responses", nil, func(t *testing.T, e env) {
			call(t, e.s, "/v1/responses", responsesRequest())
			waitAnswers(t, e.s.app.KeepAlive, 1)
			e.clock.Advance(time.Hour)
		}, 2, "max_output_tokens", 16},
		{"max_pings 1", func(c *config.Config) { c.KeepAlive.MaxPings = 1 }, func(t *testing.T, e env) {
			call(t, e.s, "/v1/messages", messagesRequest("Fix the failing test."))
			waitAnswers(t, e.s.app.KeepAlive, 1)
			e.clock.Advance(time.Hour)
		}, 1, "max_tokens", 1},
		{"after a tool-use answer: none", nil, func(t *testing.T, e env) {
			e.tool.Store(true)
			call(t, e.s, "/v1/messages", messagesRequest("Fix the failing test."))
			waitAnswers(t, e.s.app.KeepAlive, 1)
			e.clock.Advance(time.Hour)
		}, 0, "", 0},
		{"disabled: none", func(c *config.Config) { c.KeepAlive.Enabled = false }, func(t *testing.T, e env) {
			if e.s.app.KeepAlive != nil {
				t.Fatal("a Keeper although disabled")
			}
			call(t, e.s, "/v1/messages", messagesRequest("Fix the failing test."))
			e.clock.Advance(time.Hour)
			if n := e.clock.Pending(); n != 0 {
				t.Errorf("%d scheduled", n)
			}
		}, 0, "", 0},
		{"another model than keepalive.models: none", func(c *config.Config) { c.KeepAlive.Models = []string{"claude-opus-*"} }, func(t *testing.T, e env) {
			// Not watched at all: decided before the request is forwarded.
			call(t, e.s, "/v1/messages", messagesRequest("Fix the failing test."))
			e.clock.Advance(time.Hour)
		}, 0, "", 0},
		{"the next request stops them", nil, func(t *testing.T, e env) {
			call(t, e.s, "/v1/messages", messagesRequest("Fix the failing test."))
			waitAnswers(t, e.s.app.KeepAlive, 1)
			e.clock.Advance(cacheTTL / 2)
			e.tool.Store(true)
			call(t, e.s, "/v1/messages", messagesRequest("Fix the failing test.", "Now the other one."))
			waitAnswers(t, e.s.app.KeepAlive, 2)
			e.clock.Advance(time.Hour)
		}, 0, "", 0},
		// A window of 3500 at threshold 0.8 and target 0.17: the request
		// (about 2900 tokens) is over the threshold, and a cold turn
		// condenses it to 595: going cold then adds less than two pings of the
		// whole prompt cost.
		{"condensing cold turns: the pings that cost less than a cold turn adds, then the cache goes cold", coldKeepAlive(true), func(t *testing.T, e env) {
			call(t, e.s, "/v1/messages", messagesRequest("Fix the failing test."))
			waitAnswers(t, e.s.app.KeepAlive, 1)
			e.clock.Advance(time.Hour)
		}, 1, "max_tokens", 1},
		{"cold turns off: max_pings", coldKeepAlive(false), func(t *testing.T, e env) {
			call(t, e.s, "/v1/messages", messagesRequest("Fix the failing test."))
			waitAnswers(t, e.s.app.KeepAlive, 1)
			e.clock.Advance(time.Hour)
		}, 5, "max_tokens", 1},
		{"a ping that reports a cache write: none after it", nil, func(t *testing.T, e env) {
			e.up.write.Store(true)
			call(t, e.s, "/v1/messages", messagesRequest("Fix the failing test."))
			waitAnswers(t, e.s.app.KeepAlive, 1)
			e.clock.Advance(time.Hour)
			e.up.write.Store(false)
			// Not watched: the conversation is no longer pinged.
			call(t, e.s, "/v1/messages", messagesRequest("Fix the failing test.", "Now the other one."))
			e.clock.Advance(time.Hour)
		}, 1, "max_tokens", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := keepAliveConfig("keep-alive test secret")
			if tc.edit != nil {
				tc.edit(cfg)
			}
			tool := &atomic.Bool{}
			up := newUpstream(tool)
			clock := keepalivetest.New(time.Unix(1_700_000_000, 0))
			e := env{s: newKeepAliveStack(t, cfg, up, clock), up: up, clock: clock, tool: tool}
			tc.run(t, e)
			pings := up.pings()
			if len(pings) != tc.pings {
				t.Fatalf("%d pings, want %d", len(pings), tc.pings)
			}
			if tc.pings == 0 {
				return
			}
			reqs := up.requests()
			first := reqs[0]
			for _, p := range pings {
				checkPing(t, p, first, tc.limitKey, tc.limit)
			}
			if s := e.s.app.KeepAlive.Stats(); s.Pings != uint64(tc.pings) {
				t.Errorf("stats %+v", s)
			}
		})
	}
}

// TestKeepAliveMetrics: /metrics counts the pings, the cache reads they
// bought and the estimated net saving once the conversation came back.
func TestKeepAliveMetrics(t *testing.T) {
	tool := &atomic.Bool{}
	up := newUpstream(tool)
	clock := keepalivetest.New(time.Unix(1_700_000_000, 0))
	s := newKeepAliveStack(t, keepAliveConfig("keep-alive test secret"), up, clock)
	call(t, s, "/v1/messages", messagesRequest("Fix the failing test."))
	waitAnswers(t, s.app.KeepAlive, 1)
	clock.Advance(cacheTTL + cacheTTL/2) // one ping
	// The user is back after the TTL, unstreamed this time, so that the
	// promptCache's usage says the prompt was read: the re-write the ping
	// avoided is credited.
	back, _ := sjson.SetBytes(messagesRequest("Fix the failing test.", "Now the other one."), "stream", false)
	call(t, s, "/v1/messages", back)
	waitAnswers(t, s.app.KeepAlive, 2)
	resp, err := http.Get(s.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"condense_keepalive_pings_total 1", "condense_keepalive_ping_cache_read_tokens_total ",
		"condense_keepalive_net_saving_tokens ", "condense_keepalive_ping_cost_tokens_total "} {
		if !strings.Contains(string(text), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(string(text), "condense_keepalive_ping_cache_read_tokens_total 0\n") {
		t.Error("the ping's cache read is not counted")
	}
	if st := s.app.KeepAlive.Stats(); st.Avoided <= 0 || st.NetSaving() <= 0 || st.NetSaving() >= st.Avoided {
		t.Errorf("avoided %g, net saving %g", st.Avoided, st.NetSaving())
	}
	resp, err = http.Get(s.srv.URL + "/ui/api/overview")
	if err != nil {
		t.Fatal(err)
	}
	ov, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := gjson.GetBytes(ov, "keepalive.pings").Int(); got != 1 {
		t.Errorf("the page's overview says %d pings: %s", got, gjson.GetBytes(ov, "keepalive").Raw)
	}
}

// TestKeepAliveOneReplicaPings: two stacks on one Redis; the one that
// served a conversation's last request pings it, the other none.
func TestKeepAliveOneReplicaPings(t *testing.T) {
	secret := fmt.Sprint("keep-alive replicas ", time.Now().UnixNano()) // fresh keys every run
	tool := &atomic.Bool{}
	up := newUpstream(tool)
	clock := keepalivetest.New(time.Unix(1_700_000_000, 0))
	cfgA, cfgB := keepAliveConfig(secret), keepAliveConfig(secret)
	cfgA.RedisURL, cfgB.RedisURL = "redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"
	a := newKeepAliveStack(t, cfgA, up, clock)
	b := newKeepAliveStack(t, cfgB, up, clock)
	if err := a.app.Cache.Ping(context.Background()); err != nil {
		t.Skipf("no Redis: %v", err)
	}
	call(t, a, "/v1/messages", messagesRequest("Fix the failing test."))
	waitAnswers(t, a.app.KeepAlive, 1)
	clock.Advance(cacheTTL / 2)
	second := messagesRequest("Fix the failing test.", "Now the other one.")
	call(t, b, "/v1/messages", second)
	waitAnswers(t, b.app.KeepAlive, 1)
	clock.Advance(time.Hour)
	pings := up.pings()
	if len(pings) != 2 {
		t.Fatalf("%d pings, want 2", len(pings))
	}
	for _, p := range pings {
		if !strings.Contains(string(p.body), "Now the other one.") {
			t.Errorf("a ping of the first request, which the other replica served next: %.200s", p.body)
		}
	}
	if sa, sb := a.app.KeepAlive.Stats(), b.app.KeepAlive.Stats(); sa.Pings != 0 || sa.Yielded != 1 || sb.Pings != 2 {
		t.Errorf("first replica %+v, second %+v", sa, sb)
	}
}
