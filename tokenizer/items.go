package tokenizer

import (
	"fmt"
	"hash/maphash"
)

// itemSeed seeds ItemHash: one seed for the process, so that the same
// bytes hash the same whichever Counter or request they come from.
var itemSeed = maphash.MakeSeed()

// ItemHash is the hash of an item's raw JSON (a message, an input item)
// that keys the per-item count cache. The same bytes hash the same
// throughout the process, so the items of two requests can be compared by
// it (the engine's prefix log does); it differs from one process to the
// next.
func ItemHash(raw string) uint64 { return maphash.String(itemSeed, raw) }

// itemKeys is the base of the count cache's keys of the items of kind
// counted with encoding: an item's key is the base xor its ItemHash.
func (c *Counter) itemKeys(encoding, kind string) uint64 {
	// A codec asks for the same base once per item: the last one is kept.
	if last := c.lastKeys.Load(); last != nil && last.encoding == encoding && last.kind == kind {
		return last.base
	}
	var h maphash.Hash
	c.keyOf(&h, encoding, kind)
	base := h.Sum64()
	c.lastKeys.Store(&itemKeyBase{encoding: encoding, kind: kind, base: base})
	return base
}

// itemKeyBase is an itemKeys result.
type itemKeyBase struct {
	encoding, kind string
	base           uint64
}

// keyOf starts h as a key of the count cache: the counter's seed, the
// encoding and the kind of what is counted.
func (c *Counter) keyOf(h *maphash.Hash, encoding, kind string) {
	h.SetSeed(c.seed)
	h.WriteString(encoding)
	h.WriteByte(0)
	h.WriteString(kind)
	h.WriteByte(0)
}

// Cached returns the count of an item of a request given as raw JSON,
// from the per-item cache keyed by kind and those bytes, calling count on
// a miss. hit reports a cache hit. Codecs use it so a resent history is
// not counted again.
func (c *Counter) Cached(encoding, kind, raw string, count func() int) (n int, hit bool) {
	return c.CachedHash(encoding, kind, ItemHash(raw), count)
}

// CachedHash is Cached for an item whose ItemHash is h.
func (c *Counter) CachedHash(encoding, kind string, h uint64, count func() int) (n int, hit bool) {
	key := c.itemKeys(encoding, kind) ^ h
	if n, ok := c.items.get(key); ok {
		return n, true
	}
	n = count()
	c.items.put(key, n)
	return n, false
}

// Lookup finds the cached counts of n items of kind, item i's ItemHash
// being hash(i), all under one lock of the cache: found(i, tokens) is
// called for each item found. The others are for CachedHash, which counts
// them (an item repeated in the request is then found on its second
// look-up, as with Cached alone).
func (c *Counter) Lookup(encoding, kind string, n int, hash func(i int) uint64, found func(i, tokens int)) {
	base := c.itemKeys(encoding, kind)
	c.items.mu.Lock()
	defer c.items.mu.Unlock()
	for i := 0; i < n; i++ {
		if tokens, ok := c.items.getLocked(base ^ hash(i)); ok {
			found(i, tokens)
		}
	}
}

// CheckItems returns ErrTooManyMessages when n is over the Counter's
// message limit.
func (c *Counter) CheckItems(n int) error {
	if c.maxMessages > 0 && n > c.maxMessages {
		return fmt.Errorf("%w: %d, limit %d", ErrTooManyMessages, n, c.maxMessages)
	}
	return nil
}

// Batch counts the items a Lookup did not find, one request's in turn:
// each is counted and cached, but an item of the same hash as one the
// batch counted before takes its count (as the cache would give it)
// without a look-up of the shared cache — the items Lookup missed are
// known to be missing, and those a request repeats (the same short
// answer a thousand times) are found in the batch's own small table.
type Batch struct {
	c    *Counter
	base uint64
	memo []batchEntry // direct-mapped by hash
}

type batchEntry struct {
	h    uint64
	n    int32
	used bool
}

// Batch returns a Batch for up to n items of kind counted with encoding.
func (c *Counter) Batch(encoding, kind string, n int) *Batch {
	size := 16
	for size < n && size < 4096 {
		size *= 2
	}
	return &Batch{c: c, base: c.itemKeys(encoding, kind), memo: make([]batchEntry, size)}
}

// Count returns the count of the item of ItemHash h that Lookup did not
// find: the batch's when it counted an item of that hash (hit), else
// count's, cached.
func (b *Batch) Count(h uint64, count func() int) (n int, hit bool) {
	e := &b.memo[h&uint64(len(b.memo)-1)]
	if e.used && e.h == h {
		return int(e.n), true
	}
	n = count()
	b.c.items.put(b.base^h, n)
	if n == int(int32(n)) {
		*e = batchEntry{h: h, n: int32(n), used: true}
	}
	return n, false
}
