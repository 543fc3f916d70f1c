package cache

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// entryOverhead approximates the bookkeeping bytes of one entry.
const entryOverhead = 96

// Memory is an LRU cache bounded by the bytes of its keys and values.
// Values are copied in and out, so callers may reuse their slices.
type Memory struct {
	maxBytes int64
	now      func() time.Time

	addMu sync.Mutex // serializes Add (Get then Set)
	mu    sync.Mutex
	bytes int64
	ll    *list.List // front: most recently used
	items map[string]*list.Element

	counters
}

type memEntry struct {
	key     string
	value   []byte
	expires time.Time // zero: never
}

// NewMemory returns a Memory holding at most maxBytes (at least 1 KiB).
func NewMemory(maxBytes int64) *Memory {
	return &Memory{maxBytes: max(maxBytes, 1024), now: time.Now, ll: list.New(), items: make(map[string]*list.Element)}
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
			m.ll.MoveToFront(el)
			m.record(true)
			return append([]byte(nil), e.value...), true
		}
	}
	m.record(false)
	return nil, false
}

// Set stores a copy of value; ttl <= 0 means no expiry. A value larger than
// the whole cache is not stored.
func (m *Memory) Set(_ context.Context, key string, value []byte, ttl time.Duration) {
	e := &memEntry{key: key, value: append([]byte(nil), value...)}
	if ttl > 0 {
		e.expires = m.now().Add(ttl)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.items[key]; ok {
		m.removeLocked(old)
	}
	if e.size() > m.maxBytes {
		return
	}
	m.items[key] = m.ll.PushFront(e)
	m.bytes += e.size()
	for m.bytes > m.maxBytes {
		m.removeLocked(m.ll.Back())
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
	m.ll.Remove(el)
	delete(m.items, e.key)
	m.bytes -= e.size()
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
