// Package memory is condense-proxy's conversation memory: every step the
// engine condensed out of a conversation and every summary it made (each
// level), with its text, kept per caller (scope) and conversation, and
// searched with BM25 in process.
//
// Data flows in from the engine (package condense calls Add — Memory
// satisfies condense.Memory — whenever it summarizes, windows or digests)
// and out to the proxy's recall tool (Recall) and the engine's
// relevant-context block (Relevant).
//
// Storage. A conversation's memory is a chain of immutable slots in the
// cache (package cache's stores: Redis when configured, shared by every
// replica; memory otherwise): slot n holds one batch of items, written
// set-if-absent, so two replicas adding at once take consecutive slots
// and nothing is lost or overwritten. Readers read the slots from the
// last one they know on until the first missing one. Each slot lives
// TTL (originals_ttl). A replica keeps the conversations it read lately
// in memory (MaxConversations, least recently used dropped), with their
// BM25 index.
//
// Bounds: a step's text is cut at 32 KiB by the engine; a conversation
// holds at most MaxItems items and MaxBytes bytes of text (what comes
// after is not kept); the store's own bounds (memory.max_bytes without
// Redis, Redis's memory with it) and the TTL bound it overall. Without
// Redis the store is kept per caller (cache.NewScopedMemory): one caller's
// conversations push out its own oldest slots, never another caller's.
//
// A Memory is safe for concurrent use.
package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
)

// Store is what the memory needs of a cache (package cache's stores
// satisfy it): reads, and writes that keep the first value written.
type Store interface {
	Get(ctx context.Context, key string) ([]byte, bool)
	// Add stores value under key unless the key holds one, and returns
	// the value held afterwards (false: the store could not answer).
	Add(ctx context.Context, key string, value []byte, ttl time.Duration) ([]byte, bool)
}

// Options configures a Memory. Zero values pick the defaults.
type Options struct {
	// TTL is how long a slot is kept. Default 24h (originals_ttl).
	TTL time.Duration
	// MaxItems bounds the items of one conversation. Default 4096.
	MaxItems int
	// MaxBytes bounds the text of one conversation. Default 8 MiB.
	MaxBytes int
	// MaxConversations bounds the conversations a replica keeps read in
	// memory. Default 1000.
	MaxConversations int
	// Count counts a text's tokens (recall answers and the
	// relevant-context block are bounded in tokens). Default len/4.
	Count func(string) int
	// Logger; nil: slog.Default().
	Logger *slog.Logger
	// Embedder and EmbeddingModel, both set, make searches hybrid
	// (embed.go). Default: BM25 alone.
	Embedder       Embedder
	EmbeddingModel string
}

func (o *Options) defaults() {
	if o.TTL <= 0 {
		o.TTL = 24 * time.Hour
	}
	if o.MaxItems <= 0 {
		o.MaxItems = 4096
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 8 << 20
	}
	if o.MaxConversations <= 0 {
		o.MaxConversations = 1000
	}
	if o.Count == nil {
		o.Count = func(s string) int { return (len(s) + 3) / 4 }
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// maxSlots bounds the chain of one conversation (a guard: MaxItems is
// reached long before).
const maxSlots = 20000

// Memory keeps and searches conversations' memories.
type Memory struct {
	store Store
	opts  Options

	mu    sync.Mutex
	convs map[string]*conv
	order []string // least recently used first
}

var _ condense.Memory = (*Memory)(nil)

// New returns a Memory over store.
func New(store Store, o Options) *Memory {
	o.defaults()
	return &Memory{store: store, opts: o, convs: map[string]*conv{}}
}

// conv is what a replica knows of one conversation's memory.
type conv struct {
	mu    sync.Mutex
	next  int // first slot not read yet
	items []condense.MemoryItem
	byID  map[string]int // id -> index in items
	bytes int
	full  bool // a bound was reached; later items are dropped
	ix    *index
	vecs  map[string][]float32 // embeddings read or made, by key
}

// slotKey follows package cache's "kind:scope:rest" convention
// (cache.KindScope), so a store bounded per scope keeps callers apart.
func slotKey(scope, conversation string, n int) string {
	return "mem:" + scope + ":" + conversation + ":" + strconv.Itoa(n)
}

// get returns the replica's record of a conversation (made when absent).
func (m *Memory) get(scope, conversation string) *conv {
	key := scope + "\x00" + conversation
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.convs[key]
	if ok {
		if i := slices.Index(m.order, key); i >= 0 {
			m.order = append(m.order[:i], m.order[i+1:]...)
		}
	} else {
		c = &conv{byID: map[string]int{}}
		m.convs[key] = c
		for len(m.order) >= m.opts.MaxConversations {
			delete(m.convs, m.order[0])
			m.order = m.order[1:]
		}
	}
	m.order = append(m.order, key)
	return c
}

// batch is one slot's value.
type batch struct {
	Items []condense.MemoryItem `json:"items"`
}

// apply merges items into c: a new id is appended (within the bounds),
// a known one gains the refs it lacked.
func (m *Memory) apply(c *conv, items []condense.MemoryItem) (added []condense.MemoryItem) {
	for _, it := range items {
		if i, ok := c.byID[it.ID]; ok {
			have := &c.items[i]
			for _, r := range it.Refs {
				if !slices.Contains(have.Refs, r) {
					have.Refs = append(have.Refs, r)
					added = append(added, it)
					c.ix = nil
				}
			}
			continue
		}
		if len(c.items) >= m.opts.MaxItems || c.bytes+len(it.Text) > m.opts.MaxBytes {
			c.full = true
			continue
		}
		c.byID[it.ID] = len(c.items)
		c.items = append(c.items, it)
		c.bytes += len(it.Text)
		c.ix = nil
		added = append(added, it)
	}
	return added
}

// refresh reads the slots the replica has not read yet. Called with c.mu
// held.
func (m *Memory) refresh(ctx context.Context, scope, conversation string, c *conv) {
	for c.next < maxSlots {
		v, ok := m.store.Get(ctx, slotKey(scope, conversation, c.next))
		if !ok {
			return
		}
		m.applySlot(c, v)
		c.next++
	}
}

func (m *Memory) applySlot(c *conv, v []byte) {
	var b batch
	if err := json.Unmarshal(v, &b); err != nil {
		m.opts.Logger.Warn("memory: unreadable slot skipped", "err", err)
		return
	}
	m.apply(c, b.Items)
}

// Add implements condense.Memory: the items the conversation's memory
// lacks (new ids, or new refs of known ones) are written as one slot.
func (m *Memory) Add(ctx context.Context, scope, conversation string, items []condense.MemoryItem) {
	if len(items) == 0 || conversation == "" {
		return
	}
	c := m.get(scope, conversation)
	c.mu.Lock()
	defer c.mu.Unlock()
	m.refresh(ctx, scope, conversation, c)
	// What is new to the conversation, as known after reading.
	var fresh []condense.MemoryItem
	for _, it := range items {
		i, ok := c.byID[it.ID]
		if !ok {
			if c.full {
				continue
			}
			fresh = append(fresh, it)
			continue
		}
		var refs []string
		for _, r := range it.Refs {
			if !slices.Contains(c.items[i].Refs, r) {
				refs = append(refs, r)
			}
		}
		if len(refs) > 0 {
			// The text is known: the slot carries only the new refs.
			fresh = append(fresh, condense.MemoryItem{ID: it.ID, Kind: it.Kind, Level: it.Level, Refs: refs, From: it.From, To: it.To})
		}
	}
	if len(fresh) == 0 {
		return
	}
	v, err := json.Marshal(batch{Items: fresh})
	if err != nil {
		m.opts.Logger.Warn("memory: encoding items", "err", err)
		return
	}
	for c.next < maxSlots {
		stored, ok := m.store.Add(ctx, slotKey(scope, conversation, c.next), v, m.opts.TTL)
		if !ok {
			// The store could not answer: kept by this replica only.
			m.apply(c, fresh)
			return
		}
		c.next++
		m.applySlot(c, stored)
		if string(stored) == string(v) {
			return
		}
		// Another replica took that slot: try the next.
	}
}

// Items returns a copy of the conversation's memory, oldest first.
func (m *Memory) Items(ctx context.Context, scope, conversation string) []condense.MemoryItem {
	c := m.get(scope, conversation)
	c.mu.Lock()
	defer c.mu.Unlock()
	m.refresh(ctx, scope, conversation, c)
	return slices.Clone(c.items)
}

// Hit is one search result.
type Hit struct {
	Item  condense.MemoryItem
	Score float64
}

// Search returns the items of the conversation's memory that best match
// query, best first, at most k: BM25's ranking, fused with the
// embeddings' when an embedding model is configured (creds are the
// caller's own, for the embeddings call; never kept).
func (m *Memory) Search(ctx context.Context, scope, conversation, query string, k int, creds http.Header) []Hit {
	c := m.get(scope, conversation)
	c.mu.Lock()
	defer c.mu.Unlock()
	m.refresh(ctx, scope, conversation, c)
	if c.ix == nil {
		texts := make([]string, len(c.items))
		for i, it := range c.items {
			texts[i] = it.Text
		}
		c.ix = newIndex(texts)
	}
	// A summary derives from its steps: where a step it covers matches
	// about as well, the step is the better answer (it holds the fact
	// itself) and the summary gives way.
	all := c.ix.search(indexTerms(query), len(c.items))
	if m.opts.Embedder != nil && m.opts.EmbeddingModel != "" && strings.TrimSpace(query) != "" {
		all = m.fuse(ctx, scope, c, query, all, creds)
	}
	var out []Hit
	for _, s := range all {
		it := c.items[s.doc]
		if it.Kind == condense.MemorySummary && stepCovers(c.items, all, it, s.score/2) {
			continue
		}
		out = append(out, Hit{Item: it, Score: s.score})
		if len(out) == k {
			break
		}
	}
	return out
}

// stepCovers reports whether a step inside summary sum's range scored at
// least min.
func stepCovers(items []condense.MemoryItem, scores []scored, sum condense.MemoryItem, min float64) bool {
	for _, s := range scores {
		it := items[s.doc]
		if s.score >= min && it.Kind == condense.MemoryStep && sum.From <= it.From && it.To <= sum.To {
			return true
		}
	}
	return false
}

// Lookup returns the items of the conversation's memory an id names: the
// item with that id, or the steps a summary, window marker or digest of
// that id stands for (oldest first).
func (m *Memory) Lookup(ctx context.Context, scope, conversation, id string) []condense.MemoryItem {
	c := m.get(scope, conversation)
	c.mu.Lock()
	defer c.mu.Unlock()
	m.refresh(ctx, scope, conversation, c)
	if i, ok := c.byID[id]; ok {
		it := c.items[i]
		if it.Kind != condense.MemorySummary {
			return []condense.MemoryItem{it}
		}
	}
	var out []condense.MemoryItem
	for _, it := range c.items {
		if it.Kind == condense.MemoryStep && slices.Contains(it.Refs, id) {
			out = append(out, it)
		}
	}
	if len(out) == 0 {
		if i, ok := c.byID[id]; ok {
			out = append(out, c.items[i])
		}
	}
	if len(out) == 0 && len(id) >= ShortIDLen {
		// A step by the start of its id, as the relevant-context block
		// names steps: when one step alone has it.
		for _, it := range c.items {
			if it.Kind == condense.MemoryStep && strings.HasPrefix(it.ID, id) {
				if len(out) == 1 {
					return nil
				}
				out = append(out, it)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b condense.MemoryItem) int { return a.From - b.From })
	return out
}

// ShortIDLen is how much of a step's id the relevant-context block shows
// (48 bits: a conversation's 4,096 items at most never share one by
// chance, in practice); Lookup finds a step by it.
const ShortIDLen = 12

// shortID is the start of id the relevant-context block names a step by.
func shortID(id string) string { return id[:min(len(id), ShortIDLen)] }

// String describes an item's place for a recall answer.
func describe(it condense.MemoryItem) string {
	where := fmt.Sprintf("messages %d-%d", it.From, it.To-1)
	if it.Kind == condense.MemorySummary {
		return fmt.Sprintf("summary (level %d) of %s", it.Level, where)
	}
	return "step, " + where
}
