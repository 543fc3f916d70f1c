package cache

import (
	"context"
	"time"
)

// Layered puts a Memory in front of a Redis: reads try memory first and
// fill it from Redis; writes go to both. Memory entries live at most
// memoryTTL so other replicas' deletions are seen eventually.
type Layered struct {
	Mem   *Memory
	Redis *Redis
	// MemoryTTL bounds how long a value stays in memory; 0: the value's own
	// TTL.
	MemoryTTL time.Duration
}

func (l *Layered) memTTL(ttl time.Duration) time.Duration {
	if l.MemoryTTL > 0 && (ttl <= 0 || ttl > l.MemoryTTL) {
		return l.MemoryTTL
	}
	return ttl
}

// Get reads memory, then Redis.
func (l *Layered) Get(ctx context.Context, key string) ([]byte, bool) {
	if v, ok := l.Mem.Get(ctx, key); ok {
		return v, true
	}
	v, ok := l.Redis.Get(ctx, key)
	if ok {
		l.Mem.Set(ctx, key, v, l.memTTL(0))
	}
	return v, ok
}

// Set writes both layers.
func (l *Layered) Set(ctx context.Context, key string, value []byte, ttl time.Duration) {
	l.Mem.Set(ctx, key, value, l.memTTL(ttl))
	l.Redis.Set(ctx, key, value, ttl)
}

// Delete removes key from both layers.
func (l *Layered) Delete(ctx context.Context, key string) {
	l.Mem.Delete(ctx, key)
	l.Redis.Delete(ctx, key)
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
