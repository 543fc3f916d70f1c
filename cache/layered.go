package cache

import (
	"context"
	"sync"
	"time"
)

// Layered puts a Memory in front of a Redis: reads try memory first and
// fill it from Redis; writes go to both. Memory entries live at most
// memoryTTL so other replicas' deletions are seen eventually. Redis is the
// truth: a value written while Redis was down lives in memory only,
// marked unconfirmed, and once Redis answers again the first read of it
// asks Redis — what Redis holds (another replica's summary) wins, and only
// a key Redis does not have takes the value from memory (set-if-absent).
type Layered struct {
	Mem   *Memory
	Redis *Redis
	// MemoryTTL bounds how long a value stays in memory; 0: the value's own
	// TTL.
	MemoryTTL time.Duration

	mu          sync.Mutex
	unconfirmed map[string]time.Duration // key -> its TTL, written while Redis was down
}

// maxUnconfirmed bounds the keys remembered as written during an outage;
// past it, outage writes are not kept in memory at all.
const maxUnconfirmed = 100000

func (l *Layered) memTTL(ttl time.Duration) time.Duration {
	if l.MemoryTTL > 0 && (ttl <= 0 || ttl > l.MemoryTTL) {
		return l.MemoryTTL
	}
	return ttl
}

// mark remembers key as written during an outage; false when the set is
// full.
func (l *Layered) mark(key string, ttl time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.unconfirmed == nil {
		l.unconfirmed = map[string]time.Duration{}
	}
	if _, ok := l.unconfirmed[key]; !ok && len(l.unconfirmed) >= maxUnconfirmed {
		return false
	}
	l.unconfirmed[key] = ttl
	return true
}

// confirm forgets key's mark and returns its TTL and whether it had one.
func (l *Layered) confirm(key string) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ttl, ok := l.unconfirmed[key]
	delete(l.unconfirmed, key)
	return ttl, ok
}

func (l *Layered) marked(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.unconfirmed[key]
	return ok
}

// Get reads memory, then Redis; a value written during an outage is
// checked against Redis once it answers again.
func (l *Layered) Get(ctx context.Context, key string) ([]byte, bool) {
	v, ok := l.Mem.Get(ctx, key)
	if ok && (!l.marked(key) || l.Redis.Down()) {
		return v, true
	}
	if ok {
		// Written during the outage: what Redis has wins.
		ttl, _ := l.confirm(key)
		stored, rok := l.Redis.Add(ctx, key, v, ttl)
		if !rok {
			l.mark(key, ttl)
			return v, true
		}
		l.Mem.Set(ctx, key, stored, l.memTTL(ttl))
		return stored, true
	}
	v, ok = l.Redis.Get(ctx, key)
	if ok {
		l.Mem.Set(ctx, key, v, l.memTTL(0))
	}
	return v, ok
}

// Current reads Redis, never the memory layer, for values that change in
// place (a conversation's state, which another replica may have moved
// since this one last read it): a copy kept in memory would be stale.
// While Redis is down it answers from memory, as Get does.
func (l *Layered) Current(ctx context.Context, key string) ([]byte, bool) {
	if l.Redis.Down() {
		return l.Mem.Get(ctx, key)
	}
	v, ok := l.Redis.Get(ctx, key)
	if !ok && l.Redis.Down() { // the read itself found Redis down
		return l.Mem.Get(ctx, key)
	}
	return v, ok
}

// Set writes both layers; while Redis is down, memory only, marked.
func (l *Layered) Set(ctx context.Context, key string, value []byte, ttl time.Duration) {
	l.set(ctx, key, value, ttl, l.Mem.Set)
}

// SetOwned is Set for a value the caller hands over (Memory.SetOwned):
// the memory layer keeps it without a copy.
func (l *Layered) SetOwned(ctx context.Context, key string, value []byte, ttl time.Duration) {
	l.set(ctx, key, value, ttl, l.Mem.SetOwned)
}

// set writes value to memory with setMem and to Redis; while Redis is
// down, to memory only, marked.
func (l *Layered) set(ctx context.Context, key string, value []byte, ttl time.Duration,
	setMem func(context.Context, string, []byte, time.Duration)) {
	if l.Redis.Down() {
		if l.mark(key, ttl) {
			setMem(ctx, key, value, l.memTTL(ttl))
		}
		return
	}
	setMem(ctx, key, value, l.memTTL(ttl))
	l.Redis.Set(ctx, key, value, ttl)
}

// Add stores value unless Redis (or, while it is down, memory) holds one,
// and returns the value held: the first writer's across replicas.
func (l *Layered) Add(ctx context.Context, key string, value []byte, ttl time.Duration) ([]byte, bool) {
	if !l.Redis.Down() {
		if stored, ok := l.Redis.Add(ctx, key, value, ttl); ok {
			l.Mem.Set(ctx, key, stored, l.memTTL(ttl))
			return stored, true
		}
	}
	stored, _ := l.Mem.Add(ctx, key, value, l.memTTL(ttl))
	if string(stored) == string(value) && !l.mark(key, ttl) {
		l.Mem.Delete(ctx, key)
	}
	return stored, true
}

// Swap sets key to value when Redis holds old (nil: when it is absent),
// and keeps what Redis holds afterwards in memory; while Redis is down,
// memory only, marked, as Set's writes are.
func (l *Layered) Swap(ctx context.Context, key string, old, value []byte, ttl time.Duration) ([]byte, bool, error) {
	if !l.Redis.Down() {
		cur, ok, err := l.Redis.Swap(ctx, key, old, value, ttl)
		if err == nil {
			if cur != nil {
				l.Mem.Set(ctx, key, cur, l.memTTL(ttl))
			} else {
				l.Mem.Delete(ctx, key)
			}
			return cur, ok, nil
		}
	}
	cur, ok, _ := l.Mem.Swap(ctx, key, old, value, l.memTTL(ttl))
	if ok && !l.mark(key, ttl) {
		l.Mem.Delete(ctx, key)
	}
	return cur, ok, nil
}

// Delete removes key from both layers.
func (l *Layered) Delete(ctx context.Context, key string) {
	l.Mem.Delete(ctx, key)
	l.Redis.Delete(ctx, key)
	l.confirm(key)
}

// Lock delegates to Redis.
func (l *Layered) Lock(ctx context.Context, key string, ttl time.Duration) (func(), bool) {
	return l.Redis.Lock(ctx, key, ttl)
}

// Ping checks Redis.
func (l *Layered) Ping(ctx context.Context) error { return l.Redis.Ping(ctx) }

// Stats sums hits over both layers; misses and errors are Redis's (a
// memory miss that Redis answers is a hit).
func (l *Layered) Stats() Stats {
	m, r := l.Mem.Stats(), l.Redis.Stats()
	return Stats{Hits: m.Hits + r.Hits, Misses: r.Misses, Errors: r.Errors, Degraded: r.Degraded}
}
