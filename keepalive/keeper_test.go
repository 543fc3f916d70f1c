package keepalive_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/messages"
	"github.com/condense-proxy/condense-proxy/keepalive"
	"github.com/condense-proxy/condense-proxy/keepalive/keepalivetest"
	"github.com/condense-proxy/condense-proxy/view"
)

const ttl = 5 * time.Minute

// upstream records pings and answers them as Anthropic does, with the
// usage read (or, when write is set, written) from the cache.
type upstream struct {
	mu    sync.Mutex
	got   []*http.Request
	body  [][]byte
	write bool
	srv   *httptest.Server
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.got, u.body = append(u.got, r), append(u.body, b)
		write := u.write
		u.mu.Unlock()
		usage := `{"input_tokens":3,"cache_read_input_tokens":20000,"cache_creation_input_tokens":0,"output_tokens":1}`
		if write {
			usage = `{"input_tokens":3,"cache_read_input_tokens":0,"cache_creation_input_tokens":20000,"output_tokens":1}`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"type":"message","content":[{"type":"text","text":"O"}],"stop_reason":"max_tokens","usage":%s}`, usage)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) pings() [][]byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([][]byte(nil), u.body...)
}

func (u *upstream) setWrite(v bool) {
	u.mu.Lock()
	u.write = v
	u.mu.Unlock()
}

// mapStore is a Store shared by two Keepers (Redis's stand-in).
type mapStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *mapStore) Get(_ context.Context, k string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	return v, ok
}

func (s *mapStore) Set(_ context.Context, k string, v []byte, _ time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[k] = v
}

func newKeeper(t *testing.T, u *upstream, clock *keepalivetest.Clock, edit func(*keepalive.Options)) *keepalive.Keeper {
	t.Helper()
	base, _ := url.Parse(u.srv.URL + "/base")
	o := keepalive.Options{
		Upstream: base,
		Model: func(model string) keepalive.Model {
			if strings.HasPrefix(model, "gpt-4o") {
				return keepalive.Model{CacheTTL: ttl, CacheRead: 0.5, CacheWrite: 1}
			}
			return keepalive.Model{CacheTTL: ttl, CacheRead: 0.1, CacheWrite: 1.25}
		},
		MinPrefixTokens: 1000,
		Clock:           clock,
	}
	if edit != nil {
		edit(&o)
	}
	k, err := keepalive.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close(context.Background()) })
	return k
}

const body = `{"model":"claude-sonnet-4-5","max_tokens":32000,"stream":true,"messages":[{"role":"user","content":"hi"}]}`

func request(conv string) keepalive.Request {
	h := http.Header{}
	h.Set("X-Api-Key", "sk-caller")
	h.Set("Anthropic-Version", "2023-06-01")
	return keepalive.Request{Scope: "scope", Conversation: conv, Codec: messages.New(nil), Model: "claude-sonnet-4-5",
		Path: "/v1/messages", RawQuery: "beta=true", Header: h, Body: []byte(body), Tokens: 20000}
}

// meterOnly is a codec that reads answers but writes no pings.
type meterOnly struct{ view.Meter }

func (meterOnly) Format() string { return "meter-only" }
func (meterOnly) Scan([]byte, func(string) string) (*view.Request, error) {
	return nil, view.ErrNotRequest
}
func (meterOnly) Parse(*view.Request) error                       { return nil }
func (meterOnly) Text(*view.Request, int) view.Text               { return view.Text{} }
func (meterOnly) Note(string) []byte                              { return nil }
func (meterOnly) Splice(*view.Request, view.Edit) ([]byte, error) { return nil, nil }
func (meterOnly) Error(int, string, string) []byte                { return nil }

const (
	endTurn = `{"type":"message","stop_reason":"end_turn","usage":{"input_tokens":3,"cache_read_input_tokens":19000,"cache_creation_input_tokens":1000,"output_tokens":9}}`
	toolUse = `{"type":"message","stop_reason":"tool_use","usage":{"input_tokens":3,"cache_read_input_tokens":19000,"output_tokens":9}}`
)

// serve tells k of a request and of its answer.
func serve(k *keepalive.Keeper, r keepalive.Request, answer string) {
	w := k.Forwarded(context.Background(), r)
	if w == nil {
		return
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	if w.Start(200, h) {
		w.Write([]byte(answer))
	}
	w.End(true)
}

func checkPing(t *testing.T, u *upstream, ping []byte) {
	t.Helper()
	if got := gjson.GetBytes(ping, "max_tokens").Int(); got != 1 {
		t.Errorf("max_tokens %d", got)
	}
	if gjson.GetBytes(ping, "stream").Bool() {
		t.Error("stream still true")
	}
	u.mu.Lock()
	r := u.got[0]
	u.mu.Unlock()
	if r.URL.Path != "/base/v1/messages" || r.URL.RawQuery != "beta=true" || r.Header.Get("X-Api-Key") != "sk-caller" ||
		r.Header.Get("Anthropic-Version") != "2023-06-01" {
		t.Errorf("ping sent to %s?%s with %v", r.URL.Path, r.URL.RawQuery, r.Header)
	}
}

func TestKeeper(t *testing.T) {
	cases := []struct {
		name  string
		run   func(t *testing.T, k *keepalive.Keeper, c *keepalivetest.Clock, u *upstream)
		pings int
	}{
		{"end turn, then silence: max_pings pings, each before the TTL", func(t *testing.T, k *keepalive.Keeper, c *keepalivetest.Clock, u *upstream) {
			serve(k, request("a"), endTurn)
			c.Advance(ttl - time.Second) // the first falls due 30s before the TTL
			if n := len(u.pings()); n != 1 {
				t.Fatalf("%d pings within the first TTL, want 1", n)
			}
			c.Advance(time.Hour)
		}, 2},
		{"tool use: none", func(t *testing.T, k *keepalive.Keeper, c *keepalivetest.Clock, u *upstream) {
			serve(k, request("a"), toolUse)
			c.Advance(time.Hour)
		}, 0},
		{"the answer cut short: none", func(t *testing.T, k *keepalive.Keeper, c *keepalivetest.Clock, u *upstream) {
			w := k.Forwarded(context.Background(), request("a"))
			w.Start(200, http.Header{"Content-Type": {"application/json"}})
			w.Write([]byte(endTurn))
			w.End(false)
			c.Advance(time.Hour)
		}, 0},
		{"an error status: none", func(t *testing.T, k *keepalive.Keeper, c *keepalivetest.Clock, u *upstream) {
			w := k.Forwarded(context.Background(), request("a"))
			if w.Start(529, http.Header{}) {
				t.Error("an error's body is wanted")
			}
			w.End(true)
			c.Advance(time.Hour)
		}, 0},
		{"the next request stops them", func(t *testing.T, k *keepalive.Keeper, c *keepalivetest.Clock, u *upstream) {
			serve(k, request("a"), endTurn)
			c.Advance(2 * time.Minute)
			k.Forwarded(context.Background(), request("a")) // still running when the ping would fall due
			c.Advance(time.Hour)
		}, 0},
		{"a prompt under min_prefix_tokens: none", func(t *testing.T, k *keepalive.Keeper, c *keepalivetest.Clock, u *upstream) {
			r := request("a")
			r.Tokens = 500
			serve(k, r, `{"stop_reason":"end_turn","usage":{"input_tokens":500}}`)
			c.Advance(time.Hour)
		}, 0},
		{"a read dearer than its saving: none", func(t *testing.T, k *keepalive.Keeper, c *keepalivetest.Clock, u *upstream) {
			r := request("a")
			r.Model = "gpt-4o"
			serve(k, r, endTurn)
			c.Advance(time.Hour)
		}, 0},
		{"thinking dearer than the re-write: none", func(t *testing.T, k *keepalive.Keeper, c *keepalivetest.Clock, u *upstream) {
			r := request("a")
			r.Body = []byte(`{"model":"claude-sonnet-4-5","max_tokens":32000,"thinking":{"type":"enabled","budget_tokens":10000},"messages":[]}`)
			serve(k, r, endTurn)
			c.Advance(time.Hour)
		}, 0},
		{"a ping that writes the cache: none after it, in this gap or the next", func(t *testing.T, k *keepalive.Keeper, c *keepalivetest.Clock, u *upstream) {
			u.setWrite(true)
			serve(k, request("a"), endTurn)
			c.Advance(time.Hour)
			u.setWrite(false)
			serve(k, request("a"), endTurn)
			c.Advance(time.Hour)
			if s := k.Stats(); s.PingWrites != 1 {
				t.Errorf("stats %+v", s)
			}
		}, 1},
		{"a codec that cannot ping: none", func(t *testing.T, k *keepalive.Keeper, c *keepalivetest.Clock, u *upstream) {
			r := request("a")
			r.Codec = meterOnly{r.Codec.(view.Meter)}
			if w := k.Forwarded(context.Background(), r); w != nil {
				t.Error("watched")
			}
			c.Advance(time.Hour)
		}, 0},
		{"another model than keepalive.models: none", func(t *testing.T, k *keepalive.Keeper, c *keepalivetest.Clock, u *upstream) {
			r := request("a")
			r.Model = "claude-opus-4-1"
			serve(k, r, endTurn)
			c.Advance(time.Hour)
		}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := newUpstream(t)
			c := keepalivetest.New(time.Unix(1_700_000_000, 0))
			k := newKeeper(t, u, c, func(o *keepalive.Options) {
				o.Match = func(m string) bool { return m != "claude-opus-4-1" }
			})
			tc.run(t, k, c, u)
			pings := u.pings()
			if len(pings) != tc.pings {
				t.Fatalf("%d pings, want %d", len(pings), tc.pings)
			}
			if len(pings) > 0 {
				checkPing(t, u, pings[0])
			}
		})
	}
}

// TestKeeperSaving: pings that carried a conversation over its TTL are
// credited the re-write they avoided when it comes back and reads.
func TestKeeperSaving(t *testing.T) {
	u := newUpstream(t)
	c := keepalivetest.New(time.Unix(1_700_000_000, 0))
	k := newKeeper(t, u, c, nil)
	serve(k, request("a"), endTurn)
	c.Advance(7 * time.Minute) // one ping, at 4m30s
	serve(k, request("a"), endTurn)
	s := k.Stats()
	if s.Pings != 1 || s.CacheRead != 20000 {
		t.Fatalf("stats %+v", s)
	}
	// The ping: 20000 read at 0.1, 3 uncached, 1 output at 5.
	if want := 20000*0.1 + 3 + 5; s.PingCost != want {
		t.Errorf("ping cost %g, want %g", s.PingCost, want)
	}
	// The next request read 19000 it would have written: 19000 × 1.15.
	if want := 19000 * (1.25 - 0.1); s.Avoided < want-1e-6 || s.Avoided > want+1e-6 {
		t.Errorf("avoided %g, want %g", s.Avoided, want)
	}
	if s.NetSaving() <= 0 {
		t.Errorf("net saving %g", s.NetSaving())
	}
}

// TestKeeperLetsGoCold: when the engine condenses a conversation's next
// turn deep after its cache expires (its size as received over the
// model's ColdAbove), a gap takes only the pings that cost less than that
// cold turn adds; otherwise up to max_pings.
func TestKeeperLetsGoCold(t *testing.T) {
	for _, tc := range []struct {
		name     string
		received int
		pings    int
	}{
		// A prompt of 20003 (endTurn's usage): a ping 2000.3 + 5; a cold
		// turn condensed to 4000 adds 4000 × 1.25 − 2000.3.
		{"next turn condensed cold: one ping", 21000, 1},
		// Not condensed: 20003 × 1.15 added, max_pings pings.
		{"next turn under the threshold: max_pings", 15000, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUpstream(t)
			c := keepalivetest.New(time.Unix(1_700_000_000, 0))
			k := newKeeper(t, u, c, func(o *keepalive.Options) {
				o.MaxPings = 5
				o.Model = func(string) keepalive.Model {
					return keepalive.Model{CacheTTL: ttl, CacheRead: 0.1, CacheWrite: 1.25, ColdAbove: 20000, ColdTo: 4000}
				}
			})
			r := request("a")
			r.Received = tc.received
			serve(k, r, endTurn)
			c.Advance(time.Hour)
			if n := len(u.pings()); n != tc.pings {
				t.Errorf("%d pings, want %d", n, tc.pings)
			}
		})
	}
}

// TestKeeperReplicas: of two Keepers sharing a Store, only the one that
// forwarded the conversation's last request pings it.
func TestKeeperReplicas(t *testing.T) {
	u := newUpstream(t)
	c := keepalivetest.New(time.Unix(1_700_000_000, 0))
	store := &mapStore{m: map[string][]byte{}}
	a := newKeeper(t, u, c, func(o *keepalive.Options) { o.Store = store })
	b := newKeeper(t, u, c, func(o *keepalive.Options) { o.Store = store })
	serve(a, request("a"), endTurn)
	c.Advance(time.Minute)
	second := request("a")
	second.Body = []byte(strings.Replace(body, `"hi"`, `"hi again"`, 1))
	serve(b, second, endTurn)
	c.Advance(time.Hour)
	pings := u.pings()
	if len(pings) != 2 {
		t.Fatalf("%d pings, want 2", len(pings))
	}
	for _, p := range pings {
		if !strings.Contains(string(p), "hi again") {
			t.Errorf("a ping of the first replica's request: %s", p)
		}
	}
	if s := a.Stats(); s.Yielded != 1 || s.Pings != 0 {
		t.Errorf("first replica: %+v", s)
	}
}

// TestKeeperBounds: conversations beyond MaxConversations are dropped,
// least recently active first, and no ping of theirs is sent.
func TestKeeperBounds(t *testing.T) {
	u := newUpstream(t)
	c := keepalivetest.New(time.Unix(1_700_000_000, 0))
	k := newKeeper(t, u, c, func(o *keepalive.Options) { o.MaxConversations = 2; o.MaxPings = 1 })
	for i := range 5 {
		serve(k, request(fmt.Sprint("conv", i)), endTurn)
	}
	if s := k.Stats(); s.Tracked != 2 || s.Armed != 2 {
		t.Errorf("stats %+v", s)
	}
	c.Advance(time.Hour)
	if n := len(u.pings()); n != 2 {
		t.Errorf("%d pings, want 2", n)
	}
}

// TestKeeperClose: after Close nothing is scheduled or sent.
func TestKeeperClose(t *testing.T) {
	u := newUpstream(t)
	c := keepalivetest.New(time.Unix(1_700_000_000, 0))
	k := newKeeper(t, u, c, nil)
	serve(k, request("a"), endTurn)
	if err := k.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	serve(k, request("b"), endTurn)
	c.Advance(time.Hour)
	if n := len(u.pings()); n != 0 {
		t.Errorf("%d pings after Close", n)
	}
}

// TestKeeperWallClock: with the wall clock and a short TTL, the pings go
// out on their own (no assertion on when).
func TestKeeperWallClock(t *testing.T) {
	u := newUpstream(t)
	base, _ := url.Parse(u.srv.URL)
	k, err := keepalive.New(keepalive.Options{Upstream: base, MinPrefixTokens: 1000,
		Model: func(string) keepalive.Model {
			return keepalive.Model{CacheTTL: 50 * time.Millisecond, CacheRead: 0.1, CacheWrite: 1.25}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close(context.Background())
	serve(k, request("a"), endTurn)
	deadline := time.Now().Add(10 * time.Second)
	for k.Stats().Pings < 2 || k.Stats().Armed > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v", k.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := len(u.pings()); n != 2 {
		t.Errorf("%d pings, want 2", n)
	}
}

// TestKeeperWarmed: every ping that read the cache is told to Warmed —
// the conversation's scope and id, and when the ping was sent, by the
// Keeper's clock — so the engine does not take the conversation's next
// request for a cold one; a ping that found the cache gone is not.
func TestKeeperWarmed(t *testing.T) {
	type warmed struct {
		scope, conv string
		at          time.Time
	}
	for _, write := range []bool{false, true} {
		t.Run(fmt.Sprintf("write=%v", write), func(t *testing.T) {
			u := newUpstream(t)
			u.setWrite(write)
			start := time.Unix(1_700_000_000, 0)
			c := keepalivetest.New(start)
			var mu sync.Mutex
			var got []warmed
			k := newKeeper(t, u, c, func(o *keepalive.Options) {
				o.Warmed = func(_ context.Context, scope, conv string, at time.Time) {
					mu.Lock()
					got = append(got, warmed{scope, conv, at})
					mu.Unlock()
				}
			})
			serve(k, request("a"), endTurn)
			c.Advance(time.Hour)
			mu.Lock()
			defer mu.Unlock()
			if write {
				if len(got) != 0 {
					t.Fatalf("a ping that wrote the cache told Warmed: %+v", got)
				}
				return
			}
			// Two pings: at the TTL less its lead (30s), then a TTL less
			// the lead after the first.
			first := start.Add(ttl - 30*time.Second)
			want := []warmed{{"scope", "a", first}, {"scope", "a", first.Add(ttl - 30*time.Second)}}
			if len(got) != len(want) {
				t.Fatalf("Warmed told %+v, want %+v", got, want)
			}
			for i := range want {
				if got[i].scope != want[i].scope || got[i].conv != want[i].conv || !got[i].at.Equal(want[i].at) {
					t.Errorf("Warmed told %+v, want %+v", got[i], want[i])
				}
			}
		})
	}
}
