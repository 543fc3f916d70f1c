package condense

import (
	"container/list"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// prefixLog remembers, per caller and conversation, the shape of the last
// request forwarded (a hash and a count per item, the hash the scan made,
// and a hash of every byte outside the items), when it was forwarded and
// how large it was as received, so the next one can say how many of its
// leading tokens were identical — what a provider's prompt cache can
// serve, if it is still alive — and what the request would have cost
// uncondensed. Bounded: the
// least recently seen conversations are forgotten. Safe for concurrent
// use; the lock is sharded by key so conversations do not wait on each
// other.
type prefixLog struct {
	shards [prefixShards]prefixShard
}

const prefixShards = 16

type prefixShard struct {
	mu    sync.Mutex
	max   int
	ll    *list.List
	byKey map[string]*list.Element
}

type prefixEntry struct {
	key      string
	outside  uint64 // hash of the body outside the items array
	overhead int    // tokens outside the items
	items    []itemSum
	// at is when the request was forwarded; received its raw tokens as
	// the agent sent it.
	at       time.Time
	received int
	// billed and spent are the conversation's totals so far: its bill
	// uncondensed and its summarizer spending (estimated, in units of the
	// input price); record adds the previous entry's to the new one's.
	billed, spent float64
	// condensed: a condensed request of the conversation was forwarded
	// (this one or an earlier one); from then on every request carries
	// the recall tool (Options.RecallTool).
	condensed bool
	// warm is when a keep-alive ping last read the conversation's cache
	// (Engine.Warmed), without a cache only: with one, it is kept apart
	// (cold.go). Not encoded.
	warm time.Time
}

type itemSum struct {
	hash   uint64
	tokens int
}

func newPrefixLog(max int) *prefixLog {
	p := &prefixLog{}
	for i := range p.shards {
		p.shards[i] = prefixShard{max: max/prefixShards + 1, ll: list.New(), byKey: map[string]*list.Element{}}
	}
	return p
}

// summarizeForPrefix describes a forwarded request for the log.
func summarizeForPrefix(r *view.Request) prefixEntry {
	e := prefixEntry{items: make([]itemSum, len(r.Items)), overhead: r.Total}
	for i, it := range r.Items {
		h := it.Hash // the scan's: the body is not hashed again
		if h == 0 {
			h = tokenizer.ItemHash(r.Raw(i))
		}
		e.items[i] = itemSum{h, it.Tokens}
		e.overhead -= it.Tokens
	}
	if r.Array[1] > 0 {
		h := xxhash.New()
		h.Write(r.Body[:r.Array[0]])
		h.Write([]byte{0})
		h.Write(r.Body[r.Array[1]:])
		e.outside = h.Sum64()
	}
	return e
}

// put keeps cur as the latest request of key.
func (p *prefixLog) put(key string, cur prefixEntry) {
	cur.key = key
	sh := &p.shards[xxhash.Sum64String(key)%prefixShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if el, ok := sh.byKey[key]; ok {
		el.Value = &cur
		sh.ll.MoveToFront(el)
		return
	}
	sh.byKey[key] = sh.ll.PushFront(&cur)
	if sh.ll.Len() > sh.max {
		old := sh.ll.Back()
		sh.ll.Remove(old)
		delete(sh.byKey, old.Value.(*prefixEntry).key)
	}
}

// latest returns the conversation's request forwarded last (false: none
// known).
func (p *prefixLog) latest(key string) (prefixEntry, bool) {
	sh := &p.shards[xxhash.Sum64String(key)%prefixShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if el, ok := sh.byKey[key]; ok {
		return *el.Value.(*prefixEntry), true
	}
	return prefixEntry{}, false
}

// warm records that key's cache was read at at (Engine.Warmed): nothing
// when key is not known.
func (p *prefixLog) warm(key string, at time.Time) {
	sh := &p.shards[xxhash.Sum64String(key)%prefixShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if el, ok := sh.byKey[key]; ok {
		if e := el.Value.(*prefixEntry); at.After(e.warm) {
			e.warm = at
		}
	}
}

// take returns key's entry and forgets it (false: none known).
func (p *prefixLog) take(key string) (prefixEntry, bool) {
	sh := &p.shards[xxhash.Sum64String(key)%prefixShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	el, ok := sh.byKey[key]
	if !ok {
		return prefixEntry{}, false
	}
	sh.ll.Remove(el)
	delete(sh.byKey, key)
	return *el.Value.(*prefixEntry), true
}

// The prefix records are the conversation's state: with a cache, they
// live in it — every replica, and a restarted one, reads the record the
// last request of the conversation left, whichever replica forwarded it
// (read with Currenter, never from a copy this process kept) — and in
// the process's own bounded log without one.

// prefixKey names a conversation's prefix record in the cache.
func prefixKey(key string) string { return "prefix:" + key }

// prefixOf returns the record of key (false: none known).
func (e *Engine) prefixOf(ctx context.Context, key string) (prefixEntry, bool) {
	if e.cache == nil {
		return e.prefixes.latest(key)
	}
	v, ok := e.getState(ctx, prefixKey(key))
	if !ok || len(v) == 0 {
		return prefixEntry{}, false
	}
	p, err := decodePrefix(v)
	if err != nil {
		e.log.Warn("a conversation's prefix record could not be read; taken as unknown", "err", err)
		return prefixEntry{}, false
	}
	return p, true
}

// putPrefix makes cur the record of key.
func (e *Engine) putPrefix(ctx context.Context, key string, cur prefixEntry) {
	if e.cache == nil {
		e.prefixes.put(key, cur)
		return
	}
	e.cache.Set(context.WithoutCancel(ctx), prefixKey(key), encodePrefix(cur), e.prefixTTL())
}

// takePrefix returns the record of key and forgets it (false: none).
func (e *Engine) takePrefix(ctx context.Context, key string) (prefixEntry, bool) {
	if e.cache == nil {
		return e.prefixes.take(key)
	}
	p, ok := e.prefixOf(ctx, key)
	if ok {
		e.cache.Set(context.WithoutCancel(ctx), prefixKey(key), nil, time.Minute) // taken
	}
	return p, ok
}

// prefixTTL is how long a conversation's prefix record is kept: as long
// as what condensing made of it.
func (e *Engine) prefixTTL() time.Duration { return e.opts.OriginalsTTL }

// prefixVersion opens an encoded record; a record of an unknown version
// is taken as unknown (one request of a conversation priced as its
// first). Version 2 added the flags (condensed) after the items; a
// version 1 record reads as not condensed.
const prefixVersion = 2

// encodePrefix writes p as bytes: the version, then varints.
func encodePrefix(p prefixEntry) []byte {
	b := make([]byte, 0, 64+len(p.items)*14)
	b = binary.AppendUvarint(b, prefixVersion)
	b = binary.LittleEndian.AppendUint64(b, p.outside)
	b = binary.AppendVarint(b, int64(p.overhead))
	b = binary.AppendVarint(b, p.at.UnixNano())
	b = binary.AppendVarint(b, int64(p.received))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.billed))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.spent))
	b = binary.AppendUvarint(b, uint64(len(p.items)))
	for _, it := range p.items {
		b = binary.LittleEndian.AppendUint64(b, it.hash)
		b = binary.AppendVarint(b, int64(it.tokens))
	}
	var flags uint64
	if p.condensed {
		flags |= prefixCondensed
	}
	return binary.AppendUvarint(b, flags)
}

// Flags of a prefix record.
const prefixCondensed = 1

var errPrefixRecord = errors.New("malformed prefix record")

// decodePrefix reads what encodePrefix wrote.
func decodePrefix(b []byte) (prefixEntry, error) {
	var p prefixEntry
	r := prefixReader{b: b}
	v := r.uvarint()
	if v != 1 && v != prefixVersion {
		return p, fmt.Errorf("%w: version %d", errPrefixRecord, v)
	}
	p.outside = r.u64()
	p.overhead = int(r.varint())
	p.at = time.Unix(0, r.varint())
	p.received = int(r.varint())
	p.billed = math.Float64frombits(r.u64())
	p.spent = math.Float64frombits(r.u64())
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)) { // each item takes 9 bytes at least
		r.err = errPrefixRecord
	}
	if r.err == nil {
		p.items = make([]itemSum, n)
		for i := range p.items {
			p.items[i] = itemSum{hash: r.u64(), tokens: int(r.varint())}
		}
	}
	if r.err == nil && v >= 2 {
		p.condensed = r.uvarint()&prefixCondensed != 0
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d bytes left over", errPrefixRecord, len(r.b))
	}
	return p, r.err
}

type prefixReader struct {
	b   []byte
	err error
}

func (r *prefixReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errPrefixRecord
		return 0
	}
	r.b = r.b[n:]
	return v
}

// varint reads a signed varint: a uvarint, zig-zag encoded (as
// binary.Varint reads it).
func (r *prefixReader) varint() int64 {
	ux := r.uvarint()
	return int64(ux>>1) ^ -int64(ux&1)
}

func (r *prefixReader) u64() uint64 {
	if r.err != nil || len(r.b) < 8 {
		r.err = errPrefixRecord
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

// sharedPrefix is how many leading tokens cur shares with prev: the parts
// outside the items (system, tools) when identical, then the identical
// leading items.
func sharedPrefix(prev, cur prefixEntry) int {
	if prev.outside != cur.outside {
		return 0
	}
	n := min(prev.overhead, cur.overhead)
	for i := 0; i < len(prev.items) && i < len(cur.items) && prev.items[i] == cur.items[i]; i++ {
		n += cur.items[i].tokens
	}
	return n
}
