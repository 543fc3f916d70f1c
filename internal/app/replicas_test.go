package app_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/redistest"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// countingSummarizer answers with a text derived from its input (the same
// input, the same summary, on any replica) and counts calls per input.
type countingSummarizer struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingSummarizer) Summarize(ctx context.Context, in condense.SummaryInput) (string, error) {
	h := sha256.Sum256([]byte(in.Text + "\x00" + in.Previous))
	k := hex.EncodeToString(h[:8])
	c.mu.Lock()
	c.calls[k]++
	c.mu.Unlock()
	select { // a call takes a while, so replicas overlap
	case <-time.After(30 * time.Millisecond):
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return "Summary " + k + ": the agent read files and ran the tests.", nil
}

func (c *countingSummarizer) duplicates() (calls, dup int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.calls {
		calls += n
		dup += n - 1
	}
	return calls, dup
}

// replica is one proxy built by the constructor serve uses, on a Redis.
type replica struct {
	srv  *httptest.Server
	fake *fakeupstream.Server
}

func newReplica(t testing.TB, redisURL, clusterURL, secret string, sum condense.Summarizer) replica {
	t.Helper()
	cfg := config.Defaults()
	cfg.RedisURL, cfg.RedisClusterURL = redisURL, clusterURL
	cfg.ScopeSecret = secret
	cfg.Condense.Summarizer = "llm"
	cfg.Condense.Mode = "full"
	cfg.Models = []config.ModelConfig{{Match: "*", ContextWindow: 16000}}
	fake := fakeupstream.New()
	a := newApp(t, &cfg, fake, app.Options{Summarizer: sum})
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	return replica{srv, fake}
}

func send(t *testing.T, base string, body []byte) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer sk-team-member")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return nil
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// An originals id in a forwarded request: a window marker's, or a
// summary's (summaries name theirs as id="…").
var originalsID = regexp.MustCompile(`(?:/v1/condense/originals/|summary id=\\?")([0-9a-f]+)`)

// replicasBehaveAsOne replays a long conversation through two replicas
// sharing one Redis — each turn sent to both at once, as a balancer
// alternating between them under concurrent retries would — and through
// a single replica on a Redis of its own: the summarizer is called once
// per distinct chunk across the pair, every forwarded request is
// byte-identical between the replicas and to the single one's, and the
// originals behind them are readable through either replica.
//
// secret is the replicas' scope_secret; empty, they share the one kept in
// Redis.
func replicasBehaveAsOne(t *testing.T, pairURL, pairCluster, aloneURL, secret string) {
	pairSum := &countingSummarizer{calls: map[string]int{}}
	a := newReplica(t, pairURL, pairCluster, secret, pairSum)
	b := newReplica(t, pairURL, pairCluster, secret, pairSum)
	alone := newReplica(t, aloneURL, "", secret, &countingSummarizer{calls: map[string]int{}})

	sess, _ := corpus.Synthetic(21, 400_000)
	ends := sess.TurnEnds()
	condensed := 0
	for _, n := range ends {
		body, err := sess.Request("gpt-4o", n)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var ra, rb *http.Response
		wg.Add(2)
		go func() { defer wg.Done(); ra = send(t, a.srv.URL, body) }()
		go func() { defer wg.Done(); rb = send(t, b.srv.URL, body) }()
		wg.Wait()
		ro := send(t, alone.srv.URL, body)
		if ra == nil || rb == nil || ro == nil {
			t.FailNow()
		}
		if ra.StatusCode != 200 || rb.StatusCode != 200 {
			t.Fatalf("%d messages: status %d / %d", n, ra.StatusCode, rb.StatusCode)
		}
		fa, fb, fo := last(a.fake), last(b.fake), last(alone.fake)
		if !bytes.Equal(fa, fb) {
			t.Fatalf("%d messages: the replicas forwarded different requests (%s / %s)", n, ra.Header.Get(proxy.HeaderApplied), rb.Header.Get(proxy.HeaderApplied))
		}
		if !bytes.Equal(fa, fo) {
			t.Fatalf("%d messages: the pair forwarded another request than a single replica (%s / %s)", n, ra.Header.Get(proxy.HeaderApplied), ro.Header.Get(proxy.HeaderApplied))
		}
		if ra.Header.Get(proxy.HeaderApplied) != "none" {
			condensed++
		}
	}
	if condensed < 5 {
		t.Fatalf("only %d requests condensed", condensed)
	}
	calls, dup := pairSum.duplicates()
	if calls == 0 || dup > 0 {
		t.Fatalf("summarizer: %d calls, %d of them repeating another's input", calls, dup)
	}
	// The originals behind the last forwarded request, through either
	// replica.
	m := originalsID.FindSubmatch(last(a.fake))
	if m == nil {
		t.Fatal("no originals id in the forwarded request")
	}
	for _, r := range []replica{a, b} {
		req, _ := http.NewRequest("GET", r.srv.URL+"/v1/condense/originals/"+string(m[1]), nil)
		req.Header.Set("Authorization", "Bearer sk-team-member")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("originals %s through %s: %d", m[1], r.srv.URL, resp.StatusCode)
		}
	}
	t.Logf("%d requests, %d condensed, %d summarizer calls, none repeated", len(ends), condensed, calls)
}

func last(f *fakeupstream.Server) []byte {
	got := f.Received()
	if len(got) == 0 {
		return nil
	}
	return got[len(got)-1].Body
}

// TestReplicasOnOneRedis: two replicas on the one Redis (the local one,
// database 0), the single replica on database 1.
func TestReplicasOnOneRedis(t *testing.T) {
	replicasBehaveAsOne(t, "redis://127.0.0.1:6379/0", "", "redis://127.0.0.1:6379/1", freshSecret())
}

// freshSecret is a scope secret of its own for each run, so nothing a
// previous run cached is found.
func freshSecret() string { return fmt.Sprint("replicas test ", time.Now().UnixNano()) }

// TestReplicasShareAGeneratedSecret: two replicas on one Redis with no
// scope_secret behave as one — they share the secret the first one kept
// in Redis, so the summarizer is called once per chunk across them — and
// a replica started later (a restart) finds the same scopes. Fresh
// Redis servers, so the secret is generated by this run.
func TestReplicasShareAGeneratedSecret(t *testing.T) {
	pair, alone := redistest.Start(t), redistest.Start(t)
	replicasBehaveAsOne(t, pair.URL(), "", alone.URL(), "")

	h := http.Header{"Authorization": {"Bearer sk-team-member"}}
	scope := func(url string) (string, string) {
		cfg := config.Defaults()
		cfg.RedisURL = url
		logs := &lockedBuffer{}
		a := newApp(t, &cfg, nil, app.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
		return a.Scoper.Scope(h), logs.String()
	}
	s1, log1 := scope(pair.URL())
	s2, _ := scope(pair.URL())
	s3, _ := scope(alone.URL())
	if s1 != s2 {
		t.Error("a restarted replica has other scopes")
	}
	if s1 == s3 {
		t.Error("replicas on different Redis servers share scopes: the secret is not random")
	}
	if strings.Contains(log1, "scope_secret is not set: a random one") || !strings.Contains(log1, "the secret the replicas share in Redis") {
		t.Errorf("log %q: want the shared secret said, no random-secret warning", log1)
	}
}

// TestSecretWithRedisDown: Redis unreachable at start and no
// scope_secret: the replica still starts, with a random secret, and says
// so at error level.
func TestSecretWithRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	cfg := config.Defaults()
	cfg.RedisURL = srv.URL()
	logs := &lockedBuffer{}
	a := newApp(t, &cfg, nil, app.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	b := newApp(t, &cfg, nil, app.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	h := http.Header{"Authorization": {"Bearer k"}}
	if a.Scoper.Scope(h) == b.Scoper.Scope(h) {
		t.Error("two replicas without Redis or secret share scopes: the secret is not random")
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "Redis did not answer at start") {
		t.Errorf("no loud error:\n%s", logs.String())
	}
}

// TestReplicasOnRedisCluster: the same on a three-node Redis Cluster
// started for the test.
func TestReplicasOnRedisCluster(t *testing.T) {
	replicasBehaveAsOne(t, "", redistest.Cluster(t, 3), "redis://127.0.0.1:6379/1", freshSecret())
}
