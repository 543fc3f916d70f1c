package app_test

import (
	"bytes"
	"net/http/httptest"
	"testing"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/redistest"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// TestReplicasAlternateOnRedisCluster: two replicas built by the
// constructor serve uses, on a three-node Redis Cluster, handed a
// session's requests alternately (a round-robin balancer: each sees every
// other request), forward every request byte for byte as one replica
// handed all of them does — in every mode. Before the conversation's state
// moved into the shared store, selective and auto disagreed from the
// conversation's first window cut on (the replicas' memory copies of the
// cut were stale).
func TestReplicasAlternateOnRedisCluster(t *testing.T) {
	cluster := redistest.Cluster(t, 3)
	alone := redistest.Start(t)
	for _, mode := range []string{"full", "selective", "auto"} {
		t.Run(mode, func(t *testing.T) {
			secret := freshSecret()
			newOne := func(redisURL, clusterURL string) replica {
				cfg := config.Defaults()
				cfg.RedisURL, cfg.RedisClusterURL = redisURL, clusterURL
				cfg.ScopeSecret = secret
				cfg.Condense.Summarizer = "llm"
				cfg.Condense.Mode = mode
				cfg.Models = []config.ModelConfig{{Match: "*", ContextWindow: 16000}}
				fake := fakeupstream.New()
				a := newApp(t, &cfg, fake, app.Options{Summarizer: &countingSummarizer{calls: map[string]int{}}})
				srv := httptest.NewServer(a.Handler)
				t.Cleanup(srv.Close)
				return replica{srv, fake}
			}
			pair := []replica{newOne("", cluster), newOne("", cluster)}
			one := newOne(alone.URL(), "")
			sess, _ := corpus.Synthetic(23, 300_000)
			condensed := 0
			for i, n := range sess.TurnEnds() {
				body, err := sess.Request("gpt-4o", n)
				if err != nil {
					t.Fatal(err)
				}
				r := pair[i%2]
				rp, ro := send(t, r.srv.URL, body), send(t, one.srv.URL, body)
				if rp == nil || ro == nil {
					t.FailNow()
				}
				if rp.StatusCode != 200 || ro.StatusCode != 200 {
					t.Fatalf("request %d: status %d / %d", i, rp.StatusCode, ro.StatusCode)
				}
				if !bytes.Equal(last(r.fake), last(one.fake)) {
					t.Fatalf("request %d: the pair forwarded other bytes than one replica (%s / %s)", i,
						rp.Header.Get(proxy.HeaderApplied), ro.Header.Get(proxy.HeaderApplied))
				}
				if ro.Header.Get(proxy.HeaderApplied) != "none" {
					condensed++
				}
			}
			if condensed < 5 {
				t.Fatalf("only %d requests condensed", condensed)
			}
		})
	}
}
