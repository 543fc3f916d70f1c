package condense

import (
	"container/list"
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

// record keeps cur as the latest request of key and returns the one it
// replaces (false: none known).
func (p *prefixLog) record(key string, cur prefixEntry) (prefixEntry, bool) {
	cur.key = key
	sh := &p.shards[xxhash.Sum64String(key)%prefixShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	el, ok := sh.byKey[key]
	if !ok {
		sh.byKey[key] = sh.ll.PushFront(&cur)
		if sh.ll.Len() > sh.max {
			old := sh.ll.Back()
			sh.ll.Remove(old)
			delete(sh.byKey, old.Value.(*prefixEntry).key)
		}
		return prefixEntry{}, false
	}
	prev := el.Value.(*prefixEntry)
	cur.billed += prev.billed
	cur.spent += prev.spent
	el.Value = &cur
	sh.ll.MoveToFront(el)
	return *prev, true
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

// totals returns the conversation's uncondensed bill and summarizer
// spending so far (0, 0: none known).
func (p *prefixLog) totals(key string) (billed, spent float64) {
	sh := &p.shards[xxhash.Sum64String(key)%prefixShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if el, ok := sh.byKey[key]; ok {
		e := el.Value.(*prefixEntry)
		return e.billed, e.spent
	}
	return 0, 0
}

// addBilled adds a request's uncondensed bill to the conversation's
// latest entry.
func (p *prefixLog) addBilled(key string, bill float64) {
	sh := &p.shards[xxhash.Sum64String(key)%prefixShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if el, ok := sh.byKey[key]; ok {
		el.Value.(*prefixEntry).billed += bill
	}
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
