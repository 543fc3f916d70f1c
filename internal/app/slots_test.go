package app_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// slowSummaries is a scripted upstream whose summarizer, once hang is
// set, answers only when release is closed: the 10-second summarizer of
// issue #20, without the ten seconds.
type slowSummaries struct {
	*fakeupstream.Server
	hang    atomic.Bool
	waiting atomic.Int32 // summarizer calls being held
	entered chan struct{}
	release chan struct{}
}

func newSlowSummaries() *slowSummaries {
	s := &slowSummaries{Server: fakeupstream.New(), entered: make(chan struct{}, 1024), release: make(chan struct{})}
	s.Summarize = func(body []byte) (int, string) {
		if s.hang.Load() {
			s.waiting.Add(1)
			s.entered <- struct{}{}
			<-s.release
			s.waiting.Add(-1)
		}
		return harness.CannedSummary(body)
	}
	return s
}

// TestSlowSummariesLeaveThePlacesFree: with 8 summaries in flight on a
// summarizer that does not answer, and max_inflight_condense at 4, the
// over-threshold requests that need no new summary — a conversation
// whose summaries are cached, selective condensing — are condensed, not
// forwarded unchanged as busy; and the 8 waiting requests, twice the
// places, were none of them turned away: waiting for a summary holds no
// place, so max_inflight_condense bounds only the CPU work.
func TestSlowSummariesLeaveThePlacesFree(t *testing.T) {
	const places, slow = 4, 8
	up := newSlowSummaries()
	cfg := config.Defaults()
	cfg.ScopeSecret = "a test's scope secret"
	cfg.MaxInflightCondense = places
	// A place not found within this is "busy": short, so a held place
	// shows at once.
	cfg.InflightWait = 100 * time.Millisecond
	cfg.Condense.SummarizerConcurrency = slow
	// The waiting requests wait for their summaries, however long.
	cfg.Condense.MaxWait = 10 * time.Minute
	cfg.Condense.SummaryTimeout = 10 * time.Minute
	cfg.Models = []config.ModelConfig{{Match: "*", ContextWindow: 16000}}
	a := newApp(t, &cfg, up, app.Options{})
	if a.ProxyOptions.MaxInflight != places {
		t.Fatalf("max_inflight_condense %d reached the proxy as %d", places, a.ProxyOptions.MaxInflight)
	}
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	released := false
	release := func() {
		if !released {
			released = true
			close(up.release)
		}
	}
	t.Cleanup(release) // a failing test does not leave the calls hanging
	conversation := func(seed int64) []byte {
		sess, _ := corpus.Synthetic(seed, 120_000)
		body, err := sess.Request("gpt-4o", 0)
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	// post may run on any goroutine; a request the proxy does not answer
	// within a minute (it waited for the summarizer) fails the test.
	client := &http.Client{Timeout: time.Minute}
	post := func(body []byte, mode string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer sk-caller")
		req.Header.Set(proxy.HeaderMode, mode)
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("%s request: %v", mode, err)
			return &http.Response{Header: http.Header{}}
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	busy := func(r *http.Response) bool {
		return strings.Contains(r.Header.Get(proxy.HeaderDegraded), "max_inflight_condense")
	}

	// A conversation condensed once, its summaries cached, before the
	// summarizer slows down.
	cached := conversation(100)
	if r := post(cached, "full"); r.Header.Get(proxy.HeaderApplied) != "full" || r.Header.Get(proxy.HeaderDegraded) != "" {
		t.Fatalf("setup: applied %q, degraded %q", r.Header.Get(proxy.HeaderApplied), r.Header.Get(proxy.HeaderDegraded))
	}

	// slow conversations, each waiting for a summary that does not come;
	// each starts once the one before is waiting (8 arriving in the same
	// instant would find the places taken by each other's CPU work).
	up.hang.Store(true)
	var wg sync.WaitGroup
	answers := make([]*http.Response, slow)
	for i := range slow {
		body := conversation(int64(1 + i))
		wg.Add(1)
		done := make(chan struct{})
		go func() {
			defer wg.Done()
			defer close(done)
			answers[i] = post(body, "full")
		}()
		select {
		case <-up.entered:
		case <-done:
			// Answered without waiting for the summarizer: forwarded
			// unchanged as busy, say.
			release()
			wg.Wait()
			t.Fatalf("slow request %d did not wait for its summary: applied %q, degraded %q", i,
				answers[i].Header.Get(proxy.HeaderApplied), answers[i].Header.Get(proxy.HeaderDegraded))
		case <-time.After(time.Minute):
			release()
			wg.Wait()
			t.Fatalf("slow request %d: no summarizer call (applied %q, degraded %q)", i,
				answers[i].Header.Get(proxy.HeaderApplied), answers[i].Header.Get(proxy.HeaderDegraded))
		}
	}
	if n := up.waiting.Load(); n != slow {
		t.Fatalf("%d summaries in flight, want %d", n, slow)
	}

	// Meanwhile, every over-threshold request that needs no new summary
	// is condensed.
	others := []struct {
		name, mode string
		body       []byte
		applied    string
	}{
		{"summaries cached", "full", cached, "full"},
		{"selective", "selective", conversation(200), ""},
		{"selective, another", "selective", conversation(201), ""},
		{"summaries cached, again", "full", cached, "full"},
		{"selective, a third", "selective", conversation(202), ""},
	}
	for _, o := range others {
		r := post(o.body, o.mode)
		applied := r.Header.Get(proxy.HeaderApplied)
		if busy(r) || applied == "none" || applied == "" || o.applied != "" && applied != o.applied {
			t.Errorf("%s, with %d summaries in flight: applied %q, degraded %q", o.name, up.waiting.Load(), applied, r.Header.Get(proxy.HeaderDegraded))
		}
	}
	if n := up.waiting.Load(); n != slow {
		t.Fatalf("the summaries stopped waiting (%d in flight, want %d): the test did not hold them", n, slow)
	}

	// The summaries come: the slow requests are condensed with them.
	release()
	wg.Wait()
	for i, r := range answers {
		if busy(r) || r.Header.Get(proxy.HeaderApplied) != "full" {
			t.Errorf("slow request %d: applied %q, degraded %q", i, r.Header.Get(proxy.HeaderApplied), r.Header.Get(proxy.HeaderDegraded))
		}
	}
}
