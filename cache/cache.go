// Package cache stores byte values under string keys with a time to live.
//
// Three stores share one method set (Get, Set, Delete, Ping, Stats):
//
//   - Memory: an in-process LRU bounded by bytes; the default when no Redis
//     is configured. NewScopedMemory keeps each scope (a caller) apart:
//     when full, the scope holding the most bytes loses its least recently
//     used entry, so one scope cannot push out another's. A key names its
//     scope by convention, "kind:scope:rest" (KindScope).
//   - Redis: go-redis against one server. When Redis is down every call
//     degrades to a miss (Set and Delete to no-ops): requests still
//     succeed, the failure is counted, and a single log line marks the
//     change of state each way, so a long outage does not flood the log.
//     go-redis reconnects by itself when the server returns.
//   - Layered: Memory in front of Redis, so hot values skip the network.
//
// Keys are namespaced with Prefix. The package knows nothing of what it
// stores beyond the scope convention above. All stores are safe for concurrent use.
package cache

import (
	"context"
	"sync/atomic"
	"time"
)

// Prefix namespaces every key written to Redis.
const Prefix = "condense:v1:"

// Stats are a store's running counts since it was created.
type Stats struct {
	Hits, Misses, Errors uint64
	// Degraded is true while the store's backend is unreachable.
	Degraded bool
}

type counters struct {
	hits, misses, errors atomic.Uint64
}

func (c *counters) stats() Stats {
	return Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Errors: c.errors.Load()}
}

func (c *counters) record(ok bool) {
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
}

// Store is the method set every store here has. Consumers declare the
// subset they need; this one is for wiring and tests.
type Store interface {
	Get(ctx context.Context, key string) ([]byte, bool)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration)
	Delete(ctx context.Context, key string)
	Ping(ctx context.Context) error
	Stats() Stats
}

var (
	_ Store = (*Memory)(nil)
	_ Store = (*Redis)(nil)
	_ Store = (*Layered)(nil)
)
