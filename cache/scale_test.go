package cache

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/internal/redistest"
)

func newRedis(t *testing.T, o RedisOptions) *Redis {
	t.Helper()
	r, err := NewRedis(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func uniqueKey(t *testing.T) string {
	return fmt.Sprintf("test:%s:%d", t.Name(), time.Now().UnixNano())
}

// eventually polls cond (every 20 ms, at most 10 s): state, not timing.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("never: %s", what)
}

// TestCircuitBreaker: one failed command does not mark Redis down for
// everyone; FailThreshold consecutive ones do, and a success restores it.
func TestCircuitBreaker(t *testing.T) {
	srv := redistest.Start(t)
	r := newRedis(t, RedisOptions{URL: srv.URL(), FailThreshold: 3, ProbeInterval: time.Millisecond, Timeout: 200 * time.Millisecond})
	ctx := context.Background()
	if err := r.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	r.Get(ctx, "a")
	if r.Down() {
		t.Fatal("one failure marked Redis down")
	}
	r.Get(ctx, "a")
	r.Get(ctx, "a")
	if !r.Down() {
		t.Fatal("three consecutive failures did not mark Redis down")
	}
	srv.Restart()
	eventually(t, "redis back after a probe", func() bool { r.Get(ctx, "a"); return !r.Down() })
}

// TestLockRenewedAndFreedWhenHolderDies: a held lock outlives its lease
// (renewed while held); a holder that never renews (died) frees it within
// one lease; release frees it at once, and only for its owner.
func TestLockRenewedAndFreedWhenHolderDies(t *testing.T) {
	r := newRedis(t, RedisOptions{URL: redisURL()})
	ctx := context.Background()
	if err := r.Ping(ctx); err != nil {
		t.Fatalf("no Redis at %s: %v", redisURL(), err)
	}
	key := uniqueKey(t)
	// A lease long enough that a renewal (every third of it) is never
	// late on a loaded machine: the test is about renewal, not speed.
	const lease = 2 * time.Second
	release, ok := r.Lock(ctx, key, lease)
	if !ok {
		t.Fatal("lock refused")
	}
	// Renewed: the lease's remaining time goes up again, three times,
	// and the lock is never lost in between.
	renewals, prev := 0, r.client.PTTL(ctx, Prefix+"lock:"+key).Val()
	eventually(t, "three renewals observed", func() bool {
		ttl := r.client.PTTL(ctx, Prefix+"lock:"+key).Val()
		if ttl <= 0 {
			t.Fatalf("the lock was lost while held (PTTL %v)", ttl)
		}
		if ttl > prev {
			renewals++
		}
		prev = ttl
		return renewals >= 3
	})
	if _, ok := r.Lock(ctx, key, time.Second); ok {
		t.Fatal("lock granted to a second holder while renewed")
	}
	release()
	if _, ok := r.Lock(ctx, key, time.Second); !ok {
		t.Fatal("lock not free after release")
	}
	// A dead holder: a lock taken and never renewed (set directly).
	dead := uniqueKey(t)
	r.client.Set(ctx, Prefix+"lock:"+dead, "someone-else", 300*time.Millisecond)
	if _, ok := r.Lock(ctx, dead, time.Second); ok {
		t.Fatal("lock granted while another holds it")
	}
	eventually(t, "a dead holder's lock freed by its lease", func() bool { _, ok := r.Lock(ctx, dead, time.Second); return ok })
}

// TestAddFirstWriterWins: two replicas (two Layered stores on one Redis)
// adding different texts under one key both end up with the first one.
func TestAddFirstWriterWins(t *testing.T) {
	ctx := context.Background()
	a := &Layered{Mem: NewMemory(1 << 20), Redis: newRedis(t, RedisOptions{URL: redisURL()})}
	b := &Layered{Mem: NewMemory(1 << 20), Redis: newRedis(t, RedisOptions{URL: redisURL()})}
	key := uniqueKey(t)
	var wg sync.WaitGroup
	got := make([]string, 20)
	for i := range got {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := a
			if i%2 == 1 {
				s = b
			}
			v, _ := s.Add(ctx, key, []byte(fmt.Sprint("summary from writer ", i)), time.Minute)
			got[i] = string(v)
		}(i)
	}
	wg.Wait()
	for i := range got {
		if got[i] != got[0] {
			t.Fatalf("writers disagree: %q vs %q", got[i], got[0])
		}
	}
	va, _ := a.Get(ctx, key)
	vb, _ := b.Get(ctx, key)
	if string(va) != got[0] || string(vb) != got[0] {
		t.Fatalf("stores hold %q and %q, want %q", va, vb, got[0])
	}
}

// TestOutageWritesNotTrustedOverRedis: what a replica wrote while Redis
// was down is served from its memory during the outage; when Redis comes
// back holding another replica's value, that value wins; a key Redis does
// not hold takes the outage value.
func TestOutageWritesNotTrustedOverRedis(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	mk := func() *Layered {
		return &Layered{Mem: NewMemory(1 << 20), Redis: newRedis(t, RedisOptions{URL: srv.URL(), FailThreshold: 1, ProbeInterval: time.Millisecond, Timeout: 200 * time.Millisecond})}
	}
	a, b := mk(), mk()
	srv.Stop()
	a.Get(ctx, "probe") // a learns Redis is down
	if !a.Redis.Down() {
		t.Fatal("a did not see the outage")
	}
	a.Set(ctx, "shared", []byte("written by a during the outage"), time.Hour)
	a.Set(ctx, "only-a", []byte("a's"), time.Hour)
	if v, ok := a.Get(ctx, "shared"); !ok || string(v) != "written by a during the outage" {
		t.Fatalf("during the outage a reads %q %v", v, ok)
	}
	srv.Restart()
	eventually(t, "b writes once Redis is back", func() bool {
		b.Redis.Ping(ctx)
		return !b.Redis.Down()
	})
	b.Set(ctx, "shared", []byte("written by b after the outage"), time.Hour)
	eventually(t, "a sees Redis back", func() bool { a.Redis.Ping(ctx); return !a.Redis.Down() })
	if v, _ := a.Get(ctx, "shared"); string(v) != "written by b after the outage" {
		t.Fatalf("a trusted its outage write over Redis: %q", v)
	}
	if v, _ := a.Get(ctx, "only-a"); string(v) != "a's" {
		t.Fatalf("a lost an outage write Redis did not have: %q", v)
	}
	if v, _ := b.Get(ctx, "only-a"); string(v) != "a's" {
		t.Fatalf("a's outage write did not reach Redis once confirmed: %q", v)
	}
}

// TestCluster: the same store on a three-node Redis Cluster: values,
// set-if-absent and locks, over keys spread across the slots.
func TestCluster(t *testing.T) {
	u := redistest.Cluster(t, 3)
	ctx := context.Background()
	r := newRedis(t, RedisOptions{ClusterURL: u, Timeout: time.Second})
	if err := r.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		key := fmt.Sprint("summary:", i)
		r.Set(ctx, key, []byte(key), time.Minute)
		if v, ok := r.Get(ctx, key); !ok || string(v) != key {
			t.Fatalf("%s: %q %v", key, v, ok)
		}
		if v, ok := r.Add(ctx, key, []byte("late"), time.Minute); !ok || string(v) != key {
			t.Fatalf("%s: Add returned %q %v", key, v, ok)
		}
		release, ok := r.Lock(ctx, key, time.Second)
		if !ok {
			t.Fatalf("%s: lock refused", key)
		}
		if _, ok := r.Lock(ctx, key, time.Second); ok {
			t.Fatalf("%s: second lock granted", key)
		}
		release()
	}
	if r.Down() || r.Stats().Errors > 0 {
		t.Fatalf("errors on the cluster: %+v", r.Stats())
	}
}
