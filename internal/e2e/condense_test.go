package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// longBody is a synthetic session's full request, well over a 32k window.
func longBody(t *testing.T, seed int64) []byte {
	sess, _ := corpus.Synthetic(seed, 400_000)
	b, err := sess.Request("gpt-4o", 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func forwarded(t *testing.T, fake *fakeupstream.Server) []byte {
	t.Helper()
	for _, r := range fake.Received() {
		if !fakeupstream.IsSummaryRequest(r.Body) && strings.HasSuffix(r.Path, "/chat/completions") {
			return r.Body
		}
	}
	t.Fatal("agent request never reached the upstream")
	return nil
}

func TestFullCondensingThroughProxy(t *testing.T) {
	s := newStack(t, 32000, "llm")
	body := longBody(t, 11)
	resp := post(t, s.Proxy.URL+"/v1/chat/completions", body, map[string]string{"Authorization": "Bearer sk-a", "X-Condense-Mode": "full"})
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	h := resp.Header
	if h.Get(proxy.HeaderApplied) != "full" || h.Get(proxy.HeaderCache) != "miss" || !regexp.MustCompile(`^l\d=\d`).MatchString(h.Get(proxy.HeaderSummaries)) {
		t.Fatalf("headers: applied %q cache %q summaries %q degraded %q", h.Get(proxy.HeaderApplied), h.Get(proxy.HeaderCache), h.Get(proxy.HeaderSummaries), h.Get(proxy.HeaderDegraded))
	}
	fwd := forwarded(t, s.Fake)
	validateBody(t, fwd)
	summaryCalls := len(s.Fake.TakeSummaries())
	if summaryCalls == 0 {
		t.Fatal("no summarizer call reached the upstream")
	}
	for _, r := range s.Fake.Received() {
		if fakeupstream.IsSummaryRequest(r.Body) && r.Header.Get("Authorization") != "Bearer sk-a" {
			t.Error("summarizer call not made with the caller's own key")
		}
	}

	// The same request again: every summary comes from the cache, the
	// forwarded body is byte-identical.
	s.Fake.Reset()
	resp = post(t, s.Proxy.URL+"/v1/chat/completions", body, map[string]string{"Authorization": "Bearer sk-a", "X-Condense-Mode": "full"})
	resp.Body.Close()
	if resp.Header.Get(proxy.HeaderCache) != "hit" || len(s.Fake.TakeSummaries()) != 0 {
		t.Errorf("second request: cache %q", resp.Header.Get(proxy.HeaderCache))
	}
	if again := forwarded(t, s.Fake); string(again) != string(fwd) {
		t.Error("condensed body not byte-stable between identical requests")
	}

	// Originals: the summary's id returns the folded messages to the same
	// caller only.
	summary := gjson.GetBytes(fwd, "messages.2.content").Str
	m := regexp.MustCompile(`<summary id="([0-9a-f]+)" level="1"`).FindStringSubmatch(summary)
	if m == nil {
		t.Fatalf("no level-1 summary id in %.300s", summary)
	}
	get := func(key string) (int, []byte) {
		req, _ := http.NewRequest("GET", s.Proxy.URL+"/v1/condense/originals/"+m[1], nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, b := get("sk-a"); code != 200 || len(gjson.GetBytes(b, "messages").Array()) == 0 {
		t.Errorf("originals for the owner: %d %.200s", code, b)
	}
	if code, _ := get("sk-other"); code != 404 {
		t.Errorf("originals for another key: %d, want 404", code)
	}
}

func validateBody(t *testing.T, b []byte) {
	t.Helper()
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	if err := fakeupstream.Validate(req.Messages); err != nil {
		t.Fatalf("forwarded conversation invalid: %v", err)
	}
}

func TestSummarizerFailuresThroughProxy(t *testing.T) {
	cases := map[string]func([]byte) (int, string){
		"500":     func([]byte) (int, string) { return 500, "" },
		"empty":   func([]byte) (int, string) { return 200, " " },
		"garbage": nil, // set below: answers a body that is not JSON
	}
	for name, fn := range cases {
		t.Run(name, func(t *testing.T) {
			events := make(eventsOf, 1)
			s := newStack(t, 32000, "llm", func(o *stackOptions) { o.recorder = events })
			if fn != nil {
				s.Fake.Summarize = fn
			}
			var up http.Handler = s.Fake
			if name == "garbage" {
				up = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					b, _ := io.ReadAll(r.Body)
					if fakeupstream.IsSummaryRequest(b) {
						io.WriteString(w, "<html>oops</html>")
						return
					}
					r.Body = io.NopCloser(strings.NewReader(string(b)))
					s.Fake.ServeHTTP(w, r)
				})
			}
			s.SetUpstream(up)
			resp := post(t, s.Proxy.URL+"/v1/chat/completions", longBody(t, 12), map[string]string{"Authorization": "Bearer sk-a", "X-Condense-Mode": "full"})
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			rep := events.next(t).Report
			if resp.StatusCode != 200 || resp.Header.Get(proxy.HeaderApplied) == "none" || !rep.DegradedBy(condense.DegradedSummarizerFailed) ||
				resp.Header.Get(proxy.HeaderDegraded) == "" {
				t.Fatalf("status %d applied %q degraded %v (%q)", resp.StatusCode, resp.Header.Get(proxy.HeaderApplied), rep.DegradedKinds, resp.Header.Get(proxy.HeaderDegraded))
			}
			validateBody(t, forwarded(t, s.Fake))
		})
	}
}

func TestSummarizerTimeoutThroughProxy(t *testing.T) {
	events := make(eventsOf, 1)
	s := newStack(t, 32000, "llm", func(o *stackOptions) { o.summaryTimeout, o.recorder = 100*time.Millisecond, events })
	// The summarizer hangs until the test ends: if the agent's request
	// completes, it did not wait for it.
	release := make(chan struct{})
	var hung atomic.Bool
	s.Fake.Summarize = func([]byte) (int, string) { hung.Store(true); <-release; return 200, "late" }
	resp := post(t, s.Proxy.URL+"/v1/chat/completions", longBody(t, 13), map[string]string{"X-Condense-Mode": "full"})
	resp.Body.Close()
	stillHung := hung.Load()
	close(release)
	if rep := events.next(t).Report; resp.StatusCode != 200 || !rep.DegradedBy(condense.DegradedSummarizerFailed) {
		t.Fatalf("status %d degraded %v (%q)", resp.StatusCode, rep.DegradedKinds, resp.Header.Get(proxy.HeaderDegraded))
	}
	if !stillHung {
		t.Error("the summarizer was never called")
	}
}

// eventsOf hands the proxy's events (proxy.Recorder) to a test.
type eventsOf chan proxy.Event

func (c eventsOf) Record(ev proxy.Event) { c <- ev }

// next is the next request's event.
func (c eventsOf) next(t *testing.T) proxy.Event {
	t.Helper()
	select {
	case ev := <-c:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event recorded")
		return proxy.Event{}
	}
}

// TestPrepareAhead: a request between prepare_threshold and threshold
// starts the summaries in the background; the request that crosses the
// threshold then finds them cached and calls no summarizer.
func TestPrepareAhead(t *testing.T) {
	s := newStack(t, 128000, "llm")
	sess, _ := corpus.Synthetic(14, 600_000)
	ends := sess.TurnEnds()
	// under: the last request in the prepare band below the threshold
	// (0.8 × 128k); over: the next one, over it. Folds go deep, so the
	// crossing request folds every chunk complete before its newest
	// steps: all of them but one its own step completed were complete
	// at the request before.
	var under, over []byte
	for _, n := range ends {
		b, _ := sess.Request("gpt-4o", n)
		rc, err := chat.New(s.Counter).Scan(b, func(string) string { return "o200k_base" })
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case rc.Total > 92000 && rc.Total <= 102400 && over == nil:
			under = b
		case rc.Total > 102400 && under != nil && over == nil:
			over = b
		}
	}
	if under == nil || over == nil {
		t.Fatal("session has no request in the prepare band and one over the threshold")
	}
	full := map[string]string{"X-Condense-Mode": "full"}
	resp := post(t, s.Proxy.URL+"/v1/chat/completions", under, full)
	resp.Body.Close()
	if resp.Header.Get(proxy.HeaderApplied) != "none" {
		t.Fatalf("under-threshold request condensed: %s", resp.Header.Get(proxy.HeaderApplied))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.Engine.Close(ctx) // wait for the background work
	if len(s.Fake.TakeSummaries()) == 0 {
		t.Fatal("no summaries prepared ahead")
	}
	resp = post(t, s.Proxy.URL+"/v1/chat/completions", over, full)
	resp.Body.Close()
	if resp.Header.Get(proxy.HeaderApplied) != "full" || resp.Header.Get(proxy.HeaderCache) == "miss" {
		t.Errorf("crossing request: applied %q cache %q", resp.Header.Get(proxy.HeaderApplied), resp.Header.Get(proxy.HeaderCache))
	}
	// Only a chunk the crossing request's own step completed (and the
	// merge it brings) can be missing.
	if n := len(s.Fake.TakeSummaries()); n > 2 {
		t.Errorf("crossing request waited for %d summarizer calls", n)
	}
}
