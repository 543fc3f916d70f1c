package cache

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

func TestMemoryLRUByBytes(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(4096)
	val := bytes.Repeat([]byte("x"), 900)
	for i := 0; i < 10; i++ {
		m.Set(ctx, fmt.Sprint("k", i), val, 0)
		if i == 2 {
			m.Get(ctx, "k0") // k0 becomes most recently used
		}
	}
	if m.Bytes() > 4096 {
		t.Fatalf("holds %d bytes, bound 4096", m.Bytes())
	}
	if _, ok := m.Get(ctx, "k9"); !ok {
		t.Error("newest entry evicted")
	}
	if _, ok := m.Get(ctx, "k1"); ok {
		t.Error("least recently used entry kept")
	}
	m.Set(ctx, "huge", bytes.Repeat([]byte("y"), 10000), 0)
	if _, ok := m.Get(ctx, "huge"); ok {
		t.Error("value larger than the cache was stored")
	}
}

func TestMemoryTTLAndCopies(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(1 << 20)
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	v := []byte("value")
	m.Set(ctx, "a", v, time.Minute)
	v[0] = 'X'
	got, ok := m.Get(ctx, "a")
	if !ok || string(got) != "value" {
		t.Fatalf("Get = %q %v, want the stored copy", got, ok)
	}
	got[0] = 'Y'
	if again, _ := m.Get(ctx, "a"); string(again) != "value" {
		t.Fatal("caller's slice aliases the cache")
	}
	now = now.Add(61 * time.Second)
	if _, ok := m.Get(ctx, "a"); ok {
		t.Fatal("expired entry returned")
	}
	m.Set(ctx, "b", v, 0)
	m.Delete(ctx, "b")
	if _, ok := m.Get(ctx, "b"); ok {
		t.Fatal("deleted entry returned")
	}
	if s := m.Stats(); s.Hits != 2 || s.Misses != 2 {
		t.Errorf("stats %+v, want 2 hits 2 misses", s)
	}
}

// TestMemorySetOwnedKeepsTheValue: a value handed over is kept without a
// copy (SetOwned allocates nothing of its size), read back as it was, and
// still counted against the bound.
func TestMemorySetOwnedKeepsTheValue(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(4 << 20)
	v := bytes.Repeat([]byte("o"), 1<<20)
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	m.SetOwned(ctx, "a", v, time.Minute)
	runtime.ReadMemStats(&ms1)
	if grew := ms1.TotalAlloc - ms0.TotalAlloc; grew >= 1<<20 {
		t.Errorf("SetOwned allocated %d bytes for a value of 1 MiB (copied it)", grew)
	}
	if got, ok := m.Get(ctx, "a"); !ok || !bytes.Equal(got, v) {
		t.Fatalf("Get after SetOwned = %d bytes %v", len(got), ok)
	}
	if m.Bytes() < 1<<20 {
		t.Errorf("holds %d bytes, want the value counted", m.Bytes())
	}
}

func TestMemoryConcurrent(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(64 << 10)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				k := fmt.Sprint(i % 50)
				m.Set(ctx, k, []byte(strings.Repeat("v", i)), time.Minute)
				m.Get(ctx, k)
			}
		}(g)
	}
	wg.Wait()
	if m.Bytes() > 64<<10 {
		t.Fatalf("over bound: %d", m.Bytes())
	}
}

func redisURL() string {
	if u := os.Getenv("REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// TestRedisReal talks to a real server (REDIS_URL, default the local one).
func TestRedisReal(t *testing.T) {
	ctx := context.Background()
	r, err := NewRedis(RedisOptions{URL: redisURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Ping(ctx); err != nil {
		t.Fatalf("no Redis at %s (.ci/run starts one): %v", redisURL(), err)
	}
	key := fmt.Sprintf("test:%d", time.Now().UnixNano())
	r.Set(ctx, key, []byte("hello"), 2*time.Second)
	if v, ok := r.Get(ctx, key); !ok || string(v) != "hello" {
		t.Fatalf("Get = %q %v", v, ok)
	}
	ttl := r.client.TTL(ctx, Prefix+key).Val()
	if ttl <= 0 || ttl > 2*time.Second {
		t.Errorf("TTL %v, want (0,2s]", ttl)
	}
	r.Delete(ctx, key)
	if _, ok := r.Get(ctx, key); ok {
		t.Fatal("deleted key returned")
	}
	release, ok := r.Lock(ctx, key, 5*time.Second)
	if !ok {
		t.Fatal("first lock refused")
	}
	if _, ok2 := r.Lock(ctx, key, 5*time.Second); ok2 {
		t.Fatal("second lock granted while held")
	}
	release()
	if rel, ok3 := r.Lock(ctx, key, 5*time.Second); !ok3 {
		t.Fatal("lock not released")
	} else {
		rel()
	}
	if s := r.Stats(); s.Errors != 0 || s.Degraded {
		t.Errorf("stats %+v", s)
	}
}

// TestRedisDownAndBack stops the server mid-run: calls degrade to misses,
// one log line marks each change, and the store recovers by itself.
func TestRedisDownAndBack(t *testing.T) {
	ctx := context.Background()
	mr := miniredis.RunT(t)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	r, err := NewRedis(RedisOptions{URL: "redis://" + mr.Addr(), Timeout: 200 * time.Millisecond, Logger: log, ProbeInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l := &Layered{Mem: NewMemory(1 << 20), Redis: r, MemoryTTL: time.Minute}

	l.Set(ctx, "a", []byte("1"), time.Hour)
	if v, ok := r.Get(ctx, "a"); !ok || string(v) != "1" {
		t.Fatalf("redis Get = %q %v", v, ok)
	}
	mr.Close()
	downAt := time.Now()
	for i := 0; i < 20; i++ {
		if _, ok := r.Get(ctx, "a"); ok {
			t.Fatal("hit while Redis is down")
		}
		r.Set(ctx, "b", []byte("2"), time.Hour)
	}
	t.Logf("20 failed Get+Set pairs took %v", time.Since(downAt))
	// The layered store still answers from memory.
	if v, ok := l.Get(ctx, "a"); !ok || string(v) != "1" {
		t.Fatalf("layered Get while down = %q %v", v, ok)
	}
	if s := r.Stats(); !s.Degraded || s.Errors < 20 {
		t.Errorf("stats while down %+v", s)
	}
	if err := r.Ping(ctx); err == nil {
		t.Error("Ping succeeded while down")
	}
	if n := strings.Count(logs.String(), "redis unavailable"); n != 1 {
		t.Errorf("%d 'unavailable' log lines, want 1:\n%s", n, logs.String())
	}
	if err := mr.Restart(); err != nil {
		t.Fatal(err)
	}
	upAt := time.Now()
	deadline := time.Now().Add(5 * time.Second)
	for r.Ping(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatal("did not recover")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("recovered after %v", time.Since(upAt))
	r.Set(ctx, "c", []byte("3"), time.Hour)
	if v, ok := r.Get(ctx, "c"); !ok || string(v) != "3" {
		t.Fatalf("after restart Get = %q %v", v, ok)
	}
	if s := r.Stats(); s.Degraded {
		t.Error("still degraded after recovery")
	}
	if !strings.Contains(logs.String(), "redis reachable again") {
		t.Errorf("no recovery log line:\n%s", logs.String())
	}
}

func TestRedisBadURL(t *testing.T) {
	if _, err := NewRedis(RedisOptions{URL: "http://nope"}); err == nil {
		t.Fatal("want error")
	}
}

// TestLayeredCurrentIsNotAStaleCopy: two replicas' layered caches on one
// Redis. After one has read a key (and kept a copy in its memory), the
// other changes it: Get may still answer the copy, Current answers what
// Redis holds now.
func TestLayeredCurrentIsNotAStaleCopy(t *testing.T) {
	ctx := context.Background()
	layered := func() *Layered {
		r, err := NewRedis(RedisOptions{URL: redisURL()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return &Layered{Mem: NewMemory(1 << 20), Redis: r, MemoryTTL: time.Minute}
	}
	a, b := layered(), layered()
	key := fmt.Sprintf("test:current:%d", time.Now().UnixNano())
	a.Set(ctx, key, []byte("old"), time.Minute)
	if v, ok := b.Get(ctx, key); !ok || string(v) != "old" {
		t.Fatalf("b.Get = %q %v", v, ok)
	}
	a.Set(ctx, key, []byte("new"), time.Minute)
	if v, ok := b.Get(ctx, key); !ok || string(v) != "old" {
		t.Logf("b.Get = %q %v (its copy)", v, ok)
	}
	if v, ok := b.Current(ctx, key); !ok || string(v) != "new" {
		t.Fatalf("b.Current = %q %v, want what Redis holds: new", v, ok)
	}
}

// A scope that writes more than the store holds pushes out its own
// entries, not another scope's; the global bound holds.
func TestScopedMemoryEvictsTheLargestScopeFirst(t *testing.T) {
	ctx := context.Background()
	m := NewScopedMemory(64<<10, KindScope)
	big := bytes.Repeat([]byte("x"), 4<<10)
	m.Set(ctx, "orig:a:1", big, 0)
	m.Set(ctx, "orig:a:2", big, 0)
	m.Set(ctx, "sum", big, 0) // unscoped: a scope of its own
	for i := range 200 {
		m.Set(ctx, fmt.Sprintf("orig:b:%d", i), big, 0)
		if m.Bytes() > 64<<10 {
			t.Fatalf("after %d writes holds %d bytes, bound %d", i+1, m.Bytes(), 64<<10)
		}
	}
	for _, k := range []string{"orig:a:1", "orig:a:2", "sum"} {
		if _, ok := m.Get(ctx, k); !ok {
			t.Errorf("%s evicted by another scope's writes", k)
		}
	}
	if _, ok := m.Get(ctx, "orig:b:199"); !ok {
		t.Error("the flooding scope's newest entry evicted")
	}
	if _, ok := m.Get(ctx, "orig:b:0"); ok {
		t.Error("the flooding scope's oldest entry kept past the bound")
	}
	// A scope's single entry larger than every other scope's share is
	// what goes when the store is full: its own.
	m.Set(ctx, "orig:c:x", bytes.Repeat([]byte("y"), 60<<10), 0)
	if _, ok := m.Get(ctx, "orig:a:1"); !ok {
		t.Error("a scope's entry evicted by a larger scope's write")
	}
	if got := m.ScopeBytes("a") + m.ScopeBytes("b") + m.ScopeBytes("c") + m.ScopeBytes(""); got != m.Bytes() {
		t.Errorf("scopes hold %d bytes, store %d", got, m.Bytes())
	}
}

func TestKindScope(t *testing.T) {
	for key, want := range map[string]string{
		"orig:abc:id1": "abc", "mem:abc:conv:3": "abc", "sum:hash": "", "plain": "", "orig::id": "",
	} {
		if got := KindScope(key); got != want {
			t.Errorf("KindScope(%q) = %q, want %q", key, got, want)
		}
	}
}
