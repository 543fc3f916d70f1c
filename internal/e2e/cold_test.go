package e2e_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/internal/replay"
)

// syncBuffer is a log sink safe for the proxy's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestColdTurnEndToEnd: a model whose cache_ttl is a few seconds, the
// proxy's engine on a clock the test moves. A session replayed a second
// of the clock between requests is condensed as usual; with a gap longer
// than the cache_ttl before a request over the threshold of the
// conversation auto has cut, that request is condensed to the target
// (today's proxy forwards it well over it), its log line says cold, and
// the requests after it keep its forwarded messages as their prefix.
func TestColdTurnEndToEnd(t *testing.T) {
	const (
		window = 48_000
		target = 0.3
		ttl    = 3 * time.Second
	)
	sess, _ := corpus.Synthetic(41, 500_000)
	run := func(gapAt int, n int) (*replay.Result, string) {
		clock := time.Unix(1_700_000_000, 0)
		var mu sync.Mutex
		now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
		logs := &syncBuffer{}
		st := harness.New(harness.Options{Window: window, Threshold: 0.8, Target: target, Summarizer: "llm", Now: now,
			Logger: slog.New(slog.NewTextHandler(logs, nil)),
			Model:  &config.ModelConfig{Encoding: "o200k_base", SafetyFactor: 1, CacheRead: 0.1, CacheWrite: 1.25, CacheTTL: ttl}})
		defer st.Close()
		every := 1
		res, err := replay.Run(context.Background(), truncated(sess, n), st.Fake, st.Counter, replay.Options{
			ProxyURL: st.Proxy.URL, Model: "gpt-4o", Mode: "auto", APIKey: "sk-cold", Window: window, Every: every,
			Drain: st.Drain, DrainEach: true,
			Before: func(i int) {
				mu.Lock()
				defer mu.Unlock()
				clock = clock.Add(time.Second)
				if i == gapAt {
					clock = clock.Add(ttl)
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return res, logs.String()
	}
	warm, _ := run(-1, -1)
	j := -1
	condensed := 0
	for k, r := range warm.Requests {
		if r.Applied == "none" {
			continue
		}
		// (cut with summaries: auto's digests alone do not move to the
		// target on a cold turn)
		if condensed++; condensed > 2 && r.TokensFwd > int(1.1*target*window) && k+4 < len(warm.Requests) && r.Applied == "full" &&
			r.PrefixKept == 1 && warm.Requests[k+1].PrefixKept == 1 && warm.Requests[k+2].PrefixKept == 1 && warm.Requests[k+3].PrefixKept == 1 {
			j = k
			break
		}
	}
	if j < 0 {
		t.Fatal("no request of the cut conversation forwarded over the target while its prefix held: the premise does not hold")
	}
	cold, logs := run(j, j+4)
	c := cold.Requests[j]
	t.Logf("request %d after the gap: %d tokens sent, %d forwarded (without the gap: %d)", j, c.TokensSent, c.TokensFwd, warm.Requests[j].TokensFwd)
	if c.TokensFwd > int(target*window) {
		t.Fatalf("request %d after the gap: %d tokens forwarded, over the target %d (without the gap %d)", j, c.TokensFwd, int(target*window), warm.Requests[j].TokensFwd)
	}
	if n := strings.Count(logs, "cold=true"); n != 1 {
		t.Errorf("%d log lines say cold, want 1", n)
	}
	for k := 0; k < j; k++ {
		if cold.Requests[k].TokensFwd != warm.Requests[k].TokensFwd {
			t.Fatalf("request %d before the gap: %d tokens forwarded, %d without the gap", k, cold.Requests[k].TokensFwd, warm.Requests[k].TokensFwd)
		}
	}
	for k := j + 1; k < len(cold.Requests); k++ {
		if r := cold.Requests[k]; r.PrefixKept != 1 || r.Applied == "none" {
			t.Errorf("warm request %d after the cold one: %.3f of the previous forwarded messages kept as its prefix, applied %s", k, r.PrefixKept, r.Applied)
		}
	}
}

// truncated returns sess up to its n-th request (all of it when n < 0).
func truncated(sess *corpus.Session, n int) *corpus.Session {
	ends := sess.TurnEnds()
	if n < 0 || n >= len(ends) {
		return sess
	}
	s := *sess
	s.Messages = s.Messages[:ends[n-1]]
	return &s
}
