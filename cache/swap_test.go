package cache

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// swapper is the capability under test.
type swapper interface {
	Swap(ctx context.Context, key string, old, value []byte, ttl time.Duration) ([]byte, bool, error)
	Get(ctx context.Context, key string) ([]byte, bool)
}

// TestSwap: compare-and-set in every store — a swap wins only against
// what the key holds (nil: absent) and otherwise returns it; replicas
// adding to one record each in a loop of swaps lose no one's addition.
func TestSwap(t *testing.T) {
	ctx := context.Background()
	redisStore := func(t *testing.T) *Redis {
		r, err := NewRedis(RedisOptions{URL: redisURL()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		if err := r.Ping(ctx); err != nil {
			t.Fatalf("no Redis at %s (.ci/run starts one): %v", redisURL(), err)
		}
		return r
	}
	stores := map[string]func(t *testing.T) []swapper{
		"memory": func(t *testing.T) []swapper { m := NewMemory(1 << 20); return []swapper{m, m} },
		"redis":  func(t *testing.T) []swapper { return []swapper{redisStore(t), redisStore(t)} },
		"layered": func(t *testing.T) []swapper {
			return []swapper{&Layered{Mem: NewMemory(1 << 20), Redis: redisStore(t), MemoryTTL: time.Minute},
				&Layered{Mem: NewMemory(1 << 20), Redis: redisStore(t), MemoryTTL: time.Minute}}
		},
	}
	for name, make := range stores {
		t.Run(name, func(t *testing.T) {
			s := make(t)
			a, b := s[0], s[1]
			key := fmt.Sprintf("test:swap:%s:%d", name, time.Now().UnixNano())
			steps := []struct {
				s          swapper
				old, value string
				absent     bool // old is nil
				want       string
				ok         bool
			}{
				{a, "", "one", true, "one", true},
				{b, "", "two", true, "one", false},   // not absent any more
				{b, "x", "two", false, "one", false}, // not what it holds
				{b, "one", "two", false, "two", true},
				{a, "one", "three", false, "two", false}, // a's view is stale
			}
			for i, st := range steps {
				var old []byte
				if !st.absent {
					old = []byte(st.old)
				}
				cur, ok, err := st.s.Swap(ctx, key, old, []byte(st.value), time.Minute)
				if err != nil || ok != st.ok || string(cur) != st.want {
					t.Fatalf("step %d: Swap(%q → %q) = %q %v %v, want %q %v", i, st.old, st.value, cur, ok, err, st.want, st.ok)
				}
			}
			if v, ok := b.Get(ctx, key); !ok || string(v) != "two" {
				t.Errorf("Get = %q %v, want two", v, ok)
			}
			// Writers racing on one record: each adds its line with a loop
			// of swaps; none is lost.
			rec := key + ":record"
			var wg sync.WaitGroup
			for w := 0; w < 16; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					st := s[w%2]
					var cur []byte
					for try := 0; try < 100; try++ {
						next := append(append([]byte{}, cur...), fmt.Sprintf("w%d;", w)...)
						got, ok, err := st.Swap(ctx, rec, cur, next, time.Minute)
						if err != nil {
							t.Error(err)
							return
						}
						if ok {
							return
						}
						cur = got
					}
					t.Errorf("writer %d: no swap in 100 tries", w)
				}(w)
			}
			wg.Wait()
			v, _ := b.Get(ctx, rec)
			if c, ok := b.(interface {
				Current(context.Context, string) ([]byte, bool)
			}); ok {
				v, _ = c.Current(ctx, rec) // Layered's Get may answer its memory's copy
			}
			for w := 0; w < 16; w++ {
				if !strings.Contains(string(v), fmt.Sprintf("w%d;", w)) {
					t.Errorf("writer %d's addition lost: %q", w, v)
				}
			}
		})
	}
}
