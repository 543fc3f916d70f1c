package litellm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// modelInfo is an answer of LiteLLM's /model/info as LiteLLM writes it
// (trimmed): nulls, a load-balanced alias, an alias without model_info
// numbers.
const modelInfo = `{"data":[
 {"model_name":"gpt-4","litellm_params":{"model":"openai/gpt-4o"},"model_info":{"id":"a1","key":"gpt-4o","max_tokens":16384,
  "max_input_tokens":128000,"max_output_tokens":16384,"input_cost_per_token":2.5e-06,"output_cost_per_token":1e-05,
  "cache_read_input_token_cost":1.25e-06,"cache_creation_input_token_cost":null,"litellm_provider":"openai","mode":"chat"}},
 {"model_name":"claude","litellm_params":{"model":"anthropic/claude-sonnet-4-5-20250929"},"model_info":{"key":"claude-sonnet-4-5-20250929",
  "max_input_tokens":200000,"max_output_tokens":64000,"input_cost_per_token":3e-06,"output_cost_per_token":1.5e-05,
  "cache_read_input_token_cost":3e-07,"cache_creation_input_token_cost":3.75e-06}},
 {"model_name":"azure-4o","litellm_params":{"model":"azure/my-deployment"},"model_info":{"base_model":"azure/gpt-4o","max_input_tokens":"lots"}},
 {"model_name":"local","litellm_params":{"model":"ollama/llama3"},"model_info":{"max_input_tokens":null,"input_cost_per_token":0,"output_cost_per_token":1e-06}},
 {"model_name":42},
 {"litellm_params":{"model":"x"}}
]}`

func TestParse(t *testing.T) {
	ms, err := parse([]byte(modelInfo))
	if err != nil {
		t.Fatal(err)
	}
	want := []Model{
		{Alias: "gpt-4", Model: "gpt-4o", MaxInputTokens: 128000, MaxOutputTokens: 16384, InputCostPerToken: 2.5e-6, CacheReadCost: 1.25e-6,
			OutputCostPerToken: 1e-5},
		{Alias: "claude", Model: "claude-sonnet-4-5-20250929", MaxInputTokens: 200000, MaxOutputTokens: 64000, InputCostPerToken: 3e-6,
			CacheReadCost: 3e-7, CacheWriteCost: 3.75e-6, OutputCostPerToken: 1.5e-5},
		{Alias: "azure-4o", Model: "azure/gpt-4o"},
		{Alias: "local", Model: "ollama/llama3", OutputCostPerToken: 1e-6},
	}
	if fmt.Sprint(ms) != fmt.Sprint(want) {
		t.Fatalf("parse:\n got %+v\nwant %+v", ms, want)
	}
	g := ms[0]
	if g.InputPricePerMTok() != 2.5 || g.CacheRead() != 0.5 || g.CacheWrite() != 0 || g.OutputPrice() != 4 {
		t.Errorf("gpt-4: $%g read %g write %g output %g", g.InputPricePerMTok(), g.CacheRead(), g.CacheWrite(), g.OutputPrice())
	}
	if c := ms[1]; c.CacheRead() < 0.0999 || c.CacheRead() > 0.1001 || c.CacheWrite() < 1.2499 || c.CacheWrite() > 1.2501 ||
		c.OutputPrice() < 4.9999 || c.OutputPrice() > 5.0001 {
		t.Errorf("claude: read %g write %g output %g", c.CacheRead(), c.CacheWrite(), c.OutputPrice())
	}
	if l := ms[3]; l.CacheRead() != 0 || l.InputPricePerMTok() != 0 || l.OutputPrice() != 0 {
		t.Errorf("free model: %+v", l)
	}
}

func TestParseNotLiteLLM(t *testing.T) {
	for _, body := range []string{`<html>not found</html>`, `{"object":"error"}`, `{"data":{}}`, ``, `[1,2]`} {
		if _, err := parse([]byte(body)); !errors.Is(err, ErrNotLiteLLM) {
			t.Errorf("%q: err %v, want ErrNotLiteLLM", body, err)
		}
	}
}

func TestParseBounded(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"data":[`)
	for i := range MaxModels + 5 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"model_name":"m%d"}`, i)
	}
	b.WriteString(`]}`)
	ms, err := parse(b.Bytes())
	if err != nil || len(ms) != MaxModels {
		t.Errorf("%d entries, err %v; want %d", len(ms), err, MaxModels)
	}
}

func TestEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://gw:4000":         "http://gw:4000/model/info",
		"http://gw:4000/":        "http://gw:4000/model/info",
		"https://gw/v1?x=1":      "https://gw/v1/model/info",
		"http://u:secret@gw/api": "http://u:xxxxx@gw/api/model/info",
	} {
		u, _ := url.Parse(in)
		if got := Endpoint(u).Redacted(); got != want {
			t.Errorf("Endpoint(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestFetchStatuses(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		want   error // nil: success; errAny: an error that is neither
	}{
		{"ok", 200, modelInfo, nil},
		{"404", 404, `{"error":"not found"}`, ErrNotLiteLLM},
		{"405", 405, ``, ErrNotLiteLLM},
		{"html", 200, `<html></html>`, ErrNotLiteLLM},
		{"401", 401, `{"error":"auth"}`, ErrUnauthorized},
		{"403", 403, ``, ErrUnauthorized},
		{"500", 500, ``, errAny},
		{"429", 429, ``, errAny},
		{"too large", 200, `{"data":[],"pad":"` + strings.Repeat("x", MaxResponseBytes) + `"}`, errAny},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			u, _ := url.Parse(srv.URL)
			ms, err := Fetch(context.Background(), srv.Client(), u, "")
			switch {
			case tc.want == nil && (err != nil || len(ms) != 4):
				t.Errorf("%d models, err %v", len(ms), err)
			case tc.want == errAny && (err == nil || errors.Is(err, ErrNotLiteLLM) || errors.Is(err, ErrUnauthorized)):
				t.Errorf("err %v, want a passing error", err)
			case tc.want != nil && tc.want != errAny && !errors.Is(err, tc.want):
				t.Errorf("err %v, want %v", err, tc.want)
			}
		})
	}
}

var errAny = errors.New("any other error")

// fakeGateway answers /model/info with its body, counting the asks and
// keeping the last Authorization header.
type fakeGateway struct {
	mu     sync.Mutex
	status int
	body   string
	asked  atomic.Int32
	auth   string
}

func (g *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.asked.Add(1)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.auth = r.Header.Get("Authorization")
	if r.URL.Path != "/model/info" {
		w.WriteHeader(404)
		return
	}
	w.WriteHeader(g.status)
	w.Write([]byte(g.body))
}

func (g *fakeGateway) set(status int, body string) {
	g.mu.Lock()
	g.status, g.body = status, body
	g.mu.Unlock()
}

// start starts a Poller on g driven by a test's ticks; each read's error
// arrives on the returned channel.
func start(t *testing.T, g *fakeGateway, key string) (*Poller, chan<- time.Time, <-chan error, *[][]Model) {
	t.Helper()
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	ticks := make(chan time.Time)
	reads := make(chan error, 16)
	var applied [][]Model
	var mu sync.Mutex
	p := Start(context.Background(), Options{Upstream: u, HTTP: srv.Client(), Key: key, Ticks: ticks,
		Apply:     func(ms []Model) int { mu.Lock(); applied = append(applied, ms); mu.Unlock(); return len(ms) },
		OnRefresh: func(err error) { reads <- err }})
	t.Cleanup(p.Close)
	if err := <-reads; err != nil && g.status == 200 {
		t.Fatalf("first read: %v", err)
	}
	return p, ticks, reads, &applied
}

func TestPollerRefreshesOnTicks(t *testing.T) {
	g := &fakeGateway{status: 200, body: `{"data":[{"model_name":"a","model_info":{"max_input_tokens":1000}}]}`}
	p, ticks, reads, applied := start(t, g, "sk-master")
	if len(*applied) != 1 || (*applied)[0][0].MaxInputTokens != 1000 || g.auth != "Bearer sk-master" {
		t.Fatalf("first read: %+v, auth %q", *applied, g.auth)
	}
	g.set(200, `{"data":[{"model_name":"a","model_info":{"max_input_tokens":2000}}]}`)
	ticks <- time.Time{}
	if err := <-reads; err != nil {
		t.Fatal(err)
	}
	if len(*applied) != 2 || (*applied)[1][0].MaxInputTokens != 2000 {
		t.Fatalf("after a tick: %+v", *applied)
	}
	// A failure that may pass keeps the table (nothing applied) and is
	// asked again at the next tick.
	g.set(503, ``)
	ticks <- time.Time{}
	if err := <-reads; err == nil {
		t.Fatal("503: no error")
	}
	g.set(200, `{"data":[{"model_name":"a","model_info":{"max_input_tokens":3000}}]}`)
	ticks <- time.Time{}
	if err := <-reads; err != nil || len(*applied) != 3 || (*applied)[2][0].MaxInputTokens != 3000 {
		t.Fatalf("after the 503: %v, %+v", err, *applied)
	}
	if p.Stopped() != nil || g.asked.Load() != 4 {
		t.Errorf("stopped %v, asked %d times, want 4", p.Stopped(), g.asked.Load())
	}
}

func TestPollerStops(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   error
	}{{404, ErrNotLiteLLM}, {401, ErrUnauthorized}, {403, ErrUnauthorized}} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			g := &fakeGateway{status: tc.status}
			p, ticks, _, applied := start(t, g, "")
			if !errors.Is(p.Stopped(), tc.want) {
				t.Fatalf("stopped: %v, want %v", p.Stopped(), tc.want)
			}
			if g.auth != "" {
				t.Errorf("no key set, sent %q", g.auth)
			}
			// The loop has ended (Close returns at once): no one
			// receives a tick.
			p.Close()
			select {
			case ticks <- time.Time{}:
				t.Error("a tick was received after the asking stopped")
			default:
			}
			if err := p.Refresh(context.Background()); !errors.Is(err, tc.want) {
				t.Errorf("Refresh after the stop: %v", err)
			}
			if n := g.asked.Load(); n != 1 || len(*applied) != 0 {
				t.Errorf("asked %d times, applied %d tables; want once, none", n, len(*applied))
			}
		})
	}
}

func TestPollerCloseEndsTheLoop(t *testing.T) {
	g := &fakeGateway{status: 200, body: `{"data":[]}`}
	p, ticks, _, _ := start(t, g, "")
	p.Close()
	select {
	case ticks <- time.Time{}:
		t.Error("a tick was received after Close")
	default:
	}
}
