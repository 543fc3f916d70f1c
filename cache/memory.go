package cache

import (
	"bytes"
	"container/heap"
	"container/list"
	"context"
	"strings"
	"sync"
	"time"
)

// entryOverhead approximates the bookkeeping bytes of one entry.
const entryOverhead = 96

// Memory is an LRU cache bounded by the bytes of its keys and values.
// Values are copied in and out, so callers may reuse their slices.
//
// Scopes. A Memory made with NewScopedMemory keeps each scope's entries
// (a caller's, say) in an LRU of their own: when the store is full it
// evicts the least recently used entry of the scope holding the most bytes,
// so one scope's writes push out its own entries before anyone else's, and
// a scope holding no more than its share (the bound over the scopes
// present) keeps everything. Keys whose scope is "" form one scope
// together. Without scopes (NewMemory) it is one LRU.
type Memory struct {
	maxBytes int64
	now      func() time.Time
	scopeOf  func(key string) string // nil: one scope

	addMu sync.Mutex // serializes Add (Get then Set)
	mu    sync.Mutex
	bytes int64
	items map[string]*list.Element
	parts map[string]*partition
	heap  partHeap // every non-empty partition, largest first

	counters
}

type memEntry struct {
	key     string
	value   []byte
	expires time.Time // zero: never
	part    *partition
}

// partition is one scope's entries.
type partition struct {
	scope string
	bytes int64
	ll    list.List // front: most recently used
	index int       // in the heap
}

// NewMemory returns a Memory holding at most maxBytes (at least 1 KiB).
func NewMemory(maxBytes int64) *Memory { return NewScopedMemory(maxBytes, nil) }

// NewScopedMemory returns a Memory holding at most maxBytes (at least 1
// KiB), its keys' scopes named by scopeOf (KindScope for keys that follow
// the "kind:scope:rest" convention). A nil scopeOf puts every key in one
// scope: NewMemory.
func NewScopedMemory(maxBytes int64, scopeOf func(key string) string) *Memory {
	return &Memory{maxBytes: max(maxBytes, 1024), now: time.Now, scopeOf: scopeOf,
		items: make(map[string]*list.Element), parts: make(map[string]*partition)}
}

// KindScope reads the scope of a key that follows the convention
// "kind:scope:rest" — the scope is the field between the first two
// colons, and kind names what is stored (condense's originals,
// "orig:<scope>:<id>"; memory's slots, "mem:<scope>:<conversation>:<n>").
// A key with fewer than three fields has scope "".
func KindScope(key string) string {
	_, rest, ok := strings.Cut(key, ":")
	if !ok {
		return ""
	}
	scope, _, ok := strings.Cut(rest, ":")
	if !ok {
		return ""
	}
	return scope
}

func (e *memEntry) size() int64 { return int64(len(e.key)+len(e.value)) + entryOverhead }

// Get returns a copy of the value under key, if present and not expired.
func (m *Memory) Get(_ context.Context, key string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.items[key]
	if ok {
		e := el.Value.(*memEntry)
		if !e.expires.IsZero() && !m.now().Before(e.expires) {
			m.removeLocked(el)
			ok = false
		} else {
			e.part.ll.MoveToFront(el)
			m.record(true)
			return append([]byte(nil), e.value...), true
		}
	}
	m.record(false)
	return nil, false
}

// Set stores a copy of value; ttl <= 0 means no expiry. A value larger than
// the whole cache is not stored. When the cache is full, the least
// recently used entries of the largest scope go first.
func (m *Memory) Set(ctx context.Context, key string, value []byte, ttl time.Duration) {
	m.SetOwned(ctx, key, append([]byte(nil), value...), ttl)
}

// SetOwned is Set for a value the caller hands over rather than lends: it
// is kept as it is, not copied, and the caller must not change it
// afterwards (condense's originals, made for the cache, megabytes each).
func (m *Memory) SetOwned(_ context.Context, key string, value []byte, ttl time.Duration) {
	e := &memEntry{key: key, value: value}
	if ttl > 0 {
		e.expires = m.now().Add(ttl)
	}
	scope := ""
	if m.scopeOf != nil {
		scope = m.scopeOf(key)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.items[key]; ok {
		m.removeLocked(old)
	}
	if e.size() > m.maxBytes {
		return
	}
	p := m.parts[scope]
	if p == nil {
		p = &partition{scope: strings.Clone(scope)}
		m.parts[p.scope] = p
		heap.Push(&m.heap, p)
	}
	e.part = p
	m.items[key] = p.ll.PushFront(e)
	p.bytes += e.size()
	heap.Fix(&m.heap, p.index)
	m.bytes += e.size()
	for m.bytes > m.maxBytes {
		m.removeLocked(m.heap[0].ll.Back())
	}
}

// Add stores value under key unless the key holds a live value, and
// returns the value held afterwards (the first writer's). ok is always
// true.
func (m *Memory) Add(ctx context.Context, key string, value []byte, ttl time.Duration) (stored []byte, ok bool) {
	m.addMu.Lock()
	defer m.addMu.Unlock()
	if v, ok := m.Get(ctx, key); ok {
		return v, true
	}
	m.Set(ctx, key, value, ttl)
	return value, true
}

// Swap sets key to value when it holds old (nil: when it is absent);
// otherwise it returns what the key holds (nil when absent). Never an
// error: the memory is always there.
func (m *Memory) Swap(ctx context.Context, key string, old, value []byte, ttl time.Duration) (current []byte, swapped bool, err error) {
	m.addMu.Lock()
	defer m.addMu.Unlock()
	cur, ok := m.Get(ctx, key)
	if (old == nil && !ok) || (old != nil && ok && bytes.Equal(cur, old)) {
		m.Set(ctx, key, value, ttl)
		return value, true, nil
	}
	return cur, false, nil
}

// Delete removes key.
func (m *Memory) Delete(_ context.Context, key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.items[key]; ok {
		m.removeLocked(el)
	}
}

func (m *Memory) removeLocked(el *list.Element) {
	e := el.Value.(*memEntry)
	p := e.part
	p.ll.Remove(el)
	delete(m.items, e.key)
	m.bytes -= e.size()
	p.bytes -= e.size()
	if p.ll.Len() == 0 {
		heap.Remove(&m.heap, p.index)
		delete(m.parts, p.scope)
		return
	}
	heap.Fix(&m.heap, p.index)
}

// Ping always succeeds.
func (m *Memory) Ping(context.Context) error { return nil }

// Stats returns the hit and miss counts.
func (m *Memory) Stats() Stats { return m.counters.stats() }

// Bytes returns the bytes currently held.
func (m *Memory) Bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes
}

// ScopeBytes returns the bytes currently held for scope.
func (m *Memory) ScopeBytes(scope string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.parts[scope]; p != nil {
		return p.bytes
	}
	return 0
}

// partHeap orders the partitions by bytes, largest first
// (container/heap).
type partHeap []*partition

func (h partHeap) Len() int           { return len(h) }
func (h partHeap) Less(i, j int) bool { return h[i].bytes > h[j].bytes }
func (h partHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *partHeap) Push(x any) {
	p := x.(*partition)
	p.index = len(*h)
	*h = append(*h, p)
}
func (h *partHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return p
}
