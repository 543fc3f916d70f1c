package app_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// shaUpstream is the fake upstream, noting the sha256 of each body it
// receives under the request's X-Test-Conversation header.
type shaUpstream struct {
	next *fakeupstream.Server
	mu   sync.Mutex
	sums map[string][32]byte
}

func (u *shaUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.sums[r.Header.Get("X-Test-Conversation")] = sha256.Sum256(b)
	u.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(b))
	u.next.ServeHTTP(w, r)
}

func (u *shaUpstream) sum(conv string) ([32]byte, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s, ok := u.sums[conv]
	return s, ok
}

// TestHoldoutShare: with condense.holdout_share 0.5, 40 conversations
// over the threshold through the stack serve builds: about half go
// upstream byte for byte (the upstream's sha256 of what it got is the
// sent body's), the rest condensed; each says its arm (X-Condense-Arm,
// the log line, /metrics); a second proxy sharing only the cache (and the
// configuration) puts every conversation in the same arm; the live page's
// API compares both arms with their counts, in dollars too.
func TestHoldoutShare(t *testing.T) {
	shared := cache.NewMemory(256 << 20)
	build := func() (*shaUpstream, *app.App, *lockedBuffer, string) {
		cfg := config.Defaults()
		cfg.ScopeSecret = "the team's scope secret"
		cfg.Condense.Summarizer = "extractive"
		cfg.Condense.HoldoutShare = 0.5
		cfg.Models = []config.ModelConfig{{Match: "gpt-4o*", ContextWindow: 16000}}
		up := &shaUpstream{next: fakeupstream.New(), sums: map[string][32]byte{}}
		logs := &lockedBuffer{}
		a := newApp(t, &cfg, up, app.Options{Cache: shared, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		srv := httptest.NewServer(a.Handler)
		t.Cleanup(srv.Close)
		return up, a, logs, srv.URL
	}
	upA, _, logsA, baseA := build()
	upB, _, _, baseB := build()

	const n = 40
	arms := map[string]string{}
	count := map[string]int{}
	for i := 1; i <= n; i++ {
		sess, _ := corpus.Synthetic(int64(100+i), 80_000)
		body, err := sess.Request("gpt-4o", 0)
		if err != nil {
			t.Fatal(err)
		}
		conv := strconv.Itoa(i)
		sent := sha256.Sum256(body)
		for _, r := range []struct {
			name string
			up   *shaUpstream
			base string
		}{{"first proxy", upA, baseA}, {"second proxy", upB, baseB}} {
			resp := postDrained(t, r.base+"/v1/chat/completions", bytes.NewReader(body),
				"Authorization", "Bearer sk-team", "X-Test-Conversation", conv)
			arm, applied := resp.Header.Get(proxy.HeaderArm), resp.Header.Get(proxy.HeaderApplied)
			got, ok := r.up.sum(conv)
			if resp.StatusCode != http.StatusOK || !ok {
				t.Fatalf("conversation %d, %s: status %d, reached the upstream %v", i, r.name, resp.StatusCode, ok)
			}
			if before, _ := strconv.Atoi(resp.Header.Get(proxy.HeaderTokensBefore)); before <= 12800 {
				t.Fatalf("conversation %d: %d tokens, not over the threshold", i, before)
			}
			switch arm {
			case "holdout":
				if got != sent || applied != "observe" {
					t.Errorf("conversation %d, %s: holdout arm not forwarded byte for byte (applied %s)", i, r.name, applied)
				}
				if w := resp.Header.Get(proxy.HeaderWouldApply); w == "" || w == "none" {
					t.Errorf("conversation %d, %s: holdout arm without what auto would have done (%q)", i, r.name, w)
				}
			case "condensed":
				if got == sent || applied == "none" || applied == "observe" {
					t.Errorf("conversation %d, %s: condensed arm not condensed (applied %s)", i, r.name, applied)
				}
			default:
				t.Fatalf("conversation %d, %s: arm %q", i, r.name, arm)
			}
			if prev, seen := arms[conv]; seen && prev != arm {
				t.Errorf("conversation %d: arm %s on the first proxy, %s on the second", i, prev, arm)
			}
			arms[conv] = arm
		}
		count[arms[conv]]++
	}
	t.Logf("arms of %d conversations: %v", n, count)
	if count["holdout"] < 10 || count["condensed"] < 10 {
		t.Fatalf("arms %v of %d conversations at share 0.5", count, n)
	}

	// The first proxy's page compares the arms (its own record).
	waitRecorded(t, baseA, http.Header{}, n)
	resp, err := http.Get(baseA + "/ui/api/overview")
	if err != nil {
		t.Fatal(err)
	}
	type armJSON struct {
		Conversations       int      `json:"conversations"`
		Requests            int      `json:"requests"`
		CostPerConversation *float64 `json:"cost_per_conversation"`
		USDPerConversation  *float64 `json:"usd_per_conversation"`
		// The fake's answers report usage: measured.
		MeasuredCostPerConversation *float64 `json:"measured_cost_per_conversation"`
	}
	var ov struct {
		Holdout *struct {
			MeasuredSaving *float64 `json:"measured_saving"`
			Enough         bool     `json:"enough"`
			Verdict        string   `json:"verdict"`
			Condensed      armJSON  `json:"condensed"`
			Holdout        armJSON  `json:"holdout"`
		} `json:"holdout"`
	}
	err = json.NewDecoder(resp.Body).Decode(&ov)
	resp.Body.Close()
	if err != nil || ov.Holdout == nil {
		t.Fatalf("no holdout comparison on the page (%v)", err)
	}
	for arm, v := range map[string]armJSON{"holdout": ov.Holdout.Holdout, "condensed": ov.Holdout.Condensed} {
		if v.Conversations != count[arm] || v.Requests != count[arm] || v.CostPerConversation == nil || v.USDPerConversation == nil ||
			v.MeasuredCostPerConversation == nil {
			t.Errorf("page, %s arm: %+v, want %d conversations and requests, their cost in tokens' worth and dollars, estimated and measured", arm, v, count[arm])
		}
	}
	if ov.Holdout.MeasuredSaving == nil {
		t.Error("page: no measured saving")
	}
	if !ov.Holdout.Enough || strings.Contains(ov.Holdout.Verdict, "too little") {
		t.Errorf("page: enough %v, verdict %q with %v", ov.Holdout.Enough, ov.Holdout.Verdict, count)
	}

	// The log line and /metrics say the arm.
	for _, arm := range []string{"holdout", "condensed"} {
		if got := len(regexp.MustCompile(`\barm=`+arm+`\b`).FindAllString(logsA.String(), -1)); got != count[arm] {
			t.Errorf("%d log lines with arm=%s, want %d", got, arm, count[arm])
		}
	}
	mresp, err := http.Get(baseA + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, arm := range []string{"holdout", "condensed"} {
		if want := `condense_arm_requests_total{arm="` + arm + `"} ` + strconv.Itoa(count[arm]); !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics has no %q", want)
		}
	}
}

// TestPageDollars: the page's conversations carry their bill in dollars
// at the registry's input price for their model (gpt-4o: $2.50 per
// million tokens), and null — "unknown price" — for a model the registry
// has no price for.
func TestPageDollars(t *testing.T) {
	cfg := config.Defaults()
	cfg.ScopeSecret = "the team's scope secret"
	cfg.Condense.Summarizer = "extractive"
	a := newApp(t, &cfg, fakeupstream.New(), app.Options{})
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	sess, _ := corpus.Synthetic(7, 20_000)
	for _, model := range []string{"gpt-4o", "team-local-model"} {
		body, err := sess.Request(model, 0)
		if err != nil {
			t.Fatal(err)
		}
		postDrained(t, srv.URL+"/v1/chat/completions", bytes.NewReader(body), "Authorization", "Bearer sk-"+model)
	}
	waitRecorded(t, srv.URL, http.Header{}, 2)
	resp, err := http.Get(srv.URL + "/ui/api/conversations")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Conversations []struct {
			Model    string   `json:"model"`
			Bill     float64  `json:"bill"`
			BillUSD  *float64 `json:"bill_usd"`
			Unpriced int      `json:"unpriced"`
		} `json:"conversations"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil || len(list.Conversations) != 2 {
		t.Fatalf("%d conversations (%v)", len(list.Conversations), err)
	}
	for _, c := range list.Conversations {
		switch c.Model {
		case "gpt-4o":
			if want := c.Bill * 2.5 / 1e6; c.Bill <= 0 || c.BillUSD == nil || *c.BillUSD < want*0.999 || *c.BillUSD > want*1.001 {
				t.Errorf("gpt-4o: bill %v, in dollars %v, want %v", c.Bill, c.BillUSD, want)
			}
		default:
			if c.BillUSD != nil || c.Unpriced != 1 {
				t.Errorf("%s: bill in dollars set %v, unpriced %d; want null (unknown price) and 1", c.Model, c.BillUSD != nil, c.Unpriced)
			}
		}
	}
}
